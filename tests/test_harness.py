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
                           "-c", os.devnull, str(tmp_path / "test_inner.py")],
                          cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": HERE},
                          preexec_fn=lambda: [signal.signal(s, signal.SIG_IGN) for s in (signal.SIGHUP, signal.SIGINT)])
    assert done.returncode == 0, done.stdout + done.stderr
