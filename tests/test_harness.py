"""The test run itself: how it is started must not change what its tests test."""
import os
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def test_a_run_under_nohup_starts_its_processes_with_sighup_and_sigint_default(tmp_path):
    """nohup (and a shell's background job) start the run with SIGHUP (SIGINT) ignored, which every
    process it starts would inherit: the tests that send them to a link would test nothing, or wait
    for ever (a client that keeps an ignored SIGHUP ignored)."""
    (tmp_path / "test_inner.py").write_text(
        "import subprocess\n"
        "def test_inner():\n"
        "    out = subprocess.run(['grep', 'SigIgn', '/proc/self/status'], capture_output=True, text=True)\n"
        "    mask = int(out.stdout.split()[1], 16)\n"
        "    assert not mask & (1 << 0) and not mask & (1 << 1), out.stdout\n")
    # this suite's conftest.py, loaded as a plugin, with nothing else of the suite
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
                           "-c", os.devnull, "--basetemp", str(tmp_path / "basetemp"), str(tmp_path / "test_inner.py")],
                          cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": HERE},
                          preexec_fn=lambda: [signal.signal(s, signal.SIG_IGN) for s in (signal.SIGHUP, signal.SIGINT)])
    assert done.returncode == 0, done.stdout + done.stderr


# A process the run's closing sweep takes for a link server (its command line names the module),
# whose exit status says whether it was sent SIGTERM.
SERVER_STANDIN = r"""
import signal, sys
got = []
signal.signal(signal.SIGTERM, lambda *_: got.append(1))
print("ready", flush=True)
sys.stdin.read()  # until the test is done
sys.exit(15 if got else 0)
"""


def test_the_runs_closing_sweep_stops_its_own_link_servers_only(tmp_path):
    """At its end a run SIGTERMs the link servers whose LINKWRAP_HOME lies under its basetemp. Matched
    as a string prefix, /tmp/pytest-of-root/pytest-5 took in a concurrent run's pytest-50 too."""
    (tmp_path / "test_inner.py").write_text("def test_inner():\n    pass\n")
    servers = {}
    for name in ("pytest-5", "pytest-50"):  # this run's basetemp, and another run's
        home = tmp_path / name / "test_x0" / "lw-home"
        home.mkdir(parents=True)
        servers[name] = subprocess.Popen([sys.executable, "-c", SERVER_STANDIN, "linkwrap.server.server"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         env={**os.environ, "LINKWRAP_HOME": str(home)})
        assert servers[name].stdout.readline() == b"ready\n"
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
                               "-c", os.devnull, "--basetemp", str(tmp_path / "pytest-5"),
                               str(tmp_path / "test_inner.py")],
                              cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": HERE})
    finally:
        for proc in servers.values():
            proc.stdin.close()
    assert done.returncode == 0, done.stdout + done.stderr
    assert servers["pytest-5"].wait(timeout=60) == 15  # the run's own
    assert servers["pytest-50"].wait(timeout=60) == 0  # another run's: untouched
