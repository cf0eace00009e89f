"""Starting a link server in the background, from a link that found none (cc.py)."""
import os
import sys

# The server closes every inherited fd before anything else: a build's pipes and jobserver
# fds held open by a long-lived process would keep the build waiting for EOF.
_BOOT = ("import os; os.closerange(3, 1 << 16); import sys; sys.path.insert(0, {parent!r}); "
         "from linkwrap.server.server import main; main()")


def start_detached(install=None) -> int:
    """Spawn `python -I -S` running server.main() in its own session, stdio on /dev/null. -> its pid.

    install: the wheel client's install (lifetime.adopt_install) the server is to listen for."""
    import linkwrap
    parent = os.path.dirname(os.path.dirname(os.path.abspath(linkwrap.__file__)))
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    try:
        actions = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LINKWRAP_SERVER", "MAKEFLAGS",
                                                                           "CARGO_MAKEFLAGS", "MFLAGS"))}
        if install:
            env["LINKWRAP_SERVER_INSTALL"] = install
        import _signal
        return os.posix_spawn(sys.executable, [sys.executable, "-I", "-S", "-c", _BOOT.format(parent=parent)],
                              env, file_actions=actions, setsid=True,
                              setsigdef=(_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGPIPE))
    finally:
        os.close(null)
