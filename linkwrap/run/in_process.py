"""IN PROCESS: linkwrap's own linker run in a fork of the warm server's child, not as a new program.

A patch of an incremental relink is a few milliseconds of work behind a new interpreter's start
(~60 ms here: python, site, linkwrap's imports) and the driver's and collect2's (~15 ms): a refusal
of a small link measured 100-150 ms through `cc -B<shim>`, 13-15 ms in a fork of a process that had
already imported the linker (47 ms with the imports still to do). The server imports, once, every
module a link may import (server/warm.link_imports follows the lazy import below), so the fork
starts with the linker loaded; the child runs linkwrap.ld.__main__.run on the linker's own command
line (direct.py) with the link's environment and output files, and exits with its status: to the
caller it is the same process boundary as a spawn (its own pid to forward signals to, wait4's
figures, its stdout and stderr captured), which is what keeps the server a host of the linker, not
its owner. Only where the linker found is this interpreter's own (its script beside sys.executable:
the same linkwrap): another install's linkwrap-ld runs as the program it is.
"""
import os
import sys
import time


def runs_here(info) -> bool:
    """linkwrap-ld at info.path is this interpreter's script: the same linkwrap as this process."""
    path = getattr(info, "path", None)
    return bool(path) and os.path.dirname(path) == os.path.dirname(sys.executable)


def spawn(argv, env, forward=None, meanwhile=None):
    """run.spawn's contract, for linkwrap's own linker: -> (returncode, wall_ms, user_ms, sys_ms,
    peak_rss_kb, stdout, stderr, spawner_rss_kb). The child's peak RSS counts this process's pages
    it was forked with: spawner_rss_kb says how much (the record then shows an "at most")."""
    from linkwrap.run.capture import own_peak_kb, waited
    out_fd = os.memfd_create("linkwrap-stdout", os.MFD_CLOEXEC)
    err_fd = os.memfd_create("linkwrap-stderr", os.MFD_CLOEXEC)
    try:
        spawner_kb = own_peak_kb()
        started = time.perf_counter_ns()
        pid = os.fork()
        if pid == 0:
            _child(argv, env, out_fd, err_fd)   # never returns
        return waited(pid, started, out_fd, err_fd, spawner_kb, forward, meanwhile)
    finally:
        os.close(out_fd)
        os.close(err_fd)


def _child(argv, env, out_fd, err_fd):
    code = 70
    try:
        import signal
        # what a new program would start with: default dispositions (the server's child handles
        # SIGTERM and SIGCHLD its own way; Python ignores SIGPIPE and SIGXFSZ), Ctrl-C as
        # KeyboardInterrupt (the linker's own 130)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        sys.stdout = open(1, "w", closefd=False, errors="surrogateescape")
        sys.stderr = open(2, "w", closefd=False, errors="backslashreplace")
        os.environ.clear()
        os.environ.update(env)
        sys.argv = list(argv)
        from linkwrap.ld.__main__ import run as ld
        kept = []   # the link's records, never freed one by one: os._exit below
        code = ld(list(argv[1:]), keep=kept)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException as e:   # a bug: one line, as the program would say it, and a failure
        try:
            os.write(2, f"linkwrap-ld: internal error: {type(e).__name__}: {e}\n".encode("utf-8", "replace"))
        except OSError:
            pass
        code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        os._exit(code if isinstance(code, int) else 1)
