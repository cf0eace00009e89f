"""Admission of links by predicted memory: the pure rules, the ledger, and real GNU ld links in real
memory cgroups (v1 here), through the real linkwrap-cc script."""
import os
import select
import signal
import subprocess
import sys
import time

import pytest

from linkwrap.choice import admission

from linkwrap.evidence import predict
from linkwrap.choice.admission import RUN, WAIT, room_kb, verdict

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from conftest import script  # noqa: E402
from linkrecords import db_rows, summary_json  # noqa: E402
import memgroup  # noqa: E402

MIB = 1024


# --- the pure rules ---------------------------------------------------------------

def test_a_link_that_fits_runs():
    assert verdict(1, 100 * MIB, [2], [1], 200 * MIB, 0.0, 300) == (RUN, None)


def test_a_link_that_does_not_fit_waits_while_another_runs():
    assert verdict(1, 300 * MIB, [2], [1], 200 * MIB, 5.0, 300) == (WAIT, None)


def test_a_link_always_runs_when_no_other_link_runs_and_says_so():
    action, note = verdict(1, 900 * MIB, [], [1], 200 * MIB, 0.0, 300)
    assert action == RUN and note == "ran alone: predicted 900 MiB above the room of 200 MiB"
    assert verdict(1, 900 * MIB, [], [1], None, 0.0, 300) == (RUN, "ran alone: the room is unknown")


def test_the_oldest_waiting_link_goes_first_even_when_a_younger_one_would_fit():
    # 2 waits at the head for more room; 3 would fit, but it waits behind 2.
    assert verdict(3, 10 * MIB, [1], [2, 3], 200 * MIB, 1.0, 300) == (WAIT, None)
    assert verdict(2, 10 * MIB, [1], [2, 3], 200 * MIB, 1.0, 300) == (RUN, None)
    # Nothing running: only the head runs alone; the next one waits for it to be admitted.
    assert verdict(3, 10 * MIB, [], [2, 3], 200 * MIB, 1.0, 300) == (WAIT, None)


def test_a_wait_is_bounded_and_the_bound_is_said():
    assert verdict(3, 900 * MIB, [1], [2, 3], 0, 300.0, 300) == \
        (RUN, "waited the 300 s bound for memory; ran anyway")


def test_room_is_the_tighter_free_memory_less_headroom_and_what_running_links_still_need():
    # limit 1000, 400 used: 600 free; MemAvailable 5000; headroom 64; two running links still need 100 and 50
    assert room_kb(1000, 400, 5000, 64, [100, 50]) == 600 - 64 - 150
    assert room_kb(None, None, 700, 64, []) == 636                   # no limit: MemAvailable
    assert room_kb(1000, 100, 300, 0, []) == 300                     # the machine is tighter than the group
    assert room_kb(None, None, None, 64, [10]) is None


def test_admission_is_on_by_default_only_under_a_memory_limit():
    class Facts:
        def __init__(self, limit):
            self.mem_limit_mb = limit

    class Settings:
        def __init__(self, setting):
            self.memory = {"admission": setting}

    assert admission.enabled(Settings(None), Facts(512)) is True
    assert admission.enabled(Settings(None), Facts(None)) is False
    assert admission.enabled(Settings(False), Facts(512)) is False
    assert admission.enabled(Settings(True), Facts(None)) is True
    assert admission.enabled(None, None) is False


# --- the ledger ---------------------------------------------------------------------

def test_the_ledger_is_private_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        with admission.Ledger(str(tmp_path)) as ledger:
            ledger.save({"format": admission.FORMAT, "running": {}, "waiting": []})
    finally:
        os.umask(old)
    assert os.stat(tmp_path / admission.LEDGER).st_mode & 0o777 == 0o600


def test_the_ledger_never_follows_a_symlink(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    os.symlink(target, tmp_path / admission.LEDGER)
    with pytest.raises(OSError):
        with admission.Ledger(str(tmp_path)):
            pass
    assert target.read_text() == "keep"


def test_another_users_ledger_is_not_used(tmp_path):
    path = tmp_path / admission.LEDGER
    path.write_bytes(b"")
    os.chown(path, 65534, 65534)
    with pytest.raises(PermissionError):
        with admission.Ledger(str(tmp_path)):
            pass


def test_a_process_is_known_by_pid_and_start_time():
    me = os.getpid()
    assert admission.alive(me, admission.start_ticks(me))
    assert not admission.alive(me, admission.start_ticks(me) + 1)   # the pid reused by another process
    done = subprocess.Popen(["true"])
    ticks = admission.start_ticks(done.pid)
    done.wait()
    assert not admission.alive(done.pid, ticks)


# --- real links -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def heavy(tmp_path_factory):
    """Objects whose GNU ld link is mostly heap, and that link's charge measured in a fresh group."""
    d = tmp_path_factory.mktemp("heavy")
    objects = memgroup.heavy_objects(d)
    with memgroup.memory_cgroup() as group:
        done = group.run(["cc", "-fuse-ld=bfd", *objects, "-o", "calibrate"], cwd=d, capture_output=True)
        assert done.returncode == 0, done.stderr
        single_kb = group.peak_kb()
    assert single_kb > 48 * MIB, f"the calibration link charged only {single_kb} KiB"
    return d, objects, single_kb


def _together(group, cwd, objects, n, env=None):
    """n concurrent links through linkwrap-cc inside group; -> their exit statuses."""
    cc = script("linkwrap-cc")
    outputs = [f"out{i}" for i in range(n)]
    lines = [f'"{cc}" -fuse-ld=bfd {" ".join(objects)} -o {o} & p{i}=$!' for i, o in enumerate(outputs)]
    waits = [f'wait $p{i}; echo $?' for i in range(n)]
    done = group.run(["sh", "-c", "\n".join(lines + waits)], cwd=cwd, capture_output=True, text=True,
                     env={**os.environ, **(env or {})})
    return [int(x) for x in done.stdout.split()], outputs, done.stderr


def _fresh(tmp_path, heavy, name):
    d = tmp_path / name
    d.mkdir()
    return d


N_LINKS = 3


def test_concurrent_links_over_the_limit_are_oom_killed_without_admission(tmp_path, lw_home, heavy, monkeypatch):
    # Through the driver: a failed direct start is linked again through the driver (direct.py), which
    # can succeed once the other link has gone, and the record would not show the kill.
    monkeypatch.setenv("LINKWRAP_DIRECT", "0")
    src, objects, single_kb = heavy
    work = _fresh(tmp_path, heavy, "off")
    (work / "linkwrap.toml").write_text("[memory]\nadmission = false\n")
    # One link and the wrappers fit; two links at once do not.
    with memgroup.memory_cgroup(limit_kb=2 * single_kb) as group:
        codes, outputs, err = _together(group, work, objects, N_LINKS)
        assert group.oom_kills() >= 1, (codes, err)
    rows = db_rows(lw_home)
    assert len(rows) == N_LINKS and all(r["waited_ms"] is None for r in rows)
    # The killed GNU ld made its link fail: linkwrap linked it once more as asked, or it failed.
    assert any(r["fell_back"] or r["exit_status"] != 0 for r in rows)


def test_with_admission_every_link_succeeds_and_runs(tmp_path, lw_home, heavy):
    src, objects, single_kb = heavy
    work = _fresh(tmp_path, heavy, "on")
    limit_kb = 2 * single_kb
    # No configuration: a memory limit applies, so admission is on.
    with memgroup.memory_cgroup(limit_kb=limit_kb) as group:
        codes, outputs, err = _together(group, work, objects, N_LINKS)
        assert codes == [0] * N_LINKS, err
        assert group.oom_kills() == 0
    for out in outputs:
        assert subprocess.run([str(work / out)], capture_output=True, text=True).stdout == "linked\n"
    rows = db_rows(lw_home)
    assert len(rows) == N_LINKS
    assert not any(r["fell_back"] for r in rows)
    assert all(r["mem_limit_mb"] == limit_kb >> 10 and r["waited_ms"] is not None for r in rows)
    assert all(r["predicted_peak_kb"] and r["charge_kb"] for r in rows)
    waited = [r for r in rows if r["waited_ms"] > 0]
    assert waited, "no link waited: the test did not test admission"
    total = summary_json()["builds"][0]["totals"]
    assert total["memory_waits"] == len(waited)
    shown = subprocess.run([script("linkwrap"), "summary"], capture_output=True, text=True).stdout
    assert f"{len(waited)} link{'s' if len(waited) > 1 else ''} waited" in shown and "for memory" in shown


def test_a_link_predicted_above_the_limit_still_runs_alone(tmp_path, lw_home, heavy):
    src, objects, single_kb = heavy
    work = _fresh(tmp_path, heavy, "big")
    limit_kb = 2 * single_kb
    output = str(work / "big")
    history = {"format": predict.FORMAT}
    assert predict.remember(history, "bfd", output, 4 * limit_kb, 1)  # its last link took 4x the limit
    import marshal
    shard = lw_home / predict.HISTORY / predict.shard(predict.key("bfd", output))
    shard.parent.mkdir(mode=0o700)
    shard.write_bytes(marshal.dumps(history))
    os.chmod(shard, 0o600)
    with memgroup.memory_cgroup(limit_kb=limit_kb) as group:
        done = group.run([script("linkwrap-cc"), "-fuse-ld=bfd", *objects, "-o", output], cwd=work,
                         capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (row,) = db_rows(lw_home)
    assert row["predicted_peak_kb"] > limit_kb and row["prediction_source"] == "output"
    assert row["waited_ms"] == 0 and row["wait_note"].startswith("ran alone: predicted")


def _ledger(home):
    return predict.read_table(os.path.join(str(home), admission.LEDGER), admission.FORMAT) or {"running": {}, "waiting": []}


def _until(condition, what, limit_s=120):
    # A guard against a hang, not a timing assertion.
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


def test_a_crashed_links_entry_is_dropped_by_the_next_link(tmp_path, lw_home, heavy):
    src, objects, single_kb = heavy
    work = _fresh(tmp_path, heavy, "crash")
    (work / "linkwrap.toml").write_text("[memory]\nadmission = true\n")
    victim = subprocess.Popen([script("linkwrap-cc"), "-fuse-ld=bfd", *objects, "-o", "victim"], cwd=work,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _until(lambda: victim.pid in _ledger(lw_home)["running"], "the link to enter the ledger")
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert victim.pid in _ledger(lw_home)["running"]  # killed: it could not take itself out
    hello = memgroup.heavy_objects(work, files=0)
    done = subprocess.run([script("linkwrap-cc"), *hello, "-o", "after"], cwd=work, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert victim.pid not in _ledger(lw_home)["running"]
    after = [r for r in db_rows(lw_home) if os.path.basename(r["output_path"]) == "after"]
    assert after and after[0]["waited_ms"] == 0 and after[0]["wait_note"] is None


def _hold(home, pid, kb):
    """A running link in the ledger: a live process predicted to need kb."""
    with admission.Ledger(str(home)) as ledger:
        data = ledger.load()
        data["running"][pid] = [admission.start_ticks(pid), kb, time.time()]
        ledger.save(data)


def test_explain_counts_the_links_running_in_the_ledger(tmp_path, lw_home):
    import json
    from linkrecords import lw
    holder = subprocess.Popen(["sleep", "600"])
    try:
        _hold(lw_home, holder.pid, 64 << 10)
        (tmp_path / "linkwrap.toml").write_text("[memory]\nadmission = true\n")
        memory = json.loads(lw("explain", "--json", "out", cwd=tmp_path).stdout)["memory"]
        assert (memory["admission"], memory["running_links"]) == (True, 1)
        assert "with 1 link(s) running" in lw("explain", "out", cwd=tmp_path).stdout
    finally:
        holder.kill()
        holder.wait()
    assert json.loads(lw("explain", "--json", "out", cwd=tmp_path).stdout)["memory"]["running_links"] == 0


@pytest.mark.parametrize("kind", ["pipe", "fifo"])
def test_a_waiting_link_gives_its_jobserver_slot_back_and_waits_in_arrival_order(tmp_path, lw_home, kind):
    work = tmp_path / "w"
    work.mkdir()
    (work / "linkwrap.toml").write_text("[memory]\nadmission = true\n")
    objects = memgroup.heavy_objects(work, files=0)
    holder = subprocess.Popen(["sleep", "600"])
    try:
        _hold(lw_home, holder.pid, 1 << 40)  # 1 PiB: nothing fits beside it
        if kind == "pipe":
            r, w = os.pipe()
            auth, fds = f"{r},{w}", (r, w)
        else:
            fifo = tmp_path / "jobserver.fifo"
            os.mkfifo(fifo, 0o600)
            r = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
            w = r
            auth, fds = f"fifo:{fifo}", ()
        env = {**os.environ, "MAKEFLAGS": f"-j2 --jobserver-auth={auth}"}
        first = subprocess.Popen([script("linkwrap-cc"), *objects, "-o", "first"], cwd=work, env=env,
                                 pass_fds=fds, stderr=subprocess.PIPE)
        _until(lambda: [x[0] for x in _ledger(lw_home)["waiting"]] == [first.pid], "the first link to wait")
        second = subprocess.Popen([script("linkwrap-cc"), *objects, "-o", "second"], cwd=work, env=env,
                                  pass_fds=fds, stderr=subprocess.PIPE)
        _until(lambda: [x[0] for x in _ledger(lw_home)["waiting"]] == [first.pid, second.pid],
               "both links to wait, oldest first")
        # Each waiting link wrote one token: the build could start two more jobs meanwhile.
        tokens = b""
        while len(tokens) < 2:
            assert select.select([r], [], [], 120)[0], "no token was given back"
            tokens += os.read(r, 1)
        assert tokens == b"++"
        holder.kill()
        holder.wait()
        os.write(w, b"++")  # the other jobs end and return their slots: each link takes one again
        assert first.wait(120) == 0 and second.wait(120) == 0, (first.stderr.read(), second.stderr.read())
        assert not select.select([r], [], [], 0)[0]  # both tokens were taken back
    finally:
        holder.kill()
        holder.wait()
    rows = {os.path.basename(r["output_path"]): r for r in db_rows(lw_home)}
    for name in ("first", "second"):
        assert rows[name]["waited_ms"] > 0
        assert rows[name]["jobserver_wait"] == "slot given back while waiting, taken again"
    assert not _ledger(lw_home)["running"] and not _ledger(lw_home)["waiting"]


def test_a_link_runs_after_the_wait_bound_and_its_record_says_so(tmp_path, lw_home):
    work = tmp_path / "w"
    work.mkdir()
    (work / "linkwrap.toml").write_text("[memory]\nadmission = true\nmax_wait_s = 0.5\n")
    objects = memgroup.heavy_objects(work, files=0)
    holder = subprocess.Popen(["sleep", "600"])
    try:
        _hold(lw_home, holder.pid, 1 << 40)
        done = subprocess.run([script("linkwrap-cc"), *objects, "-o", "late"], cwd=work, capture_output=True,
                              text=True)
    finally:
        holder.kill()
        holder.wait()
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    (row,) = db_rows(lw_home)
    assert row["waited_ms"] >= 500 and row["wait_note"] == "waited the 0.5 s bound for memory; ran anyway"
    assert row["jobserver_wait"] == "no jobserver"


def test_a_ledger_linkwrap_cannot_use_never_fails_the_link(tmp_path, lw_home):
    work = tmp_path / "w"
    work.mkdir()
    (work / "linkwrap.toml").write_text("[memory]\nadmission = true\n")
    objects = memgroup.heavy_objects(work, files=0)
    target = tmp_path / "not-a-ledger"
    target.write_text("keep")
    os.symlink(target, lw_home / admission.LEDGER)
    done = subprocess.run([script("linkwrap-cc"), *objects, "-o", "out"], cwd=work, capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert subprocess.run([str(work / "out")], capture_output=True, text=True).stdout == "linked\n"
    assert target.read_text() == "keep"
    assert "waiting for memory" in (lw_home / "linkwrap.log").read_text()


def test_a_link_with_admission_off_still_keeps_its_charge_for_the_next_prediction(tmp_path, lw_home, heavy):
    src, objects, single_kb = heavy
    work = _fresh(tmp_path, heavy, "history")
    (work / "linkwrap.toml").write_text("[memory]\nadmission = false\n")
    output = str(work / "kept")
    for _ in range(2):
        done = subprocess.run([script("linkwrap-cc"), "-fuse-ld=bfd", *objects, "-o", output], cwd=work,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    history, _ = predict.load("bfd", output)
    (past,) = [v for k, v in history["outputs"].items() if k.endswith("\0" + output)]
    assert len(past) == 2 and all(kb >= predict.REMEMBER_MIN_KB for kb, _ in past)
    rows = db_rows(lw_home)
    assert rows[1]["prediction_source"] == "output" and rows[1]["waited_ms"] is None
    assert rows[1]["charge_kb"] == past[1][0]
    assert os.stat(lw_home / predict.HISTORY / predict.shard(predict.key("bfd", output))).st_mode & 0o777 == 0o600
