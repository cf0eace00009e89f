"""The server imports, once, everything a link imports: a child serving a link imports nothing.

The child reports the modules it imported during its link (LINKWRAP_TEST_IMPORTS, a test hook
read from the link's environment); every import there is paid by every link through the server.
"""
import os
import subprocess

import pytest

import mounts
from conftest import tool
from linkrecords import c_object, db_rows

from tests.server.test_server import client, server, socket_path, wait_for  # noqa: F401 (fixtures)

HELLO_RS = 'fn main() { println!("hi"); }\n'


def _served(tmp_path, client, env, argv):
    report = tmp_path / "imports.txt"
    if report.exists():
        report.unlink()
    done = subprocess.run([*argv], cwd=tmp_path, capture_output=True, text=True,
                          env={**env, "LINKWRAP_TEST_IMPORTS": str(report)})
    assert done.returncode == 0 and done.stdout == "" and done.stderr == "", done.stderr
    wait_for(lambda: report.exists() and report.read_text().endswith("--\n"), "the child's import report")
    return [m for m in report.read_text().splitlines() if m != "--"]


CASES = {
    # name: (environment additions, linkwrap.toml, C or Rust)
    "c-mold-direct": ({"LINKWRAP_LINKER": "mold"}, None, "c"),
    "c-driver-start": ({"LINKWRAP_LINKER": "mold", "LINKWRAP_DIRECT": "0"}, None, "c"),
    "c-wild": ({"LINKWRAP_LINKER": "wild"}, None, "c"),
    "c-learn-on": ({}, None, "c"),  # linkwrap chooses: relinks teach (bench/learn.py)
    "c-admission-on": ({"LINKWRAP_LINKER": "mold"}, "[memory]\nadmission = true\n", "c"),
    "c-saved": ({"LINKWRAP_LINKER": "mold", "LINKWRAP_SAVE": "1"}, None, "c"),
    "rust": ({"LINKWRAP_LINKER": "mold"}, None, "rust"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_link_served_by_a_child_imports_no_module(tmp_path, lw_home, client, server, case):  # noqa: F811
    extra, toml, lang = CASES[case]
    if extra.get("LINKWRAP_LINKER") == "wild":
        tool("wild")  # found through PATH, as linkwrap finds it
    env = {**os.environ, **extra}
    if toml:
        (tmp_path / "linkwrap.toml").write_text(toml)
        (tmp_path / ".git").mkdir()  # the project file's search ends here
    if lang == "c":
        obj = c_object(tmp_path, body='#include <stdio.h>\nint main(void){puts("hi");return 0;}\n')
        argv = [client, obj, "-o", "hello"]
    else:
        (tmp_path / "hello.rs").write_text(HELLO_RS)
        argv = [tool("rustc"), "-C", f"linker={client}", "-o", "hello", "hello.rs"]
    # The first link fills linkwrap's caches (linker versions, the driver's expansion); the second
    # is a rebuild over an existing output. Neither may import.
    for _ in range(2):
        assert _served(tmp_path, client, env, argv) == []
        assert subprocess.run([str(tmp_path / "hello")], capture_output=True).stdout == b"hi\n"
    rows = db_rows(lw_home)
    assert {r["entry_point"] for r in rows} == {"server"} and len(rows) == 2
    want_start = "driver" if extra.get("LINKWRAP_DIRECT") == "0" else "direct"
    assert {r["linker_start"] for r in rows} == {want_start}
    if toml:
        assert all(r["prediction_source"] for r in rows)


def test_a_mount_made_between_two_server_links_is_seen_by_the_second(tmp_path, lw_home, client, server):  # noqa: F811
    """The spares keep the mount table they read before they wait (filesystems.keep_mountinfo()): a mount
    made while they wait is seen by the link they serve."""
    obj = c_object(tmp_path)
    env = {**os.environ, "LINKWRAP_LINKER": "mold"}
    out = tmp_path / "out"
    out.mkdir()
    assert _served(tmp_path, client, env, [client, obj, "-o", "out/hello"]) == []
    with mounts.tmpfs_mount(out) as point:
        assert _served(tmp_path, client, env, [client, obj, "-o", os.path.join(point, "hello")]) == []
        assert subprocess.run([os.path.join(point, "hello")]).returncode == 0
    rows = db_rows(lw_home)
    assert [r["entry_point"] for r in rows] == ["server", "server"]
    assert rows[0]["fs_type"] not in (None, "tmpfs") and rows[1]["fs_type"] == "tmpfs"
