"""Signalling the tests' processes by pid without ever reaching another process, and making a pid
come back on purpose.

A pid names a process only until that process has been reaped; the kernel then gives the number
to a later process. pid_max is 32768 on this machine kind and a run of the suite forks tens of
thousands of processes (with other work on the machine forking too), so pids come round again
within a run: a pid read earlier and signalled later may reach any process, this test run itself
included. Every signal the tests send to a process they did not just start goes through send(): a
pidfd pins one process, and the identity is checked after the pidfd was taken, so a process that
got the pid since is never signalled.
"""
import os
import signal
import subprocess
import sys


def start_ticks(pid):
    """The process's start time (clock ticks since boot, /proc/<pid>/stat field 22); None once gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def identity(pid):
    """(pid, start time): what names one process, where a pid alone names whichever has it now."""
    return pid, start_ticks(pid)


def state(pid):
    """The process's state letter (R, S, D, T, Z...); None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return None


def send(ident, sig, still=None) -> bool:
    """sig to the process ident = (pid, start time) names, only if that one still exists; -> sent.

    still(pid), when given, replaces the start-time check (a process listed by what it is now, e.g.
    in a cgroup): it is asked after the pidfd was taken, so its answer is about the pinned process."""
    pid, start = ident
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return False  # gone
    try:
        if still is not None:
            if not still(pid):
                return False
        elif start is None or start_ticks(pid) != start:
            return False  # the pid was given to another process since
        signal.pidfd_send_signal(fd, sig)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


# A keeper: forks a child that gets exactly the pid asked for, and stays its parent (the process
# that got the pid is then no child of the test's process, as a stranger's would be).
_KEEPER = r"""
import os, sys
pid, argv = int(sys.argv[1]), sys.argv[2:]
LAST = "/proc/sys/kernel/ns_last_pid"
with open(LAST) as f:
    was = int(f.read())


def restore():  # the counter back where it was, unless others have moved it on since
    with open(LAST) as f:
        if int(f.read()) >= was:
            return
    with open(LAST, "w") as f:
        f.write(str(was))


for _ in range(200):
    with open(LAST, "w") as f:
        f.write(str(pid - 1))
    child = os.fork()
    if child == 0:
        os.execvp(argv[0], argv)
    if child == pid:
        restore()  # only this one pid was given out again
        print(child, flush=True)
        sys.stdin.read()  # until the test closes it
        try:
            os.kill(child, 9)
        except OSError:
            pass
        os.waitpid(child, 0)
        sys.exit(0)
    os.kill(child, 9)
    os.waitpid(child, 0)
restore()
sys.exit(3)
"""


class Stranger:
    """A process that got a pid the tests once knew, child of a keeper (not of the test run)."""

    def __init__(self, pid, argv):
        assert start_ticks(pid) is None, f"pid {pid} is in use"
        self.keeper = subprocess.Popen([sys.executable, "-c", _KEEPER, str(pid), *argv],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = self.keeper.stdout.readline()
        assert line.strip() == str(pid).encode(), f"pid {pid} could not be had: {line!r}"
        self.pid = pid
        self.ident = identity(pid)

    def alive(self) -> bool:
        """Still running and sent no signal. A signal sent is seen at once: pending until the
        process takes it (/proc/<pid>/status SigPnd, ShdPnd), then its death (a zombie has ended)."""
        try:
            with open(f"/proc/{self.pid}/status") as f:
                status = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
        except OSError:
            return False
        return (status["State"].split()[0] not in ("Z", "X") and start_ticks(self.pid) == self.ident[1]
                and int(status["SigPnd"], 16) == 0 and int(status["ShdPnd"], 16) == 0)

    def close(self):
        self.keeper.stdin.close()
        self.keeper.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def stranger_at(pid, argv=("sleep", "600")):
    """Start argv as a stranger's process with exactly this (free) pid; -> a Stranger.

    What a run of the suite does by forking until the pid counter comes round, at once: the
    kernel's last allocated pid (/proc/sys/kernel/ns_last_pid, root only) is set just below it,
    so that the next process created gets it; another process created in between may take it,
    and then it is tried again."""
    return Stranger(pid, list(argv))


def reaped_pid():
    """A pid that was just used and is free again (a process started and reaped)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid
