"""links.db that is corrupt, read-only, locked or on a full disk: commands say so once, keep the records."""
import contextlib
import os
import sqlite3
import subprocess
import sys
import textwrap
import time

from users import other_user  # noqa: F401 (fixture)

from linkwrap.store import db, spool
from linkwrap.record import record


def frame(uid):
    return record.encode({"v": 1, "uid": uid, "started_unix": 1_800_000_000.0, "build_key": "k", "wall_ms": 1.0})


def spool_some(state, *uids):
    for uid in uids:
        record.append(state, frame(uid))


def uids(conn):
    return sorted(r[0] for r in conn.execute("SELECT record_uid FROM links"))


@contextlib.contextmanager
def read_only_bind(path):
    """The file itself becomes read-only (a real ro bind mount); the directory stays writable."""
    subprocess.run(["mount", "-o", "bind,ro", path, path], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", path], check=True)


def test_a_corrupt_database_is_moved_aside_and_recording_goes_on(lw_home):
    state = str(lw_home)
    (lw_home / "links.db").write_bytes(b"this is not sqlite" * 100)
    spool_some(state, "a", "b")
    said = []
    conn = db.open_store(warn=said.append)
    assert uids(conn) == ["a", "b"]
    assert len(said) == 1 and "corrupt" in said[0]
    aside = [n for n in os.listdir(state) if n.startswith("links.db.corrupt-")]
    assert len(aside) == 1 and (lw_home / aside[0]).read_bytes().startswith(b"this is not sqlite")
    # Said once: the next command finds a good database and says nothing.
    said.clear()
    assert uids(db.open_store(warn=said.append)) == ["a", "b"] and said == []


def test_a_read_only_database_shows_what_it_has_and_keeps_new_records_in_the_spool(lw_home):
    state = str(lw_home)
    spool_some(state, "old")
    db.open_store().close()
    spool_some(state, "new1", "new2")
    with read_only_bind(str(lw_home / "links.db")):
        said = []
        conn = db.open_store(warn=said.append)
        assert uids(conn) == ["old"]
        assert len(said) == 1 and "spool" in said[0]
        conn.close()
        assert spool.pending(state) > 0
    # Writable again: nothing was lost.
    assert uids(db.open_store()) == ["new1", "new2", "old"]
    assert spool.pending(state) == 0


HOLDER = textwrap.dedent("""
    import sqlite3, sys, time
    c = sqlite3.connect(sys.argv[1], isolation_level=None)
    c.execute("BEGIN EXCLUSIVE")
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
""")


def test_a_locked_database_waits_its_busy_timeout_then_keeps_records_for_later(lw_home):
    state = str(lw_home)
    db.open_store().close()
    spool_some(state, "x")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lw_home / "links.db"), "8"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        said = []
        conn = db.open_store(warn=said.append)
        assert uids(conn) == []
        assert len(said) == 1 and "locked" in said[0]
    finally:
        holder.kill()
        holder.wait()
    assert uids(db.open_store()) == ["x"]


def test_a_full_disk_keeps_the_records_in_the_spool(lw_home, tmp_path, monkeypatch):
    sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
    import mounts
    with mounts.tmpfs_mount(tmp_path, "size=512k") as point:
        state = os.path.join(point, "state")
        monkeypatch.setenv("LINKWRAP_HOME", state)
        os.makedirs(state)
        db.open_store().close()
        spool_some(state, *[f"r{i}" for i in range(20)])
        filler = os.open(os.path.join(point, "filler"), os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(filler, b"\0" * 4096)
        except OSError as e:
            assert e.errno == 28  # ENOSPC: the disk is full now
        finally:
            os.close(filler)
        said = []
        conn = db.open_store(warn=said.append)
        assert uids(conn) == []
        # SQLite says "full" or, when it cannot even make its -shm file, "disk I/O error": once either way
        assert len(said) == 1 and ("full" in said[0] or "disk I/O error" in said[0]), said
        assert spool.pending(state) > 0
        conn.close()
        os.unlink(os.path.join(point, "filler"))
        assert len(uids(db.open_store())) == 20


def test_builds_recorded_before_projects_are_given_theirs_when_the_store_opens(lw_home, tmp_path):
    from linkwrap.store import migrations
    ws = tmp_path / "ws"
    (ws / "crate" / "src").mkdir(parents=True)
    (ws / "Cargo.toml").write_text('[workspace]\nmembers = ["crate"]\n')
    (ws / "crate" / "Cargo.toml").write_text('[package]\nname = "crate"\nversion = "0.1.0"\n')
    path = str(lw_home / db.DB_NAME)
    old = sqlite3.connect(path, isolation_level=None)
    old.execute(f"CREATE TABLE {migrations.TABLE} (name TEXT PRIMARY KEY, applied_utc TEXT)")
    for fn in migrations.MIGRATIONS:
        if fn.__name__ == "m008_project":
            break
        fn(old)
        old.execute(f"INSERT INTO {migrations.TABLE} VALUES (?, '2026-01-01T00:00:00.000Z')", (fn.__name__,))
    old.execute("INSERT INTO builds (id, build_key, tool, command, cwd) VALUES (1, 'cargo:1', 'cargo', "
                "'cargo build', ?), (2, 'pid:9', 'unknown', NULL, NULL)", (str(ws / "crate"),))
    now = spool.utc_iso(time.time())  # recent: older records may be trimmed as the store opens
    old.execute("INSERT INTO links (record_uid, build_id, started_utc, cwd, output_path) VALUES "
                "('u1', 1, ?, ?, ?), ('u2', 2, ?, NULL, 'x')",
                (now, str(ws / "crate"), str(ws / "target" / "debug" / "deps" / "crate-1"), now))
    old.close()
    conn = db.open_store()
    rows = dict(conn.execute("SELECT id, project_dir FROM builds").fetchall())
    # The workspace root for the cargo build; '' (every project's, never asked again) when nothing says.
    assert rows == {1: str(ws), 2: ""}
    assert spool.backfill_projects(conn) == 0


def test_linkwrap_home_that_is_a_file_is_one_error_line(tmp_path, monkeypatch, hello_obj):
    import subprocess
    from conftest import script
    home = tmp_path / "home"
    home.write_text("not a directory")
    monkeypatch.setenv("LINKWRAP_HOME", str(home))
    expected = (f"LINKWRAP_HOME={home} is not a directory (linkwrap keeps its link records, cache and "
                "configuration there)")
    for argv in (["summary"], ["log", "status"], ["report", "--html", str(tmp_path / "r.html")]):
        proc = subprocess.run([script("linkwrap"), *argv], capture_output=True, text=True)
        assert proc.returncode == 1 and proc.stderr.endswith(f"linkwrap: error: {expected}\n"), proc.stderr
    link = subprocess.run([script("linkwrap-cc"), str(hello_obj), "-o", "prog"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert link.returncode == 0
    assert link.stderr == (f"linkwrap: warning: cannot record links: {expected}; links are not affected; "
                           "said once (see `linkwrap log status`)\n")
    from linkwrap import faults
    [marker] = faults.fallback_markers(str(home))  # said once for this build, remembered in /tmp
    assert os.path.basename(marker).split("-")[3] == "ENOTDIR"
    os.unlink(marker)


def test_lock_files_made_directories_are_named_and_links_still_pass(lw_home, tmp_path, hello_obj):
    """A lock turned into a directory is said as that lock, not as the spool it guards."""
    from linkrecords import cc_link, lw
    locks = {name: lw_home / name for name in ("links.lock", "tidying.lock", "memory-history.lock")}
    for path in locks.values():
        path.mkdir()
    link = cc_link([str(hello_obj), "-o", "prog"], tmp_path)
    assert (link.returncode, link.stdout, link.stderr) == (0, "", "")
    assert subprocess.run([str(tmp_path / "prog")]).returncode == 0
    shown = lw("summary")
    assert shown.stderr.splitlines() == [
        f"linkwrap: warning: {locks['tidying.lock']} is not a regular file, so it cannot be a lock: "
        "links through the link server are not waited for; remove it",
        f"linkwrap: warning: new link records stay in the spool for now: {locks['links.lock']}: Is a directory"]
    assert (lw_home / record.SPOOL).stat().st_size > 0  # kept for when the lock is a lock again
    status = lw("log", "status")
    assert status.stderr.splitlines() == shown.stderr.splitlines()
    [waiting] = [line for line in status.stdout.splitlines() if line.startswith("Waiting in the spool")]
    assert waiting.endswith("(not in the database yet: the warning above says why)"), waiting  # not the database's fault
    locks["links.lock"].rmdir()
    said = []
    conn = db.open_store(warn=said.append)
    assert [r[0] for r in conn.execute("SELECT output_path FROM links")] == [str(tmp_path / "prog")]
    assert said[1:] == [f"the memory model is not refitted: {locks['memory-history.lock']}: Is a directory"]


def test_another_users_history_lock_is_named_when_the_model_is_refitted(lw_home, other_user):
    lock = lw_home / "memory-history.lock"
    lock.write_bytes(b"")
    os.chown(lock, other_user[1], other_user[2])
    spool_some(str(lw_home), "a")
    said = []
    assert uids(db.open_store(warn=said.append)) == ["a"]
    assert said == [f"the memory model is not refitted: {lock}: not this user's regular file: not used"]


def test_a_state_dir_links_cannot_record_in_is_said_by_the_reading_commands(lw_home, tmp_path, hello_obj):
    """rustc drops a passed link's stderr, where the link says its record is lost: summary and log
    status say it, as long as it lasts (chmod 0500, links and commands without root's power over it)."""
    from conftest import script
    unprivileged = ["setpriv", "--bounding-set=-all", "--inh-caps=-all"]

    def run(*argv):
        return subprocess.run([*unprivileged, *argv], capture_output=True, text=True, cwd=tmp_path,
                              env={**os.environ, "TMPDIR": str(tmp_path)})
    lw_home.chmod(0o500)
    assert run(script("linkwrap-cc"), str(hello_obj), "-o", "prog").returncode == 0
    said = (f"linkwrap: warning: links cannot be recorded in {lw_home} (no write permission): they pass, "
            "but their records are lost until it is writable\n")
    for argv in (["summary"], ["log", "status"]):
        done = run(script("linkwrap"), *argv)
        assert (done.returncode, done.stderr) == (0, said), argv
    lw_home.chmod(0o700)
    assert run(script("linkwrap"), "summary").stderr == ""


def test_a_read_only_state_dir_is_said_as_such_by_the_reading_commands(tmp_path, monkeypatch):
    import mounts
    with mounts.tmpfs_mount(tmp_path, "ro,size=1m") as point:
        monkeypatch.setenv("LINKWRAP_HOME", point)
        said = []
        db.open_store(warn=said.append)
        assert said == [f"links cannot be recorded in {point} (a read-only file system): they pass, but their "
                        "records are lost until it is writable"]
