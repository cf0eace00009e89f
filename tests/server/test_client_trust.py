"""The native client trusts no directory another user could change (issue 31, item 1): it is what
builds exec before any Python runs. Once linkwrap's home or its bin/ is another user's, the client
neither connects to a socket in run/ nor execs the script under bin/ -- which that user could have
swapped for their own -- and links with the system's cc itself.

The attacker's pieces are real: a listener at the socket the client would reach (it records the
connection and hangs up, so the client falls back at once) and, in place of the Python entry point,
a script that leaves a mark. The same setup with the directories ours shows that both are reached."""
import os
import socket
import subprocess
import threading

import pytest

from linkwrap.install import launcher
from linkwrap.server import server
from users import other_user, reachable_dir  # noqa: F401

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="plays another user: needs root to chown")


@pytest.fixture
def home(reachable_dir, monkeypatch):
    home = os.path.join(reachable_dir, "lw")
    os.mkdir(home, 0o700)
    monkeypatch.setenv("LINKWRAP_HOME", home)
    return home


def _listen(home):
    """A listener where the client connects; -> (socket, list of connections seen)."""
    run = os.path.join(home, "run")
    os.close(server.open_run_dir(create=True))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(os.path.join(run, server.socket_name(server.world_key())))
    sock.listen(8)
    seen = []

    def serve():
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            seen.append(conn.recv(4))
            conn.close()
    threading.Thread(target=serve, daemon=True).start()
    return sock, seen


def _link(entry, tmp_path, hello_obj):
    env = {k: v for k, v in os.environ.items() if k not in ("LINKWRAP_SERVER", "LINKWRAP_CC")}
    return subprocess.run([entry, str(hello_obj), "-o", str(tmp_path / "prog")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("handed", [".", "bin"])
def test_a_directory_handed_to_another_user_is_neither_connected_nor_execed_through(
        tmp_path, home, hello_obj, other_user, handed):
    entry = launcher.fast_script("linkwrap-cc")
    assert open(entry, "rb").read(4) == b"\x7fELF", "the native client did not compile"
    mark = tmp_path / "their-script-ran"
    script = launcher.script_path("linkwrap-cc")
    with open(script, "w") as f:  # what the other user would put there
        f.write(f"#!/bin/sh\necho ran > {mark}\nexit 3\n")
    sock, seen = _listen(home)
    try:
        # Ours: the client reaches both (and the planted script fails the link).
        done = _link(entry, tmp_path, hello_obj)
        assert seen == [b"LWC3"] and mark.exists() and done.returncode == 3, done.stderr
        mark.unlink()
        seen.clear()

        where = os.path.normpath(os.path.join(home, handed))
        os.chown(where, other_user[1], other_user[2])
        done = _link(entry, tmp_path, hello_obj)
    finally:
        sock.close()
    assert done.returncode == 0, done.stderr
    assert seen == [] and not mark.exists()
    assert done.stderr == (f"linkwrap: warning: {where} is owned by uid {other_user[1]}: linkwrap's directory "
                           "not used; linking without linkwrap (set LINKWRAP_HOME to a directory of your own and "
                           "run `linkwrap install` again)\n")
    assert subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True).stdout == "hello\n"


def test_a_sticky_directory_above_linkwrap_home_is_trusted(tmp_path, reachable_dir, monkeypatch, hello_obj):
    """/tmp-like: only an entry's owner can rename it, so a home of ours in it is used."""
    sticky = os.path.join(reachable_dir, "tmp")
    os.mkdir(sticky)
    os.chmod(sticky, 0o1777)
    monkeypatch.setenv("LINKWRAP_HOME", os.path.join(sticky, "lw"))
    entry = launcher.fast_script("linkwrap-cc")
    mark = tmp_path / "script-ran"
    with open(launcher.script_path("linkwrap-cc"), "w") as f:
        f.write(f"#!/bin/sh\necho ran > {mark}\nexec cc \"$@\"\n")
    env = {**os.environ, "LINKWRAP_SERVER": "off"}
    done = subprocess.run([entry, str(hello_obj), "-o", str(tmp_path / "prog")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert mark.exists()
