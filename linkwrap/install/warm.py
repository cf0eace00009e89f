"""What the first build's first link would find out, found by `linkwrap install` (issue 33).

On a new install the first link paid ~0.5 s of linkwrap's own time before the warm server ran:
finding the linkers on PATH and asking each its version (~265 ms here, cached in linkers.marshal
after), then starting Python and the server. install knows the entry point it wrote, so it does both
now, off the build: the linkers' answers go into the same cache the link reads (keyed on each
binary's stamp, so a linker installed later is still seen), and the server of that entry point is
started detached, as the first link would start it. Best effort: a failure here is noted in the
fault log and the first link does it, as before. LINKWRAP_SERVER=off starts no server.
"""
import os
import shutil


def first_build(value: str, environ=os.environ) -> None:
    """Warm the caches and start the server for builds that run `value` (a path or a bare name)."""
    from linkwrap import faults
    try:
        from linkwrap.facts import linkers
        linkers.discover(environ=environ)
    except Exception as e:  # a warm cache is a saving, never a condition of the install
        faults.note("finding the linkers at install", e)
    if environ.get("LINKWRAP_SERVER") == "off":
        return
    try:
        install = server_install(value, environ)
        if install is not False:
            from linkwrap.server.start import start_detached
            start_detached(install)  # a server already serving this world exits at once (lifetime.claim)
            listening(install)
    except Exception as e:
        faults.note("starting the link server at install", e)


# `install && cargo build` on a busy machine: the build's first link came before the server listened
# (it fell back to Python and paid ~200 ms). A bounded wait here, once, costs the install that instead.
WAIT_S = 2.0


def listening(install) -> bool:
    """Wait (at most WAIT_S) until the server's socket for this world is bound; -> whether it is."""
    import time
    from linkwrap.server import lifetime
    name = lifetime.socket_name(lifetime.world_key(install))
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            dfd = lifetime.open_run_dir()
        except OSError:
            dfd = None
        if dfd is not None:
            try:
                os.stat(name, dir_fd=dfd, follow_symlinks=False)
                return True
            except OSError:
                pass
            finally:
                os.close(dfd)
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def server_install(value: str, environ=os.environ):
    """The install id the server for the native client `value` runs as: the wheel client's (named by
    its directory), None for the client compiled under the state dir (this interpreter's own id),
    False when value is no native client of this linkwrap (a Python script talks to no server; another
    environment's client to a server of its own code, which this one must not start)."""
    from linkwrap.install import launcher
    from linkwrap.server import lifetime
    path = value if os.sep in value else shutil.which(value, path=environ.get("PATH", os.defpath))
    if not path or not launcher.is_elf(path):
        return False
    if launcher.wheel_script(path):
        ours = launcher.installed_client(os.path.basename(path))
        if ours and os.path.realpath(ours) == os.path.realpath(path):
            return lifetime.wheel_install_id(path)
        return False
    return None if launcher.in_state_dir(path) else False
