"""run.execute: the driver command, spawning, and what SIGINT/SIGTERM during a link do.

Signal tests run the real linkwrap-cc with real mold, lld-16 and GNU ld on a 256 MiB
output; the linker's process group is stopped mid-write (SIGSTOP) so the signal
lands while the output is half written, whatever the machine's speed.
"""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import script
from forked import in_a_fork
from linkwrap.request import args
from linkwrap.facts import linkers
from linkwrap.run import run
from linkwrap.choice.policy import FRESH, IN_PLACE, Decision, as_asked
from outputkit import (LINKERS, signal_group, STATIC, _group_alive, big_obj, debris, env_for, fuse, lw_cc,  # noqa: F401
                         no_stopped_links_left, objs, read, stop_mid_write, written_by)

STANDINS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "standins")


def request(argv, cwd, driver="gcc"):
    return args.parse(list(argv), driver, cwd=str(cwd))


def decision(name, mode=FRESH, flags=()):
    return Decision(linkers.discover()[name], tuple(flags), (), mode, ("test",))


# --- the command -----------------------------------------------------------

def test_command_as_asked_keeps_every_argument_but_the_output(tmp_path):
    req = request(["-fuse-ld=lld", "a.o", "-o", "out", "-Wl,-z,now"], tmp_path)
    assert run.command(req, as_asked("x"), "/t/out") == ["gcc", "-fuse-ld=lld", "a.o", "-o", "/t/out", "-Wl,-z,now"]


def test_command_for_a_chosen_linker_puts_its_shim_first(tmp_path, lw_home):
    req = request(["-fuse-ld=lld", "a.o", "-o", "out"], tmp_path)
    cmd = run.command(req, decision("mold", flags=("--no-fork",)), "/t/out")
    assert cmd[0] == "gcc" and cmd[1].startswith("-B") and os.path.realpath(cmd[1][2:] + "/ld") == "/usr/bin/mold"
    assert cmd[2:] == ["a.o", "-o", "/t/out", "-Wl,--no-fork"]


# --- spawning --------------------------------------------------------------

def test_spawn_captures_output_status_and_rusage():
    code, wall, user, sys_ms, rss, out, err, _ = run.spawn(
        ["sh", "-c", "echo out; echo err >&2; head -c 50000000 /dev/zero | tail -c 1 >/dev/null; exit 3"],
        dict(os.environ))
    assert (code, out, err) == (3, b"out\n", b"err\n")
    assert wall > 0 and rss > 1000 and user + sys_ms >= 0


# A forking "linker": the first process exits at once, its worker touches 200 MiB and exits later
# (as mold's and wild's do once the output is complete). Real processes, real rusage.
FORKING = textwrap.dedent("""
    import os, sys
    if os.fork():
        os._exit(0)
    data = bytearray(200 << 20)
    for i in range(0, len(data), 4096):
        data[i] = 1
    if len(sys.argv) > 1:
        os.kill(os.getpid(), 19)  # SIGSTOP: a worker that never ends by itself
    os._exit(0)
""")


def test_reap_adds_a_forked_workers_cpu_and_peak_rss_to_the_outcome():
    def link():
        code, wall, user, sys_ms, rss, out, err, _ = run.spawn([sys.executable, "-c", FORKING], dict(os.environ))
        first = run.Outcome(code, wall, user, sys_ms, rss, out, err, (), FRESH, None, None, "direct")
        done = run.reap(first)
        left = run._children(os.getpid())
        return first.peak_rss_kb, done.peak_rss_kb, first.user_ms + first.sys_ms, done.user_ms + done.sys_ms, \
            first.wall_ms == done.wall_ms, left
    first_kb, reaped_kb, first_cpu, reaped_cpu, same_wall, left = in_a_fork(link, subreaper=True)
    # The worker's peak (the first process's ru_maxrss starts at this process's RSS: it may be high too).
    assert reaped_kb > 200 << 10 and reaped_kb >= first_kb, (first_kb, reaped_kb)
    # Its CPU: faulting in 200 MiB costs tens of ms of system time.
    assert reaped_cpu > first_cpu + 10, (first_cpu, reaped_cpu)
    assert same_wall and left == []


def test_reap_kills_what_outlives_its_bound_when_told():
    def link():
        run.spawn([sys.executable, "-c", FORKING, "stop"], dict(os.environ))
        worker = run._children(os.getpid())
        assert len(worker) == 1  # the stopped worker, orphaned to this subreaper
        run.reap(None, bound_s=0.5, kill=True)
        return worker[0], run._children(os.getpid()), os.path.exists(f"/proc/{worker[0]}")
    worker, left, exists = in_a_fork(link, subreaper=True)
    assert left == [] and not exists, worker  # killed and reaped: no zombie either


def test_reap_leaves_a_slow_worker_running():
    # A worker still busy at the bound may be writing an output (mold's detached separate debug
    # file): it is left to finish, as it would be without linkwrap, never killed.
    def link():
        run.spawn([sys.executable, "-c", FORKING, "stop"], dict(os.environ))
        worker = run._children(os.getpid())
        run.reap(None, bound_s=0.3)
        alive = run._children(os.getpid())
        for p in alive:
            os.kill(p, 9)
        run.reap(None, bound_s=5, kill=True)
        return worker, alive
    worker, alive = in_a_fork(link, subreaper=True)
    assert alive == worker and len(worker) == 1


def test_meanwhile_runs_while_the_linker_runs(tmp_path):
    flag = tmp_path / "written-meanwhile"
    # The command waits (a bounded loop) for the file meanwhile writes: called only after the
    # command's end, meanwhile would find it gone with status 3.
    wait = f'for i in $(seq 400); do [ -e "{flag}" ] && exit 0; sleep 0.05; done; exit 3'
    code, *_ = run.spawn(["sh", "-c", wait], dict(os.environ), meanwhile=lambda: flag.write_text("x"))
    assert code == 0


def test_a_fault_while_the_linker_runs_costs_the_link_nothing(lw_home):
    def broken():
        raise RuntimeError("injected fault while the linker runs")
    code, *_, out, err, _ = run.spawn(["sh", "-c", "echo out; exit 0"], dict(os.environ), meanwhile=broken)
    assert (code, out, err) == (0, b"out\n", b"")
    assert "injected fault while the linker runs" in (lw_home / "linkwrap.log").read_text()


def test_the_linker_runs_in_the_callers_group_with_sigpipe_and_sigxfsz_default():
    script_ = "grep -E '^SigIgn' /proc/self/status; ps -o pgid= -p $$"
    code, *_, out, err, _ = run.spawn(["sh", "-c", script_], dict(os.environ))
    ign_line, pgid = out.decode().split("\n")[:2]
    ignored = int(ign_line.split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1)) and not ignored & (1 << (signal.SIGXFSZ - 1))
    assert int(pgid) == os.getpgrp()  # whatever stops or kills the caller's group reaches the linker


def test_a_signal_killed_driver_reports_128_plus_n():
    code, *_ = run.spawn(["sh", "-c", "kill -TERM $$"], dict(os.environ))
    assert code == 128 + signal.SIGTERM


def test_mold_run_preload_is_removed_from_the_linker_environment():
    env = run.linker_environment({"LD_PRELOAD": "/usr/lib/mold/mold-wrapper.so:/x.so", "MOLD_PATH": "m", "A": "1"})
    assert env == {"LD_PRELOAD": "/x.so", "A": "1"}


def test_response_file_lives_in_the_private_directory_and_goes_with_it(tmp_path, lw_home):
    (tmp_path / "args.rsp").write_text("a.o\n-o\nout\n")
    record = tmp_path / "argv"
    req = request(["@args.rsp"], tmp_path, driver=os.path.join(STANDINS, "record-driver"))
    done = run.execute(req, as_asked("x"), {**os.environ, "RECORD_TO": str(record)})
    # The stand-in writes no output: the "link" succeeded but there is nothing to move.
    passed = record.read_text().splitlines()
    assert len(passed) == 1 and passed[0].startswith(f"@{tmp_path}/.linkwrap-tmp/")
    assert done.returncode == 1 and b"cannot move the output into place" in done.stderr
    assert not os.path.exists(passed[0][1:]) and debris(tmp_path) == []


def test_write_through_passes_bytes_unchanged(tmp_path):
    code = textwrap.dedent("""
        from linkwrap.run import run
        o = run.Outcome(0, 0, 0, 0, 0, b"to stdout\\xff\\n", b"to stderr\\n", (), "fresh", None, None, "driver")
        run.write_through(o)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert (done.stdout, done.stderr) == (b"to stdout\xff\n", b"to stderr\n")


def test_handlers_are_put_back_after_the_link(tmp_path, lw_home, objs):
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    done = run.execute(request([*STATIC, str(objs[0]), "-o", "a.out"], tmp_path), decision("bfd"))
    assert done.returncode == 0
    assert {s: signal.getsignal(s) for s in before} == before


def test_a_signal_after_the_linkers_end_reaches_no_process_that_got_its_pid(tmp_path):
    """The handler that passes SIGTERM on stays installed after the linker was reaped (recording,
    tidying): its pid is free then, and pids come round within a build. A stranger's process that
    got it (a real one, at that very pid) must not be signalled."""
    import pids
    with run._Forward() as forward:
        assert run.spawn(["true"], dict(os.environ), forward=forward)[0] == 0  # started, ended, reaped
        with pids.stranger_at(forward.pid) as stranger:
            os.kill(os.getpid(), signal.SIGTERM)  # to linkwrap alone, as a supervisor sends it
            caught = forward.caught  # the handler has run: Python runs it before the next line
            assert caught == signal.SIGTERM and stranger.alive()


# Run in a process of its own: a child subreaper, as the server's child is. Its child `sh` (M)
# starts a worker (W) and waits; M is listed, then ends, and W comes to this process -- between the
# walk's listing of M's children and W's check, the window a forking linker's worker passes through.
REPARENTED = r"""
import ctypes, errno, os, signal, subprocess, sys, time
from linkwrap.run import run
assert ctypes.CDLL(None).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
m = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; read x"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
w = int(m.stdout.readline())
listed = run._children

def children(pid):
    found = listed(pid)
    if pid == m.pid:
        m.stdin.close()  # M ends; W is this process's now
        m.wait()
        while run._parent_of(w) != os.getpid():
            time.sleep(0.01)
    return found

run._children = children
if sys.argv[1] == "eperm":  # a seccomp filter refusing pidfd_open (older container profiles)
    def refused(pid, flags=0):
        raise OSError(errno.EPERM, "refused")
    os.pidfd_open = refused
    run._children = listed
run.kill_descendants(signal.SIGTERM)
print(os.waitpid(w, 0)[1] == signal.SIGTERM if sys.argv[1] == "reparented" else
      (m.wait(), os.waitpid(w, 0)[1]) == (-signal.SIGTERM, signal.SIGTERM))
"""


@pytest.mark.parametrize("case", ["reparented", "eperm"])
def test_every_descendant_is_signalled_a_reparented_worker_and_without_pidfds_too(case):
    done = subprocess.run([sys.executable, "-c", REPARENTED, case], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "True"), done.stderr


# --- interrupting linkwrap-cc ----------------------------------------------

def start_big_link(linker, d, tmp_path, big_obj, **popen):
    return subprocess.Popen([script("linkwrap-cc"), *STATIC, *big_obj, "-o", "a.out", fuse(linker)], cwd=d,
                            env=env_for(linker, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            **popen)


def resume_until_done(proc, group, timeout=60):
    """SIGCONT the stopped group until linkwrap-cc has exited: whenever linkwrap's
    handler gets to forward the signal, the stopped linker then receives it."""
    deadline = time.time() + timeout
    while proc.poll() is None and time.time() < deadline:
        signal_group(group, signal.SIGCONT)  # a fatal signal ends a stopped process too
        time.sleep(0.01)
    proc.communicate(timeout=5)


def wait_gone(group, timeout=30):
    deadline = time.time() + timeout
    while _group_alive(group) and time.time() < deadline:
        time.sleep(0.005)
    return not _group_alive(group)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("linker", LINKERS)
def test_signal_to_linkwrap_mid_link_keeps_the_old_output(tmp_path, lw_home, big_obj, linker, sig):
    d = tmp_path / "out"
    d.mkdir()
    assert lw_cc([*STATIC, big_obj[1], "-o", "a.out"], d, linker, tmp_path).returncode == 0
    os.link(d / "a.out", d / "b.out")  # two names: the write is fresh
    old = read(d / "a.out")
    proc = start_big_link(linker, d, tmp_path, big_obj)
    partial, group = stop_mid_write(d, proc)
    proc.send_signal(sig)
    resume_until_done(proc, group)
    assert proc.returncode == -sig  # died of that signal, as an interrupted command does
    assert wait_gone(group, 5)  # the linker did not outlive it
    assert read(d / "a.out") == old and read(d / "b.out") == old
    assert debris(d) == []


def test_interrupted_in_place_link_leaves_nothing_under_the_name(tmp_path, lw_home, big_obj):
    """mold in place (a lone, cached output): interrupted, the half-overwritten inode goes."""
    d = tmp_path / "out"
    d.mkdir()
    assert lw_cc([*STATIC, *big_obj, "-o", "a.out"], d, "mold", tmp_path).returncode == 0
    ino = os.stat(d / "a.out").st_ino
    proc = start_big_link("mold", d, tmp_path, big_obj)
    partial, group = stop_mid_write(d, proc)
    assert os.stat(partial).st_ino == ino  # in place: mold writes the old inode (moved aside)
    proc.send_signal(signal.SIGTERM)
    resume_until_done(proc, group)
    assert proc.returncode == -signal.SIGTERM
    assert wait_gone(group, 5)
    assert not (d / "a.out").exists() and debris(d) == []


def test_a_link_started_with_sigint_ignored_ignores_it(tmp_path, lw_home, big_obj):
    """nohup / `cmd &` in a script: SIGINT stays ignored, by linkwrap and the linker."""
    d = tmp_path / "out"
    d.mkdir()
    proc = start_big_link("bfd", d, tmp_path, big_obj,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    partial, group = stop_mid_write(d, proc)
    proc.send_signal(signal.SIGINT)
    signal_group(group, signal.SIGINT)
    resume_until_done(proc, group, timeout=120)
    assert proc.returncode == 0
    assert os.path.getsize(d / "a.out") > 256 << 20 and written_by(d / "a.out") == "bfd"
    assert debris(d) == []


def test_a_missing_driver_fails_with_127_and_leaves_the_output_alone(tmp_path, lw_home):
    (tmp_path / "a.out").write_bytes(b"old")
    req = request(["a.o", "-o", "a.out"], tmp_path, driver=str(tmp_path / "no-such-cc"))
    for mode in (FRESH, IN_PLACE):
        done = run.execute(req, decision("mold", mode))
        assert done.returncode == 127 and b"cannot run" in done.stderr and b"No such file" in done.stderr
        assert (tmp_path / "a.out").read_bytes() == b"old" and debris(tmp_path) == []


@pytest.mark.parametrize("linker", LINKERS)
def test_sigkill_of_linkwraps_process_group_leaves_no_linker_running(tmp_path, lw_home, hello_obj, linker):
    """A CI timeout (`timeout -s KILL`) kills the group linkwrap-cc leads: nothing of the link survives it.
    The linker is kept busy by an input that is a FIFO nobody writes: it waits for ever, unstopped."""
    from outputkit import _LEFT_RUNNING, _identity, children, comm, descendants
    fifo = tmp_path / "input.o"
    os.mkfifo(fifo)
    # Through the driver (LINKWRAP_DIRECT=0): the group to kill is cc, collect2 and the linker.
    proc = subprocess.Popen([script("linkwrap-cc"), str(hello_obj), str(fifo), "-o", "prog", fuse(linker)],
                            cwd=tmp_path, env=env_for(linker, tmp_path, LINKWRAP_DIRECT="0"), start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    group = ()
    # Until the driver has started collect2 and it the linker (discovery may run `<linker> --version` first).
    while time.time() < deadline and not ("collect2" in [comm(p) for p, _ in group] and len(group) >= 3):
        drivers = [p for p in children(proc.pid) if comm(p) == "cc"]
        group = tuple(_identity(p) for p in drivers + [d for p in drivers for d in descendants(p)])
        time.sleep(0.01)
    _LEFT_RUNNING.append((proc, group))
    assert proc.poll() is None and len(group) >= 3, [comm(p) for p, _ in group]  # driver, collect2, linker
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert wait_gone(group, 10), [comm(p) for p, _ in group]


def test_a_peak_at_or_below_linkwraps_own_is_recorded_as_a_bound_and_a_larger_one_as_the_peak(tmp_path, lw_home,
                                                                                               hello_obj):
    """posix_spawn's child shares linkwrap's memory until its exec, and the kernel folds that memory's
    peak into the linker's ru_maxrss: a small link's figure is linkwrap's own, said as "at most"."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
    import memgroup
    from linkrecords import cc_link, lw, summary_json
    heavy = memgroup.heavy_objects(tmp_path)  # GNU ld reads these into a heap of ~100 MiB
    for argv in ([str(hello_obj), "-o", "small"], ["-fuse-ld=bfd", *heavy, "-o", "heavy"]):
        done = cc_link(argv, tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    links = {os.path.basename(l["output_path"]): l for b in summary_json("--all")["builds"] for l in b["links"]}
    small, big = links["small"], links["heavy"]
    assert small["spawner_rss_kb"] > 0 and 0 < small["peak_rss_kb"] <= small["spawner_rss_kb"]
    assert small["peak_rss_bound"] is True
    assert big["peak_rss_kb"] > 2 * big["spawner_rss_kb"] and big["peak_rss_bound"] is False
    shown = lw("summary", "--all", env={"COLUMNS": "200"}).stdout
    assert "≤" in shown.split("small")[1].splitlines()[0]
    assert "≤" not in shown.split("heavy")[1].splitlines()[0]
    assert "≤: the linker's peak RSS is at most that" in shown   # the sign explained where it is
    assert "at most (linkwrap's own peak" in lw("explain", "small", cwd=tmp_path, env={"COLUMNS": "200"}).stdout
