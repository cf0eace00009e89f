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
    that another user could have written, or in a directory another user could change, is not used
    (and said once)."""
    path = os.path.join(paths.cache_dir(), name)
    try:  # its directory, and every one above, checked by fd (paths.open_trusted_dir)
        dfd = paths.open_trusted_dir(os.path.dirname(path))
    except paths.UntrustedDir as e:
        _refuse(f"{e}: {path} not used")
        return {"format": fmt}
    except OSError:  # not there (or a file where a directory goes)
        return {"format": fmt}
    try:
        fd = os.open(os.path.basename(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return {"format": fmt}
    finally:
        os.close(dfd)
    try:
        if paths.others_can_write(os.fstat(fd)):
            _refuse(f"{path} can be written by other users: not used")
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


def _refuse(why) -> None:
    from linkwrap import faults
    faults.warn_once("unsafe-cache", f"{why} (linkwrap makes its own directories 0700)")


def store(name: str, data: dict) -> bool:
    """Replace the cache atomically (concurrent links read old or new, never half). -> whether it was
    written. Written through its directory's fd (a shard's too): made 0700, never through a link,
    refused when it or one above is not trusted (paths.open_trusted_dir)."""
    path = os.path.join(paths.cache_dir(), name)
    try:
        dfd = paths.open_trusted_dir(os.path.dirname(path), create=True)
    except OSError:  # UntrustedDir too: load() says so
        return False
    try:
        base = os.path.basename(path)
        tmp = f"{base}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
        with open(fd, "wb") as f:
            marshal.dump(data, f)
        os.replace(tmp, base, src_dir_fd=dfd, dst_dir_fd=dfd)
        return True
    except (OSError, ValueError):
        return False
    finally:
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
