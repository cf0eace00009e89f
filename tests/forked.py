"""fn() in a forked child of the test process, its result sent back through a pipe: for what must
run in a process of its own (a spare's rehearsal, a child subreaper as the server's child is)."""
import marshal
import os


def in_a_fork(fn, subreaper=False):
    """-> fn()'s result (marshal-able), run in a forked child; subreaper: the child is made a child
    subreaper first (orphaned descendants become its children, as in the server's child)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            if subreaper:
                import ctypes
                assert ctypes.CDLL(None).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
            os.write(w, marshal.dumps(fn()))
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return marshal.loads(data)
