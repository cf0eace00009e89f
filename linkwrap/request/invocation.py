"""What one link is, handed to every stage, and what its end asks of the process that runs it.

A link runs either in a process of its own (the linkwrap-cc script) or in a child the warm
link server forks for it (linkwrap/server/). So a stage learns the link's arguments,
environment, working directory, caller and private-directory owner from the Invocation,
never from the process; and how the link ends -- an exit status, becoming the driver (exec),
dying of the signal that interrupted it -- is a result the entry point acts on, since only
the script may exec or die in place of its caller.
"""
import os
import sys  # built in, already loaded
from linkwrap.records import record


class Invocation(record("Invocation", [
    "argv",        # tuple[str]: the link's arguments (without the driver)
    "driver",      # str | None: the driver named by the launcher; None: $LINKWRAP_CC or cc
    "environ",     # mapping: the caller's environment
    "cwd",         # str: the caller's working directory
    "caller_pid",  # int: the process the build started (linkwrap-cc, or the native client)
    "owner",       # str | None: owner tag of the link's private directory (None: this process's)
    "entry",       # "script" | "server": how the link reached linkwrap (recorded)
    "reached_ns",  # int | None: perf_counter_ns when the server took the link (None: the process start)
    "reaps",       # bool: the process running the link is a child subreaper that waits for a forking
                   # linker's worker after the answer (the server's child); the script must exit to answer
], (False,))):
    __slots__ = ()


class Exec(record("Exec", "argv env")):
    """Become argv (the link exactly as asked): the script execs it, the client does."""
    __slots__ = ()


class Killed(record("Killed", "signal")):
    """The link was interrupted by this signal: die of it, as an interrupted cc would."""
    __slots__ = ()


def disabled(environ) -> bool:
    """LINKWRAP_DISABLE set to 1, yes, true or on (any case): the link runs exactly as asked."""
    return environ.get("LINKWRAP_DISABLE", "").strip().lower() in ("1", "yes", "true", "on")


def current(argv, driver=None, environ=os.environ) -> Invocation:
    """The link this process was started for."""
    return Invocation(tuple(argv), driver, environ, os.getcwd(), os.getpid(), None, "script", None)


def act(result) -> int:
    """Carry out a link's result in this process; -> the exit status when it returns."""
    if isinstance(result, Exec):
        try:
            os.execvpe(result.argv[0], list(result.argv), dict(result.env))
        except OSError as e:
            os.write(2, f"linkwrap: error: cannot run {result.argv[0]}: {e.strerror}\n".encode())
            return 127
    if isinstance(result, Killed):
        die(result.signal)
    return result


def die(sig) -> None:
    """Exit the conventional way for a command stopped by this signal."""
    import _signal  # not `signal`: that one imports enum (~3 ms)
    try:
        _signal.signal(sig, _signal.SIG_DFL)
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
    except (ValueError, OSError):
        pass
    os._exit(128 + sig)


# linkwrap-launch's own command line (the script, `linkwrap launch`, and the server's 'L' request
# read it alike): a launcher that was given no driver is not a link.
LAUNCH_USAGE = ("usage: linkwrap-launch [--] <compiler driver> <link arguments...>\n"
                "Links through linkwrap: the driver (cc, c++, gcc…) and its whole link\n"
                "command line, as CMake's <LANG>_LINKER_LAUNCHER and ninja link rules pass them.\n")


def launch_usage(argv, prog):
    """For -h/--help, --version or no driver: say so; -> the exit status. None: a link to run."""
    argv = argv[1:] if argv[:1] == ["--"] else argv
    if argv[:1] in (["-V"], ["--version"]):
        from linkwrap import __version__
        sys.stdout.write(f"{prog} (linkwrap {__version__})\n")
        return 0
    if argv and argv[0] not in ("-h", "--help"):
        return None
    (sys.stdout if argv else sys.stderr).write(LAUNCH_USAGE.replace("linkwrap-launch", prog))
    return 0 if argv else 2
