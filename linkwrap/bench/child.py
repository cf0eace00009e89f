"""CHILD: a background job of the warm server's, as both of them run (background.py's measurer,
incremental_base.py's base builder): a fresh interpreter in its own process group, at the lowest
CPU and I/O priority, dying with the server; watched about once a second, told to stop at once
(SIGTERM to its group: the linker it runs with it) and SIGKILLed if it has not within KILL_AFTER_S.

A job is the host's dict: its pid, pidfd and told (when it was told to stop, monotonic), kept up to
date here; the host keeps in it what else it needs (the measurer's dirty/ended, the builder's ident).
"""
import os
import time

KILL_AFTER_S = 60     # a job told to stop that has not within this is SIGKILLed
IOPRIO_SET = {"x86_64": 251, "aarch64": 30, "riscv64": 30}.get(os.uname().machine)
IOPRIO_GET = {"x86_64": 252, "aarch64": 31, "riscv64": 31}.get(os.uname().machine)
PRCTL = {"x86_64": 157, "aarch64": 167, "riscv64": 167}.get(os.uname().machine)
IOPRIO_CLASS_IDLE = 3


def start(job, boot, **fields) -> None:
    """Run `python -I -S -c boot` as the job; boot is formatted with parent (the directory of
    linkwrap's own tree, for its sys.path) and fields."""
    import sys
    import linkwrap
    parent = os.path.dirname(os.path.dirname(os.path.abspath(linkwrap.__file__)))
    argv = [sys.executable, "-I", "-S", "-c", boot.format(parent=parent, **fields)]
    server = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)
            lower_priority()
            die_with(server)
            os.execv(sys.executable, argv)
        finally:
            os._exit(70)
    try:
        os.setpgid(pid, pid)   # (the child does it too: whichever runs first)
    except OSError:
        pass
    job.update(pid=pid, pidfd=os.pidfd_open(pid), told=None)


def ended(job):
    """(True, its exit status or None) once the job has exited (reaped, its pidfd closed; None: the
    server's own reaping took it first), else (False, None)."""
    import select
    if not select.select([job["pidfd"]], [], [], 0)[0]:
        return False, None
    code = None
    try:
        _, status = os.waitpid(job["pid"], os.WNOHANG)
        code = os.waitstatus_to_exitcode(status)
    except ChildProcessError:
        pass
    os.close(job["pidfd"])
    job.update(pid=None, pidfd=None, told=None)
    return True, code


def stop(job) -> None:
    """Tell the job to stop, at once: SIGTERM to its process group."""
    import signal
    job["told"] = time.monotonic()
    try:
        os.killpg(job["pid"], signal.SIGTERM)
    except OSError:
        pass


def kill_if_overdue(job) -> None:
    """SIGKILL a job told to stop KILL_AFTER_S ago that still runs."""
    import signal
    if job["told"] is not None and time.monotonic() - job["told"] > KILL_AFTER_S:
        try:
            os.killpg(job["pid"], signal.SIGKILL)
        except OSError:
            pass


def lower_priority() -> None:
    """SCHED_IDLE, nice 19 and the idle I/O class for this process and all it starts."""
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    os.setpriority(os.PRIO_PROCESS, 0, 19)
    if IOPRIO_SET is not None:
        from linkwrap.libc import syscall
        call, c_long, _, _ = syscall()
        call(c_long(IOPRIO_SET), c_long(1), c_long(0), c_long(IOPRIO_CLASS_IDLE << 13))  # IOPRIO_WHO_PROCESS


def own_priority() -> dict:
    """This process's scheduling policy, nice and I/O class, as the kernel reports them."""
    ioclass = None
    if IOPRIO_GET is not None:
        from linkwrap.libc import syscall
        call, c_long, _, _ = syscall()
        got = call(c_long(IOPRIO_GET), c_long(1), c_long(0))
        ioclass = got >> 13 if got >= 0 else None
    return {"policy": os.sched_getscheduler(0), "nice": os.getpriority(os.PRIO_PROCESS, 0), "ioclass": ioclass}


def die_with(server) -> None:
    """SIGTERM when the server exits (PR_SET_PDEATHSIG): a job never outlives its host."""
    import signal
    if PRCTL is not None:
        from linkwrap.libc import syscall
        call, c_long, _, _ = syscall()
        call(c_long(PRCTL), c_long(1), c_long(signal.SIGTERM))
    if os.getppid() != server:   # it exited before that
        os._exit(0)
