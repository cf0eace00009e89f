"""What a link does after its answer, made visible to the readers of the records.

Owns: TIDYING, the lock file in the state directory that each server child holds shared from its
answer until its record, memory history and evidence are written; opening it (and /dev/null) while
the linker runs, not on the answer's path (_ahead_of_the_answer); and the readers' side
(wait_for_tidying(), called by store.db before it reads the records).
May import: the standard library and linkwrap.paths alone: store.db imports this module without
any other of the server's.
"""
import os


# Links that answered and still write their records hold a shared flock on this file in the state
# directory; readers of the records (store.db.open_store) take it exclusively, for a bounded time.
TIDYING = "tidying.lock"
TIDYING_WAIT_S = 10.0


_tidying = []  # TIDYING, opened ahead of the answer (_tidying_file): between the result and the answer, only the lock
_null = []  # /dev/null, opened ahead of the answer


def _ahead_of_the_answer() -> None:
    """While the linker runs: what the answer needs opened (run.WHILE_LINKING)."""
    if not _tidying:
        _tidying.append(_tidying_file())
    if not _null:
        _null.append(os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC))


def _tidying_file():
    """TIDYING in this link's state directory (the client's environment names it), opened; None when it cannot be."""
    from linkwrap import paths
    try:
        state = paths.state_dir()
        paths.make_private_dir(state)
        return os.open(os.path.join(state, TIDYING), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None


def _tidying_lock():
    """This child's shared hold on TIDYING until it exits; None when it cannot be had."""
    import fcntl
    fd = _tidying.pop() if _tidying else _tidying_file()
    if fd is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError:
        os.close(fd)
        return None
    return fd


def wait_for_tidying(state, timeout=TIDYING_WAIT_S) -> bool:
    """Wait until no link under state is still writing what it did after answering its client
    (its record, memory history, evidence), at most timeout seconds. -> True when none is."""
    import fcntl
    import time
    try:
        fd = os.open(os.path.join(state, TIDYING), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return True  # no server ever linked here
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False  # links that never stop coming: read what is there
                time.sleep(0.005)
    finally:
        os.close(fd)
