"""Saved links measured by the warm server while no link comes (linkwrap/bench/background.py).

A real server, real links through the native client, real linkers replayed. The machine the tests
run on is shared and busy, so the user's file lifts the load limit and the quiet period; the limit
itself is the pure policy's, tested on its own. Nothing here is timed: each test waits for what the
measurer records (its state file), and asserts on that record.
"""
import json
import re
import os
import shutil
import subprocess
import sys

import pytest

from clirun import linkwrap
from conftest import tool
from linkrecords import c_object, db_rows
from linkwrap.bench import background
from linkwrap.evidence import measured
from linkwrap.server import start
from tests.server.test_server import client, socket_path, wait_for  # noqa: F401 (fixture)

# A STAND-IN for mold (not mold): counts its runs; the HOLD_AT-th one (a replay's, mid-round) holds
# until it is killed, once; every other run is the real mold's.
HOLDING_MOLD = r'''#!{python}
import os, sys, time
if "--version" not in sys.argv:
    count = os.environ["HOLD_COUNT"]
    n = int(open(count).read() or 0) + 1 if os.path.exists(count) else 1
    open(count, "w").write(str(n))
    hold = os.environ["HOLD_MARK"]
    if n == int(os.environ["HOLD_AT"]) and not os.path.exists(hold):
        with open(hold + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(hold + ".tmp", hold)
        time.sleep(300)
os.execv({mold!r}, [{mold!r}] + sys.argv[1:])
'''


def user_config(home, **bench):
    d = os.path.join(str(home), "config")
    os.makedirs(d, exist_ok=True)
    lines = ["[bench]"] + [f"{k} = {json.dumps(v)}" for k, v in bench.items()]
    with open(os.path.join(d, "linkwrap.toml"), "w") as f:
        f.write("\n".join(lines) + "\n")


@pytest.fixture
def idle_ok(lw_home, monkeypatch):
    """The user's file: measure as soon as the server is idle, whatever the shared machine's load."""
    monkeypatch.setenv("CI", "")   # set, empty: the suite itself runs with CI=true in CI
    user_config(lw_home, background_quiet_s=0, background_load=1000, background_budget_s=40)
    return lw_home


def serve(lw_home, monkeypatch, path_first=None, **env):
    """A server started with this environment (the measurer's: its PATH finds the linkers)."""
    if path_first:
        monkeypatch.setenv("PATH", f"{path_first}:{os.environ['PATH']}")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    pid = start.start_detached()
    wait_for(lambda: os.path.exists(socket_path(lw_home)), "the server's socket")
    return pid


def link(client, d, env, out="hello", save=True, big=False):
    """save: LINKWRAP_SAVE=1 or 0; None: not set (saved, or not, as linkwrap does by default)."""
    obj = c_object(d, body='#include <stdio.h>\nint main(void){puts("hi");return 0;}\n', big=big)
    env = {k: v for k, v in env.items() if k != "LINKWRAP_SAVE"}
    if save is not None:
        env["LINKWRAP_SAVE"] = "1" if save else "0"
    done = subprocess.run([client, obj, "-o", out], cwd=d, env=env, capture_output=True)
    assert (done.returncode, done.stderr) == (0, b""), done.stderr
    assert subprocess.run([os.path.join(str(d), out)], capture_output=True).stdout == b"hi\n"
    return os.path.join(str(d), out)


def finished(output):
    return [r for r in background.read_state().get("finished", ()) if r["output"] == output]


def test_the_idle_server_measures_a_saved_link_and_bench_wait_prints_its_table(tmp_path, idle_ok, client,
                                                                              monkeypatch):
    serve(idle_ok, monkeypatch)
    output = link(client, tmp_path, dict(os.environ))
    done = linkwrap("bench", "--wait", "--timeout", "600", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert output in done.stdout and re.search(r"\d+\s+rounds\s+on\s", done.stdout)
    assert "median" in done.stdout and "mold" in done.stdout
    [record] = finished(output)
    # The measurer's own view of itself: the kernel's idle class for CPU and I/O, nice 19.
    assert record["priority"] == {"policy": os.SCHED_IDLE, "nice": 19, "ioclass": background.IOPRIO_CLASS_IDLE}
    assert record["yielded"] == 0 and record["rounds"] >= 3
    again = linkwrap("bench", "--wait", "--json", cwd=tmp_path)
    [report] = json.loads(again.stdout)
    assert report["output"] == output and report["rounds"] == record["rounds"]
    replayed = {r["linker"] for r in report["rows"]}
    assert {"mold", "lld", "bfd"} <= replayed
    # Into the measurement cache a link reads, for every linker replayed.
    rows = [r for r in measured.load_rows(str(tmp_path)) if r.output == measured.output_key(output)]
    assert {r.linker for r in rows} == replayed
    # and into the store's table, which `linkwrap bench` fills too (reports read it)
    stored = db_rows(idle_ok, "SELECT linker, output_path FROM bench_results")
    assert {r["linker"] for r in stored} == replayed and {r["output_path"] for r in stored} == {output}
    status = linkwrap("status", cwd=tmp_path).stdout
    assert "Background measurement: queued 0 saved links, done 1 (last at " in status


def test_in_ci_nothing_is_measured_and_status_says_why(tmp_path, lw_home, client, monkeypatch):
    user_config(lw_home, background_quiet_s=0, background_load=1000)
    serve(lw_home, monkeypatch, CI="true")
    output = link(client, tmp_path, dict(os.environ))
    # The server looked (it notes why it measures nothing), and measured nothing.
    wait_for(lambda: background.read_state().get("off") == "CI", "the server's note that it is off")
    assert os.path.exists(os.path.join(str(lw_home), "saved", "links"))
    assert not finished(output) and not measured.load_rows(str(tmp_path))
    monkeypatch.delenv("CI")
    status = linkwrap("status", cwd=tmp_path).stdout   # this shell is not CI: the server's reason shows
    assert "Background measurement: off (CI)" in status


def test_a_link_arriving_mid_replay_stops_it_and_the_replay_resumes_its_rounds(tmp_path, idle_ok, client,
                                                                              monkeypatch):
    standin = tmp_path / "standin-bin"
    standin.mkdir()
    mold = tool("mold")
    (standin / "mold").write_text(HOLDING_MOLD.format(python=sys.executable, mold=mold))
    (standin / "mold").chmod(0o755)
    real_path = os.environ["PATH"]
    mark = tmp_path / "held"
    serve(idle_ok, monkeypatch, path_first=standin, HOLD_COUNT=str(tmp_path / "count"), HOLD_MARK=str(mark),
          HOLD_AT="5")
    # The saved link itself runs the real mold: the stand-in is only on the server's own PATH.
    env = {**os.environ, "PATH": real_path}
    project = tmp_path / "app"
    project.mkdir()
    output = link(client, project, env)
    held = int(wait_for(lambda: mark.exists() and mark.read_text(), "a replay held mid-round", timeout=600))
    [progress] = background.read_state()["progress"].values()
    done_before = progress["snapshot"]["rounds"]
    assert done_before >= 1
    # A real link now: it goes through while the replay is told to stop at once.
    other = tmp_path / "other"
    other.mkdir()
    link(client, other, env, save=False)
    wait_for(lambda: finished(output), "the measurement, resumed", timeout=600)
    [record] = finished(output)
    assert record["yielded"] == 1 and record["resumed_at"] == [done_before]
    assert record["rounds"] >= done_before + 1
    # The stop reached the linker being timed: the held stand-in was killed, not waited for.
    with pytest.raises(ProcessLookupError):
        os.kill(held, 0)


def test_a_measurement_whose_linker_binary_changed_is_redone(tmp_path, idle_ok, client, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    copy = bin_dir / "mold"
    shutil.copy2(tool("mold"), copy)
    serve(idle_ok, monkeypatch, path_first=bin_dir)
    project = tmp_path / "app"
    project.mkdir()
    output = link(client, project, dict(os.environ))
    assert linkwrap("bench", "--wait", "--timeout", "600", cwd=project).returncode == 0
    key = measured.output_key(output)
    [first] = [r.mtime_ns for r in measured.load_rows(str(project)) if r.output == key and r.linker == "mold"
               and r.variant == "fresh"]
    assert first == os.stat(copy).st_mtime_ns
    os.utime(copy, ns=(first + 10**9, first + 10**9))   # another mold binary, as far as the key goes
    link(client, tmp_path, dict(os.environ), save=False)   # a link: the server looks again
    assert linkwrap("bench", "--wait", "--timeout", "600", cwd=project).returncode == 0
    assert len(finished(output)) == 2
    [now] = [r.mtime_ns for r in measured.load_rows(str(project)) if r.output == key and r.linker == "mold"
             and r.variant == "fresh"]
    assert now == first + 10**9


def test_a_first_cargo_build_is_saved_with_no_flag_and_the_idle_server_measures_it(tmp_path, idle_ok, client,
                                                                                  monkeypatch):
    from cargokit import env_name, host_triple, new_crate
    serve(idle_ok, monkeypatch)
    root = new_crate(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "LINKWRAP_SAVE"}
    env.update({"CARGO_TARGET_DIR": str(tmp_path / "target"), env_name(host_triple()): client})
    done = subprocess.run(["cargo", "build", "--quiet"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    done = linkwrap("bench", "--wait", "--timeout", "600", "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    [report] = json.loads(done.stdout)
    # the binary's link in deps/ (Cargo hard-links target/debug/hello to it afterwards)
    assert os.path.basename(os.path.dirname(report["output"])) == "deps"
    assert os.path.basename(report["output"]).startswith("hello-")
    # measured against the caller's own default, rustc's rust-lld, which is among those replayed
    assert "rust-lld" in {r["linker"] for r in report["rows"]} and report["rounds"] >= 3
    [record] = finished(report["output"])
    assert record["default"] == "rust-lld" and record["yielded"] == 0
    table = linkwrap("bench", "--wait", cwd=root)
    assert table.returncode == 0 and os.path.basename(report["output"]) in table.stdout   # (a long path wraps)
    assert re.search(r"\d+\s+rounds\s+on\s", table.stdout) and "rust-lld" in table.stdout


def test_a_measurement_the_relinks_contradict_is_measured_again(tmp_path, idle_ok, client, monkeypatch):
    serve(idle_ok, monkeypatch)
    project = tmp_path / "app"
    project.mkdir()
    output = link(client, project, dict(os.environ))
    assert linkwrap("bench", "--wait", "--timeout", "600", cwd=project).returncode == 0
    key = measured.output_key(output)
    [first] = finished(output)
    # What learn.against_measured does when this output's relinks are clearly slower than measured
    # (tested in tests/evidence/test_prior.py): the mark, then a link reaches the server.
    mold = next(r for r in measured.load_rows(str(project)) if r.output == key and r.linker == "mold")
    measured.mark_stale(str(project), output, "mold", mold.median_ms, mold.median_ms * 3)
    assert (str(project), key) in background.stale_outputs()
    link(client, tmp_path, dict(os.environ), save=False)
    assert linkwrap("bench", "--wait", "--timeout", "600", cwd=project).returncode == 0
    again = finished(output)
    assert len(again) == 2 and again[1]["finished_utc"] > first["finished_utc"]
    assert (str(project), key) not in measured.stale()   # the new results cleared the mark


def test_a_second_projects_first_link_follows_what_the_server_measured_in_the_first(tmp_path, idle_ok, client,
                                                                                     monkeypatch):
    serve(idle_ok, monkeypatch)
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    env = dict(os.environ)
    output = link(client, first, env, save=None, big=True)   # saved by default
    assert linkwrap("bench", "--wait", "--timeout", "600", cwd=first).returncode == 0
    [record] = finished(output)
    # What the measurement says (derived, not assumed): the linkers clearly faster than the caller's
    # default (GNU ld behind cc) on that link, best first.
    rows = [r for r in measured.machine_rows() if r.output == measured.output_key(output)]
    clear = sorted((r for r in rows if r.ratio_high is not None and r.ratio_high < 1),
                   key=lambda r: r.ratio)
    assert clear, [(r.linker, r.ratio, r.ratio_high) for r in rows]
    best = clear[0]
    obj = c_object(second, body='#include <stdio.h>\nint main(void){puts("hi");return 0;}\n', big=True)
    d = json.loads(linkwrap("explain", "--json", "--", obj, "-o", "hello", cwd=second).stdout)
    decision = d["decision"]
    assert decision["measured"] is None and decision["prior"]["used"] == "measurement", decision["reasons"]
    decided = decision["prior"]["decided_by"]
    assert (decided["project"], decided["output"], decided["linker"]) == (str(first), output, best.linker)
    assert decided["ratio"] == pytest.approx(best.ratio, abs=5e-4) and decision["linker"] == best.linker
    assert str(first) in decision["reasons"][0]
    # ...and the second project's real first link is that linker's (its record)
    made = link(client, second, env, save=None, big=True)
    linked = db_rows(idle_ok, "SELECT linker, output_path FROM links")
    assert [r["linker"] for r in linked if r["output_path"] == made] == [best.linker], linked


def test_the_policy():
    assert background.off_reason({"CI": "true"}, None, False) == "CI"
    assert background.off_reason({"CI": "true"}, True, True) is None   # asked for: measures anyway
    assert background.off_reason({}, None, True) == "on battery"
    assert background.off_reason({}, False, False) == "[bench] background = false"
    assert background.off_reason({}, None, False) is None
    # Idle for the quiet period and under half the CPUs busy; the measurer's own link not counted.
    assert background.may_start(100, 40, 60, 0.9, 2, 0.5)
    assert not background.may_start(100, 50, 60, 0.9, 2, 0.5)
    assert not background.may_start(100, 40, 60, 1.0, 2, 0.5)
    assert not background.must_yield(1.9, 2, 0.5) and background.must_yield(2.0, 2, 0.5)
