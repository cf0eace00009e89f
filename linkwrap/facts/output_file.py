"""The existing output: what is at the output path now, who else holds or maps it, and how much
of it is in the page cache (cachestat(2), else mincore(2))."""
import os
from linkwrap.records import record
from linkwrap.facts.procfs import _try


class OutputFacts(record("OutputFacts", [
    "exists",           # bool; None when the path could not even be stat()ed
    "is_regular",       # bool | None
    "size",             # int | None, bytes
    "nlink",            # int | None
    "inode",            # int | None
    "held_by_others",   # bool | None: another process has it open, mapped or running
    "cached_fraction",  # float | None: share of its pages in the page cache
])):
    """What is at the output path before the link."""
    __slots__ = ()


NO_OUTPUT = OutputFacts(False, None, None, None, None, False, None)
UNKNOWN_OUTPUT = OutputFacts(None, None, None, None, None, None, None)


def output_facts(path, cache=True):
    """What is at the output path now. Only regular files are opened (opening a
    device can have effects); the open is non-blocking so a lease elsewhere
    cannot stall the link. cache=False leaves cached_fraction None (not measured) where no choice
    can read it: an output with another name (Cargo's uplifted copy) or held by another process is
    written fresh whatever its page cache holds (choice/write_mode.py). Its ~0.45 ms (cachestat of a
    70 MB output) is then spent while the linker runs (cached_later()), for the record."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return NO_OUTPUT
    except OSError:
        return UNKNOWN_OUTPUT
    if st.st_mode & 0o170000 != 0o100000:
        return OutputFacts(True, False, st.st_size, st.st_nlink, st.st_ino, None, None)
    held = cached = None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        fd = None  # unreadable, or someone holds a lease on it: unknown
    if fd is not None:
        try:
            st = os.fstat(fd)  # the file we opened, should it have been replaced since
            held = _try(held_by_others, fd)
            if cache or (st.st_nlink == 1 and held is not True):
                cached = _try(cached_fraction, fd, st.st_size)
        finally:
            os.close(fd)
    return OutputFacts(True, True, st.st_size, st.st_nlink, st.st_ino, held, cached)


def cached_later(out, path):
    """out (output_facts(path, cache=False)) with the page cache's share it left unmeasured,
    measured now (while the linker runs: a fresh link does not touch the old output's inode)."""
    if out.cached_fraction is not None or out.is_regular is not True or out.size is None \
            or out.size < CACHE_PROBE_MIN_BYTES:
        return out
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return out
    try:
        if os.fstat(fd).st_ino != out.inode:
            return out  # replaced since: not the output the choice saw
        return out._replace(cached_fraction=_try(cached_fraction, fd, out.size))
    finally:
        os.close(fd)


def held_by_others(fd):
    """Whether another process has this file open, mapped or running.

    A write lease (fcntl(2) F_SETLEASE F_WRLCK) is refused with EAGAIN while any
    other descriptor is open, including the one a MAP_PRIVATE mapping keeps
    after close and the one exec keeps. Taken and dropped at once. fd must be
    our only descriptor for the file. Leases need the file to be ours (or
    CAP_LEASE) and a filesystem that allows them: otherwise None.
    """
    import _signal  # built in: no import cost (the signal module costs ~4 ms)
    import errno
    import fcntl
    # While we hold the lease, another open breaks it and the kernel sends us
    # SIGIO, whose default action kills the process: ignore it meanwhile.
    # Only the main thread may do that; elsewhere the answer is unknown.
    previous = _signal.getsignal(_signal.SIGIO)
    if previous is None:
        return None  # set outside Python: we could not put it back
    try:
        _signal.signal(_signal.SIGIO, _signal.SIG_IGN)
    except ValueError:
        return None
    try:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
    except OSError as e:
        return True if e.errno in (errno.EAGAIN, errno.EBUSY) else None
    else:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
        return False
    finally:
        _signal.signal(_signal.SIGIO, previous)


# Below this size the page cache hardly matters to a link, and measuring it
# needs a foreign call (~0.5 ms to set up once, see libc.syscall), so small outputs
# report None: not measured.
CACHE_PROBE_MIN_BYTES = 8 << 20

_NO_CACHESTAT = []  # set once cachestat(2) said ENOSYS: go straight to mincore


def cached_fraction(fd, size):
    """Share of the file's pages in the page cache: cachestat(2), else mincore(2)."""
    if size < CACHE_PROBE_MIN_BYTES:
        return None
    page = os.sysconf("SC_PAGE_SIZE")
    pages = -(-size // page)
    resident = None if _NO_CACHESTAT else pages_cached_cachestat(fd)
    if resident is None:
        resident = pages_cached_mincore(fd, size)
    if resident is None:
        return None
    return min(1.0, resident / pages)


SYS_cachestat = 451  # Linux >= 6.5; the same number on every architecture


def pages_cached_cachestat(fd):
    """nr_cache of cachestat(2) over the whole file, or None where it is missing."""
    from linkwrap import libc
    syscall, c_long, c_uint64, get_errno = libc.syscall()
    rng = (c_uint64 * 2)(0, 0)  # struct cachestat_range {off, len}; len 0 = to the end
    out = (c_uint64 * 5)()      # nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted
    res = syscall(c_long(SYS_cachestat), c_long(fd), rng, out, c_long(0))  # arrays pass as pointers
    if res != 0:
        import errno
        if get_errno() == errno.ENOSYS:
            _NO_CACHESTAT.append(True)
        return None
    return out[0]


def pages_cached_mincore(fd, size):
    """Resident pages of a read-only shared mapping of the file (mincore(2)), or None."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long)
    libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p)
    PROT_READ, MAP_SHARED = 1, 1
    addr = libc.mmap(None, size, PROT_READ, MAP_SHARED, fd, 0)
    if addr is None or addr == ctypes.c_void_p(-1).value:
        return None
    try:
        pages = -(-size // os.sysconf("SC_PAGE_SIZE"))
        vec = ctypes.create_string_buffer(pages)
        if libc.mincore(ctypes.c_void_p(addr), size, vec) != 0:
            return None
        # Only the low bit of each byte is defined: "resident".
        return vec.raw.translate(bytes(i & 1 for i in range(256))).count(1)
    finally:
        libc.munmap(ctypes.c_void_p(addr), size)
