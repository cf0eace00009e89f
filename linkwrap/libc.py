"""The two system calls Python's os module lacks, made callable without `import ctypes`: syscall(2)
(facts/probe.py's cachestat) and renameat2's RENAME_EXCHANGE (run/output.py's commit, and the state
files evidence/ rewrites after a link: replace_file). Below every stage: it knows no link."""
import os

_SYSCALL = []  # (syscall, c_long, c_uint64, get_errno), made once per process


def syscall():
    """libc's syscall(2), callable from Python.

    Built on _ctypes, the C half of ctypes: ~0.5 ms, where `import ctypes`
    costs 1.5-3 ms (it defines every C type and imports struct). Should this
    interpreter's _ctypes not fit, the ctypes module does the same.
    """
    if not _SYSCALL:
        try:
            import _ctypes

            class c_long(_ctypes._SimpleCData):
                _type_ = "l"

            class c_uint64(_ctypes._SimpleCData):
                _type_ = "Q"

            class Syscall(_ctypes.CFuncPtr):
                _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
                _restype_ = c_long

            class Libc:
                _handle = _ctypes.dlopen(None, os.RTLD_NOW)  # the process itself: libc is in it

            _SYSCALL.append((Syscall(("syscall", Libc)), c_long, c_uint64, _ctypes.get_errno))
        except Exception:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            _SYSCALL.append((libc.syscall, ctypes.c_long, ctypes.c_uint64, ctypes.get_errno))
    return _SYSCALL[0]


# renameat2(2)'s number where it is known; elsewhere run/output.py's commit() renames.
RENAMEAT2 = {"x86_64": 316, "aarch64": 276, "riscv64": 276}.get(os.uname().machine)
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def can_exchange() -> bool:
    return bool(_SYSCALL) and RENAMEAT2 is not None


def exchange(new, old, dir_fd=None) -> bool:
    """Swap the names new and old atomically (renameat2 RENAME_EXCHANGE). -> False when not
    done (no old output, no such call here, a filesystem without it): then rename().

    ext4 (auto_da_alloc) allocates a file's delayed blocks and starts their writeback when a
    rename replaces another file, inside the rename: 0.28 ms for a new 4 MB file here, where the
    exchange takes 0.015. GNU ld (unlink, then write) and mold (its old output renamed away and
    back) never rename over a file either. Only where the call is set up already (the server
    does it once): setting it up costs a link more than it saves."""
    if not can_exchange():
        return False
    syscall, c_long, _, _ = _SYSCALL[0]
    at = _AT_FDCWD if dir_fd is None else dir_fd
    return syscall(c_long(RENAMEAT2), c_long(at), os.fsencode(new), c_long(at),
                   os.fsencode(old), c_long(_RENAME_EXCHANGE)) == 0


def replace_file(tmp, target, dir_fd=None) -> None:
    """os.replace(tmp, target) for a small state file rewritten after a link (the memory history, a
    relink's evidence), by exchange where that is set up (the server's child): ext4 starts the
    writeback of a file renamed over another inside the rename (exchange). Measured right after
    real links of the example's build script, in one process set up as the server's child: the
    history's keep() 0.50 ms by rename, 0.19 ms by exchange and unlink (medians of 30). Readers see
    the old file or the new one, as with a rename. Unlike that rename, nothing starts the new
    contents' writeback: after a crash of the machine they may read as empty (a state file's loss,
    never a link's), and a crash of this process between the exchange and the unlink leaves the old
    contents under the tmp name. tmp and target: names in directory fd dir_fd, when given."""
    if exchange(tmp, target, dir_fd):
        try:
            os.unlink(tmp, dir_fd=dir_fd)  # now the old contents
        except OSError:
            pass
        return
    os.replace(tmp, target, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)

