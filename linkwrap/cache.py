"""Small marshal caches in linkwrap's cache dir (linker versions, parsed config).

marshal because it is built in and fast to import on the link path. A cache
that is missing, corrupt or of another format reads as empty; one that cannot
be written only costs the next link the work again.
"""
import marshal
import os

from linkwrap import paths


def load(name: str, fmt: int) -> dict:
    """The cache `name` if it holds format `fmt`, else {"format": fmt}."""
    try:
        with open(os.path.join(paths.cache_dir(), name), "rb") as f:
            # loads(read()): marshal.load(f) reads a file object a few bytes at a time (58 ms for
            # a 1200-row cache here, against ~1 ms).
            data = marshal.loads(f.read())
        if isinstance(data, dict) and data.get("format") == fmt:
            return data
    except (OSError, EOFError, ValueError, TypeError):
        pass
    return {"format": fmt}


def store(name: str, data: dict) -> None:
    """Replace the cache atomically (concurrent links read old or new, never half)."""
    target = os.path.join(paths.cache_dir(), name)
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = f"{target}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            marshal.dump(data, f)
        os.replace(tmp, target)
    except (OSError, ValueError):
        pass
