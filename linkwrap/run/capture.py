"""CAPTURE: what a started linker leaves for the record: its captured output, its spawner's peak.

Shared by run.py (a linker started as a program) and in_process.py (linkwrap's own linker in a fork).
"""
import os


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
