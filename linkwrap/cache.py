"""Small marshal caches in linkwrap's cache dir (linker versions, parsed config).

marshal because it is built in and fast to import on the link path. A cache
that is missing, corrupt or of another format reads as empty; one that cannot
be written only costs the next link the work again.
"""
import marshal
import os

from linkwrap import paths


def load(name: str, fmt: int) -> dict:
    """The cache `name` if it holds format `fmt`, else {"format": fmt}.

    A cache names the linkers every link runs and the flags it passes them: one
    that another user could have written is not used (and said once)."""
    path = os.path.join(paths.cache_dir(), name)
    sub, base = os.path.split(name)
    dfd = None
    try:
        if sub:  # a shard: its directory is opened without following a link, and must be private
            try:
                dfd = paths.open_private_dir(os.path.dirname(path))
            except OSError as e:
                import errno
                if isinstance(e, PermissionError) or e.errno == errno.ELOOP:  # not private, a symlink
                    _refuse(path)
                return {"format": fmt}  # else not there (or a file where a directory goes)
        fd = os.open(base if sub else path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return {"format": fmt}
    finally:
        if dfd is not None:
            os.close(dfd)
    try:
        if paths.others_can_write(os.fstat(fd)) or not sub and _not_private(os.path.dirname(path)):
            _refuse(path)
            return {"format": fmt}
        # loads() of one read: marshal.load(f) reads a file object a few bytes at a time (58 ms
        # for a 1200-row cache here, against ~1 ms), and a file object costs its io layers.
        data = marshal.loads(read_all(fd))
        if isinstance(data, dict) and data.get("format") == fmt:
            return data
    except (OSError, EOFError, ValueError, TypeError):
        pass
    finally:
        os.close(fd)
    return {"format": fmt}


def _not_private(directory) -> bool:
    """directory is a symlink (lstat: not followed), not a directory, or others could write in it."""
    import stat
    st = os.lstat(directory)
    return not stat.S_ISDIR(st.st_mode) or paths.others_can_write(st)


def _refuse(path) -> None:
    from linkwrap import faults
    faults.warn_once("unsafe-cache", f"{path} or its directory can be written by other users: not used "
                                     f"(linkwrap makes its own directories 0700)")


def store(name: str, data: dict) -> bool:
    """Replace the cache atomically (concurrent links read old or new, never half). -> whether it was
    written. A name in a subdirectory (a shard) is written through that directory's fd: made 0700,
    never followed through a link, refused when it is not private."""
    root = paths.cache_dir()
    sub, base = os.path.split(name)
    dfd = None
    try:
        paths.make_private_dir(root)
        if _not_private(root):
            return False
        if sub:
            dfd = paths.open_private_dir(os.path.join(root, sub), create=True)
        dst = base if sub else os.path.join(root, name)
        tmp = f"{dst}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
        with open(fd, "wb") as f:
            marshal.dump(data, f)
        os.replace(tmp, dst, src_dir_fd=dfd, dst_dir_fd=dfd)
        return True
    except (OSError, ValueError):
        return False
    finally:
        if dfd is not None:
            os.close(dfd)


def read_all(fd) -> bytes:
    """Everything from fd's current offset to its end (os.read returns at most what it was asked)."""
    chunks = []
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def stamp(path):
    """What says that a file or directory changed (followed through symlinks); None when missing."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def stamps(paths) -> tuple:
    """((path, stamp), ...) for unchanged() to check later."""
    return tuple((p, stamp(p)) for p in paths)


def unchanged(stamped) -> bool:
    """Whether every path of stamps() is as it was (an entry made or removed changes a directory)."""
    for path, was in stamped:
        if stamp(path) != was:
            return False
    return True
