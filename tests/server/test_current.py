"""A link through the server sees the world as it is now, not as the server or its spare found it:
a configuration edited between two links, a linker installed or removed between them."""
import os
import subprocess

from conftest import tool
from linkrecords import c_object, db_rows

from tests.server.test_server import client, server  # noqa: F401 (fixtures)


def _link(client, tmp_path, env, obj):
    done = subprocess.run([client, obj, "-o", "hello"], cwd=tmp_path, env=env, capture_output=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert subprocess.run([str(tmp_path / "hello")], capture_output=True).stdout == b"hi\n"


def _chosen(home):
    rows = db_rows(home)
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
