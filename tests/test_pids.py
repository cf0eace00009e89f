"""tests/pids.py: the tests' signals reach the process they name or none, with real processes at
real reused pids."""
import signal
import subprocess

import pids


def test_a_pid_that_came_round_to_another_process_is_not_signalled():
    ended = subprocess.Popen(["sleep", "600"])
    ident = pids.identity(ended.pid)
    ended.kill()
    ended.wait()
    with pids.stranger_at(ended.pid) as stranger:
        assert not pids.send(ident, signal.SIGKILL)
        assert stranger.alive()
        assert pids.send(stranger.ident, signal.SIGKILL)  # its own identity reaches it
        assert not stranger.alive()


def test_a_process_judged_once_pinned_is_signalled_only_if_it_still_is_what_was_listed():
    with pids.stranger_at(pids.reaped_pid()) as stranger:
        assert not pids.send((stranger.pid, None), signal.SIGTERM, still=lambda pid: False)
        assert stranger.alive()
        assert pids.send((stranger.pid, None), signal.SIGTERM, still=lambda pid: pid == stranger.pid)
        assert not stranger.alive()
