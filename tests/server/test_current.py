"""A link through the server sees the world as it is now, not as the server or its spare found it:
a configuration edited between two links, a linker installed or removed between them, an input
recompiled with LTO, a mount made over the output's directory. The spare that serves a link rehearsed
the last one and kept what it found (args, linkers, the direct line, the private directory)."""
import os
import subprocess

import mounts
from conftest import stop_servers, tool
from linkrecords import c_object, db_rows

from tests.server.test_server import client, env_with, server, wait_for  # noqa: F401 (fixtures)


def _link(client, tmp_path, env, obj):
    done = subprocess.run([client, obj, "-o", "hello"], cwd=tmp_path, env=env, capture_output=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert subprocess.run([str(tmp_path / "hello")], capture_output=True).stdout == b"hi\n"


def _chosen(home):
    # In the order the links started: each child writes its record after its answer, at nice 19, and
    # the next link's child may write first.
    rows = sorted(db_rows(home), key=lambda r: (r["started_utc"], r["id"]))
    assert {r["entry_point"] for r in rows} == {"server"}
    return [r["linker"] for r in rows]


def _env(tmp_path, bindir=None):
    # No LINKWRAP_LINKER: linkwrap.toml chooses. No wild unless the test puts it in bindir.
    path = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep) if not os.path.exists(os.path.join(d, "wild")))
    env = {k: v for k, v in os.environ.items() if k != "LINKWRAP_LINKER"}
    env["PATH"] = f"{bindir}{os.pathsep}{path}" if bindir else path
    return env


def test_a_configuration_edited_between_two_server_links_is_seen_by_the_second(tmp_path, lw_home, client,  # noqa: F811
                                                                              server):  # noqa: F811
    (tmp_path / ".git").mkdir()  # the project file's search ends here
    toml = tmp_path / "linkwrap.toml"
    obj = c_object(tmp_path, body='#include <stdio.h>\nint main(void){puts("hi");return 0;}\n')
    env = _env(tmp_path)
    toml.write_text('prefer = ["lld"]\n')
    _link(client, tmp_path, env, obj)
    st = toml.stat()
    # The same size, and the same mtime: only the content (and the change time) tells them apart.
    toml.write_text('prefer = ["bfd"]\n')
    os.utime(toml, ns=(st.st_atime_ns, st.st_mtime_ns))
    _link(client, tmp_path, env, obj)
    assert _chosen(lw_home) == ["lld", "bfd"]


def test_a_linker_installed_and_removed_between_server_links_is_seen(tmp_path, lw_home, client,  # noqa: F811
                                                                    server):  # noqa: F811
    (tmp_path / ".git").mkdir()
    (tmp_path / "linkwrap.toml").write_text('prefer = ["wild", "mold"]\n')
    bindir = tmp_path / "bin"
    bindir.mkdir()
    obj = c_object(tmp_path, body='#include <stdio.h>\nint main(void){puts("hi");return 0;}\n')
    env = _env(tmp_path, bindir)
    _link(client, tmp_path, env, obj)
    os.symlink(tool("wild"), bindir / "wild")
    _link(client, tmp_path, env, obj)
    os.unlink(bindir / "wild")
    _link(client, tmp_path, env, obj)
    assert _chosen(lw_home) == ["mold", "wild", "mold"]


HI = '#include <stdio.h>\nint main(void){puts("hi");return 0;}\n'


def _back_waiting(env, links):
    """Wait until the children of the first `links` links are back waiting, or gone (their notes:
    LINKWRAP_TEST_STATE, which env sets)."""
    path = env["LINKWRAP_TEST_STATE"]
    wait_for(lambda: os.path.exists(path) and len(open(path).read().splitlines()) >= links,
             "the child of the last link back waiting")


def _left(directory):
    """What links left in directory's .linkwrap-tmp (private directories)."""
    top = directory / ".linkwrap-tmp"
    return os.listdir(top) if top.exists() else []


def test_a_link_leaves_nothing_beside_its_output_while_the_server_lives(tmp_path, lw_home, client,  # noqa: F811
                                                                          server):  # noqa: F811
    env = env_with(tmp_path, LINKWRAP_TEST_STATE=str(tmp_path / "state.log"))
    obj = c_object(tmp_path, body=HI)
    _link(client, tmp_path, env, obj)
    _back_waiting(env, 1)
    # The child that served it waits for the next link with what it kept, and made nothing ahead
    # beside the output: the caller may remove that directory as soon as it has the answer.
    assert _left(tmp_path) == []
    _link(client, tmp_path, env, obj)
    assert [r["linker_start"] for r in db_rows(lw_home)] == ["direct", "direct"]
    stop_servers(lw_home)
    wait_for(lambda: _left(tmp_path) == [], "nothing of the links' left beside the output")


def test_an_input_recompiled_with_lto_between_two_server_links_keeps_the_driver(tmp_path, lw_home, client,  # noqa: F811
                                                                                server):  # noqa: F811
    env = env_with(tmp_path, LINKWRAP_TEST_STATE=str(tmp_path / "state.log"))
    obj = c_object(tmp_path, body=HI)
    _link(client, tmp_path, env, obj)
    _back_waiting(env, 1)  # a process that kept this link's answers waits: they must not hold now
    subprocess.run(["cc", "-flto", "-c", "hello.c", "-o", "hello.o"], cwd=tmp_path, check=True)
    _link(client, tmp_path, env, obj)
    rows = sorted(db_rows(lw_home), key=lambda r: (r["started_utc"], r["id"]))
    assert [(r["entry_point"], r["linker_start"]) for r in rows] == [("server", "direct"), ("server", "driver")]


def test_a_mount_made_over_the_output_directory_between_two_server_links_is_seen(tmp_path, lw_home, client,  # noqa: F811
                                                                                 server):  # noqa: F811
    env = env_with(tmp_path, LINKWRAP_TEST_STATE=str(tmp_path / "state.log"))
    obj = c_object(tmp_path, body=HI)
    out = tmp_path / "tmpfs" / "hello"
    out.parent.mkdir()

    def link_there():
        done = subprocess.run([client, obj, "-o", str(out)], cwd=tmp_path, env=env, capture_output=True)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        assert subprocess.run([str(out)], capture_output=True).stdout == b"hi\n"

    link_there()
    _back_waiting(env, 1)  # a process that kept this link's filesystem waits: it must not hold now
    with mounts.tmpfs_mount(tmp_path):
        link_there()
        stop_servers(lw_home)
        wait_for(lambda: not os.path.exists(out.parent / ".linkwrap-tmp"), "nothing left beside the output")
    rows = sorted(db_rows(lw_home), key=lambda r: (r["started_utc"], r["id"]))
    assert rows[1]["fs_type"] == "tmpfs" != rows[0]["fs_type"]
