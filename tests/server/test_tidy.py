"""The server's child answers as soon as the output is in place, then tidies: records, memory
history, evidence, the private directory and the old output's last name.

To see the order, the test holds the spool's lock (record.append takes it), so a child that has
answered cannot finish its record until the test lets go."""
import os
import subprocess
import threading

from linkrecords import c_object, db_rows

from tests.server.test_server import client, env_with, no_link_debris, server, wait_for  # noqa: F401 (fixtures)
from startstop import ITEMS_C, MAIN_C

SAY = '#include <stdio.h>\nint main(void){{puts("{}");return 0;}}\n'


def test_the_client_returns_before_the_record_and_readers_wait_for_it(tmp_path, lw_home, client,  # noqa: F811
                                                                      server):  # noqa: F811
    env = env_with(tmp_path)
    old = c_object(tmp_path, "old", SAY.format("old"))
    new = c_object(tmp_path, "new", SAY.format("new"))
    assert subprocess.run([client, old, "-o", "app"], cwd=tmp_path, env=env).returncode == 0
    os.link(tmp_path / "app", tmp_path / "app-kept")  # another name of the last good binary
    old_ino = os.stat(tmp_path / "app").st_ino
    assert len(db_rows(lw_home)) == 1

    spool = os.open(lw_home / "links.spool", os.O_RDWR | os.O_CREAT, 0o600)
    os.lockf(spool, os.F_LOCK, 0)
    rows = []
    try:
        # capture_output reads the client's stdout and stderr to their end, as rustc does: this
        # returns only when every holder of those pipes let go of them.
        done = subprocess.run([client, new, "-o", "app"], cwd=tmp_path, env=env, capture_output=True,
                              timeout=120)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        assert subprocess.run([str(tmp_path / "app")], capture_output=True).stdout == b"new\n"
        assert subprocess.run([str(tmp_path / "app-kept")], capture_output=True).stdout == b"old\n"
        # The old output still has its name in the link's private directory (the rename freed
        # nothing), until the child tidies.
        work = tmp_path / ".linkwrap-tmp"
        held = [os.path.join(r, f) for r, _, fs in os.walk(work) for f in fs]
        assert [os.stat(p).st_ino for p in held] == [old_ino]
        assert os.stat(tmp_path / "app-kept").st_nlink == 2
        reader = threading.Thread(target=lambda: rows.extend(db_rows(lw_home)))
        reader.start()
        reader.join(1.0)
        assert reader.is_alive(), "a reader went on while a link was still writing its record"
    finally:
        os.lockf(spool, os.F_ULOCK, 0)
        os.close(spool)
    reader.join(60)
    assert [r["entry_point"] for r in rows] == ["server", "server"]
    assert rows[1]["exit_status"] == 0 and rows[1]["overhead_ms"] >= 0
    assert no_link_debris(tmp_path)
    assert os.stat(tmp_path / "app-kept").st_nlink == 1
    assert subprocess.run([str(tmp_path / "app-kept")], capture_output=True).stdout == b"old\n"


def test_a_relink_through_the_server_frees_the_old_output_after_answering(tmp_path, lw_home, client,  # noqa: F811
                                                                         server):  # noqa: F811
    """No other name: the old inode's last name is the one in the private directory, removed after."""
    env = env_with(tmp_path)
    for i in range(3):
        obj = c_object(tmp_path, f"v{i}", SAY.format(f"v{i}"))
        assert subprocess.run([client, obj, "-o", "app"], cwd=tmp_path, env=env).returncode == 0
        assert subprocess.run([str(tmp_path / "app")], capture_output=True).stdout == f"v{i}\n".encode()
    assert len(db_rows(lw_home)) == 3
    assert os.stat(tmp_path / "app").st_nlink == 1
    assert no_link_debris(tmp_path)


def test_a_warning_after_the_answer_is_kept_for_a_link_that_can_say_it(tmp_path, lw_home, client,  # noqa: F811
                                                                       server, linkwrap_cc):  # noqa: F811
    """The record cannot be written (the spool is a directory): the server's child has answered by
    then, with nobody to hear a warning, so it is not marked as said; the next script link says it."""
    (lw_home / "links.spool").mkdir()
    env = env_with(tmp_path)
    obj = c_object(tmp_path, "v", SAY.format("v"))
    done = subprocess.run([client, obj, "-o", "app"], cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, b"")
    wait_for(lambda: no_link_debris(tmp_path), "the child's tidying")
    assert not [n for n in os.listdir(lw_home) if n.startswith(".warned-")]
    done = subprocess.run([linkwrap_cc, obj, "-o", "app"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr.count("linkwrap: warning: cannot record links") == 1, done.stderr




def test_a_linkers_failure_is_kept_before_the_answer(tmp_path, lw_home, client, server):  # noqa: F811
    """lld fails on this link (-z start-stop-gc; tests/test_pipeline_retry.py) and the link passes
    as asked. The next link of the output, started as soon as the first answered, while the first's
    child cannot tidy (the spool is locked), must not try lld again."""
    (tmp_path / "a.c").write_text(MAIN_C)
    (tmp_path / "b.c").write_text(ITEMS_C)
    subprocess.run(["gcc", "-c", "a.c", "b.c"], cwd=tmp_path, check=True)
    (tmp_path / "linkwrap.toml").write_text('forbid = ["mold", "wild"]\n')  # lld first of the static order
    env = {k: v for k, v in os.environ.items() if k != "LINKWRAP_LINKER"}
    spool = os.open(lw_home / "links.spool", os.O_RDWR | os.O_CREAT, 0o600)
    os.lockf(spool, os.F_LOCK, 0)
    try:
        for i in range(2):
            done = subprocess.run([client, "-Wl,--gc-sections", "-o", "loop", "a.o", "b.o"], cwd=tmp_path, env=env,
                                  capture_output=True, timeout=120)
            assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), (i, done.stderr)
            assert subprocess.run([str(tmp_path / "loop")], capture_output=True).stdout == b"3\n"  # startstop: 1 + 2
    finally:
        os.lockf(spool, os.F_ULOCK, 0)
        os.close(spool)
    rows = db_rows(lw_home)
    assert [r["entry_point"] for r in rows] == ["server", "server"]
    # Both records wait for the spool: in either order. Only one of the two links tried lld.
    tried = [(r["first_linker"] or r["linker"] or "").startswith("lld") for r in rows]
    assert sorted(tried) == [False, True], [(r["linker"], r["first_linker"]) for r in rows]
    assert sorted(bool(r["fell_back"]) for r in rows) == [False, True]
