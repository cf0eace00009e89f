"""Entry points that stand in for a cc driver.

linkwrap-cc: Cargo's `linker` (rustc calls it with cc arguments).
linkwrap-launch: CMake's <LANG>_LINKER_LAUNCHER and ninja rule prefixes
(called as `linkwrap-launch <driver> <args...>`).
"""
import sys

# The launcher script linkwrap writes (templates/launcher.py) starts Python with SIGINT ignored, so that
# a ^C while the interpreter starts is never "Fatal Python error: init_…" (Python installs its own
# KeyboardInterrupt handler only over SIG_DFL); it says so here when the caller had not ignored it.
SIGINT_ENV = "LINKWRAP_SIGINT"


def quiet_sigint() -> None:
    """From here until the link path runs, ^C kills this process as it kills cc: quietly, of SIGINT.

    A SIGINT the caller ignored (nohup, `make &` in a script) stays ignored."""
    import _signal
    import os
    held = os.environ.pop(SIGINT_ENV, None) == "default"
    handler = _signal.getsignal(_signal.SIGINT)
    if handler is _signal.default_int_handler or (held and handler == _signal.SIG_IGN):
        _signal.signal(_signal.SIGINT, _signal.SIG_DFL)


def interruptible() -> None:
    """The link path's own ^C handling from here on: KeyboardInterrupt, turned into death by SIGINT
    after what it started is cleaned up (run.py passes it on to the linker)."""
    import _signal
    if _signal.getsignal(_signal.SIGINT) == _signal.SIG_DFL:
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        sys.unraisablehook = _keep_interrupt


_LOST = []  # a ^C that fell where Python could not raise it


def _keep_interrupt(unraisable) -> None:
    """A ^C raised where Python cannot pass an exception on (importlib's weakref callback that drops
    a module lock, while the link path imports; a __del__) would be printed ("Exception ignored
    in …") and lost: kept instead, it is raised by interrupted(), once the link path is imported.
    (Sent again from here, it is raised in this hook at once: another place that cannot raise.)"""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        _LOST.append(1)
    else:
        sys.__unraisablehook__(unraisable)


def interrupted() -> None:
    """Raise KeyboardInterrupt for a ^C that fell in a finaliser since interruptible()."""
    if _LOST:
        raise KeyboardInterrupt


def die_of_sigint():
    import _signal
    import os
    _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
    os.kill(os.getpid(), _signal.SIGINT)
    os._exit(130)


quiet_sigint()


def main() -> None:
    _after_client()
    _run(sys.argv[1:], None)


def launch_main() -> None:
    _after_client()
    from linkwrap.request.invocation import launch_usage
    usage = launch_usage(sys.argv[1:], "linkwrap-launch")
    if usage is not None:
        sys.exit(usage)
    argv = sys.argv[1:]
    argv = argv[1:] if argv[:1] == ["--"] else argv
    _run(argv[1:], argv[0])


def _run(argv, driver) -> None:
    try:
        from linkwrap.request.args import links
        if not links(argv):
            # A compile (`make CC='linkwrap-launch cc'` runs every step here), not a link: the
            # driver itself, before the link path is even imported.
            _exec_driver(argv, driver)
        interruptible()
        from linkwrap.pipeline import main as link
        interrupted()
        code = link(argv, driver=driver)
        quiet_sigint()  # the link is over: a late ^C is a quiet death, not a traceback
    except Exception as e:
        # linkwrap itself is broken (a partial install, a pip upgrade racing the build, a bug):
        # the link exactly as asked, the fault in the log if even that much still imports.
        _as_asked(argv, driver, e)
    except KeyboardInterrupt:
        # ^C before the linker started: die of SIGINT quietly, as an interrupted cc would.
        die_of_sigint()
    # Skip interpreter finalisation (1-3 ms per link): nothing is buffered, the
    # record went out with one os.write, and the linker has been reaped.
    sys.stdout.flush()
    sys.stderr.flush()
    import os
    os._exit(code)


def _as_asked(argv, driver, exc) -> None:
    """Become the driver, with nothing of linkwrap's but this module and os."""
    import os
    quiet_sigint()
    try:
        from linkwrap import faults
        faults.note("starting the link", exc)
    except BaseException:
        pass
    _exec_driver(argv, driver)


def _exec_driver(argv, driver) -> None:
    import os
    driver = driver or os.environ.get("LINKWRAP_CC") or "cc"
    try:
        os.execvp(driver, [driver, *argv])
    # Not errors.error_line(): linkwrap.errors may be the very module that is gone.
    except OSError as e:
        os.write(2, f"linkwrap: error: cannot run {driver}: {e.strerror}\n".encode("utf-8", "replace"))
        os._exit(127)


def _after_client() -> None:
    """The native client (linkwrap/server/client.c) execs this script when no server took the link.

    With none running (or one of another version) a server is started for the next links;
    the link itself runs here, as it always did.
    """
    import os
    why = os.environ.pop("LINKWRAP_SERVER_FALLBACK", None)
    install = os.environ.pop("LINKWRAP_SERVER_INSTALL", None)  # the wheel's client (client.c's wheel_paths)
    if why in ("absent", "version"):
        try:
            from linkwrap.server.start import start_detached
            start_detached(install)
        except Exception as e:  # the server is a saving, never a condition of the link
            from linkwrap import faults
            faults.note("starting the link server", e)
