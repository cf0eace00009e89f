"""Reading the small text files the kernel makes (/proc, /sys, cgroup files): os.read, no io layer,
None when unreadable. Below every probe."""
import os




def _read(path, limit=1 << 20):
    """A small (kernel-made) text file, or None. os.read: no io-layer cost."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return _read_fd(fd, limit)
    finally:
        os.close(fd)


def _read_fd(fd, limit=1 << 20):
    try:
        chunks, total = [], 0
        while total < limit:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks).decode("utf-8", "surrogateescape")
    except OSError:
        return None


def _try(fact, *args):
    # A fact we cannot learn is unknown, never a failed link.
    try:
        return fact(*args)
    except Exception:
        return None
