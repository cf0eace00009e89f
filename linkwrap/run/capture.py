"""CAPTURE: what a started linker leaves for the record: its captured output, its spawner's peak.

Shared by run.py (a linker started as a program) and in_process.py (linkwrap's own linker in a fork):
the two start a linker differently and wait for it the same way (waited()).
"""
import os
import time


def own_peak_kb():
    """This process's peak RSS (VmHWM, kB), or None. posix_spawn's child shares this process's memory
    until its exec, and the kernel folds that memory's peak into the new program's ru_maxrss: a
    linker's peak at or below this figure cannot be told from it (the record says "at most")."""
    try:
        fd = os.open("/proc/self/status", os.O_RDONLY | os.O_CLOEXEC)
        try:
            data = os.read(fd, 4096)
        finally:
            os.close(fd)
        at = data.index(b"VmHWM:") + 6
        return int(data[at:data.index(b"kB", at)])
    except (OSError, ValueError):
        return None


def rewound(fd) -> bytes:
    """What the linker wrote into its captured output file, from the start."""
    if not os.fstat(fd).st_size:
        return b""  # the usual case: the linker said nothing
    from linkwrap.cache import read_all
    os.lseek(fd, 0, os.SEEK_SET)
    return read_all(fd)


def waited(pid, started, out_fd, err_fd, spawner_kb, forward=None, meanwhile=None):
    """A started linker seen to its end: -> (returncode, wall_ms, user_ms, sys_ms, peak_rss_kb, stdout,
    stderr, spawner_rss_kb), run.spawn's figures. started: perf_counter_ns() just before the start.

    meanwhile(), when given, runs while the linker does: linkwrap's work that need not come before
    the linker's start nor after its end overlaps it instead of adding to the link's wall time. It
    must stay short (a few tenths of a ms): wait4 comes after it, so a linker that ended first would
    be timed to meanwhile's end."""
    if forward is not None:
        forward.started(pid)
    if meanwhile is not None:
        try:
            meanwhile()
        except Exception as e:  # the linker runs on: a fault here costs only what it was for
            from linkwrap import faults
            faults.note("working while the linker ran", e)
    while True:
        try:
            _, status, ru = os.wait4(pid, 0)
            break
        except InterruptedError:
            continue
    wall_ms = (time.perf_counter_ns() - started) / 1e6
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        code = 128 - code
    return (code, wall_ms, ru.ru_utime * 1000, ru.ru_stime * 1000, ru.ru_maxrss,
            rewound(out_fd), rewound(err_fd), spawner_kb)
