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


def _ppid(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _premade_by_spares(directory, server):
    """The private directories waiting spares of that server made ahead in directory (output.premake)."""
    top = os.path.join(str(directory), ".linkwrap-tmp")
    names = os.listdir(top) if os.path.isdir(top) else []
    return [n for n in names if _ppid(int(n.split("-")[0])) == server and not os.listdir(os.path.join(top, n))]


def test_the_next_spare_rehearses_the_last_link_and_makes_its_directory_ahead(tmp_path, lw_home, client,  # noqa: F811
                                                                              server):  # noqa: F811
    env = env_with(tmp_path)
    obj = c_object(tmp_path, body=HI)
    _link(client, tmp_path, env, obj)
    # A spare forked after the answer rehearsed this link (its request handed to the server while the
    # linker ran), and made the private directory a link to the same output needs.
    wait_for(lambda: _premade_by_spares(tmp_path, server), "a spare's directory beside the last output")
    _link(client, tmp_path, env, obj)
    assert [r["linker_start"] for r in db_rows(lw_home)] == ["direct", "direct"]
    stop_servers(lw_home)
    # The spares take theirs with them.
    wait_for(lambda: not os.path.exists(tmp_path / ".linkwrap-tmp"), "the spares' directories' removal")


def test_an_input_recompiled_with_lto_between_two_server_links_keeps_the_driver(tmp_path, lw_home, client,  # noqa: F811
                                                                                server):  # noqa: F811
    env = env_with(tmp_path)
    obj = c_object(tmp_path, body=HI)
    _link(client, tmp_path, env, obj)
    wait_for(lambda: _premade_by_spares(tmp_path, server), "a spare that rehearsed the link")
    subprocess.run(["cc", "-flto", "-c", "hello.c", "-o", "hello.o"], cwd=tmp_path, check=True)
    _link(client, tmp_path, env, obj)
    rows = sorted(db_rows(lw_home), key=lambda r: (r["started_utc"], r["id"]))
    assert [(r["entry_point"], r["linker_start"]) for r in rows] == [("server", "direct"), ("server", "driver")]


def test_a_mount_made_over_the_output_directory_between_two_server_links_is_seen(tmp_path, lw_home, client,  # noqa: F811
                                                                                 server):  # noqa: F811
    env = env_with(tmp_path)
    obj = c_object(tmp_path, body=HI)
    out = tmp_path / "tmpfs" / "hello"
    out.parent.mkdir()

    def link_there():
        done = subprocess.run([client, obj, "-o", str(out)], cwd=tmp_path, env=env, capture_output=True)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        assert subprocess.run([str(out)], capture_output=True).stdout == b"hi\n"

    link_there()
    wait_for(lambda: _premade_by_spares(out.parent, server), "a spare that rehearsed the link")
    with mounts.tmpfs_mount(tmp_path):
        link_there()
        stop_servers(lw_home)
        wait_for(lambda: not os.path.exists(out.parent / ".linkwrap-tmp"), "the spares' directories' removal")
    rows = sorted(db_rows(lw_home), key=lambda r: (r["started_utc"], r["id"]))
    assert rows[1]["fs_type"] == "tmpfs" != rows[0]["fs_type"]
    # The directory a spare had made beside the first output, hidden by the mount when that spare
    # went: its owner is gone, and the next link there removes it.
    subprocess.run([client, obj, "-o", str(out)], cwd=tmp_path, env=env, check=True)
    wait_for(lambda: not os.path.exists(out.parent / ".linkwrap-tmp"), "the dead spare's directory swept")
