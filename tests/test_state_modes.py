"""linkwrap's state under umask 000 and another user's hands (issue 10, item 3): what every link
runs or trusts (the entry point, the -B shim, the caches) is never writable by others, and a
cache that others could have written is not used."""
import os
import stat
import subprocess

from conftest import script
from linkwrap import cache
from users import other_user  # noqa: F401


def _writable_by_others(root):
    bad = []
    for d, dirs, files in os.walk(root):
        for n in [d, *(os.path.join(d, f) for f in files)]:
            st = os.lstat(n)
            if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o022:
                bad.append(f"{n} {stat.S_IMODE(st.st_mode):o}")
    return bad


def test_umask_000_makes_nothing_others_can_write(tmp_path, lw_home, hello_obj):
    def umask0():
        os.umask(0)
    (lw_home / "config").mkdir()
    (lw_home / "config" / "linkwrap.toml").write_text("prefer = [\"mold\", \"bfd\"]\n")
    os.chmod(lw_home / "config" / "linkwrap.toml", 0o644)
    for argv in ([script("linkwrap-cc"), str(hello_obj), "-o", "prog"],
                 [script("linkwrap-cc"), "/nonexistent.o", "-o", "prog"],  # a failed link
                 [script("linkwrap"), "summary"]):
        subprocess.run(argv, cwd=tmp_path, capture_output=True, preexec_fn=umask0, check=False)
    from linkwrap.install import launcher
    old = os.umask(0)
    try:
        entry = launcher.fast_script("linkwrap-cc")
    finally:
        os.umask(old)
    made = {os.path.relpath(os.path.join(d, n), lw_home) for d, _, files in os.walk(lw_home) for n in files}
    assert {"cache/linkers.marshal", "cache/config.marshal", "links.db"} <= made
    assert any(p.startswith("cache/shim/") for p in {os.path.relpath(d, lw_home) for d, _, _ in os.walk(lw_home)})
    assert os.access(entry, os.X_OK)
    assert _writable_by_others(lw_home) == []


def test_a_cache_others_can_write_is_not_used(lw_home, other_user):
    cache.store("t.marshal", {"format": 1, "linker": "/usr/bin/ld"})
    path = lw_home / "cache" / "t.marshal"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    os.chmod(path, 0o666)
    assert cache.load("t.marshal", 1) == {"format": 1}
    os.chmod(path, 0o600)
    assert cache.load("t.marshal", 1)["linker"] == "/usr/bin/ld"
    os.chown(path, other_user[1], other_user[2])
    assert cache.load("t.marshal", 1) == {"format": 1}
    os.chown(path, 0, 0)
    os.chmod(lw_home / "cache", 0o777)
    assert cache.load("t.marshal", 1) == {"format": 1}


def test_a_shim_directory_others_can_write_is_refused_and_the_link_runs_as_asked(tmp_path, lw_home, hello_obj):
    env = {**os.environ, "LINKWRAP_LINKER": "bfd"}
    proc = subprocess.run([script("linkwrap-cc"), str(hello_obj), "-o", "prog"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == ""
    shim = lw_home / "cache" / "shim"
    os.chmod(shim, 0o777)
    proc = subprocess.run([script("linkwrap-cc"), str(hello_obj), "-o", "prog"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0
    assert proc.stderr == (f"linkwrap: warning: {shim} can be written by other users: linking as asked "
                           "until it is removed (linkwrap makes its own directories 0700)\n")
    assert subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True).stdout == "hello\n"


def test_status_names_an_entry_point_others_can_write(lw_home):
    from linkwrap.install import launcher
    entry = launcher.fast_script("linkwrap-cc")
    assert launcher.problem(entry) is None
    os.chmod(os.path.dirname(entry), 0o777)
    assert "can be written by other users" in launcher.problem(entry)
    launcher.fast_script("linkwrap-cc")  # install again: mended
    assert launcher.problem(entry) is None


def test_links_db_and_its_wal_and_shm_are_0600(lw_home):
    from linkwrap.store import db
    old = os.umask(0o022)
    try:
        conn = db.connect()
        conn.execute("SELECT count(*) FROM links").fetchone()
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in lw_home.glob("links.db*")}
        conn.close()
        assert modes == {"links.db": 0o600, "links.db-wal": 0o600, "links.db-shm": 0o600}, modes
        # One left 0644 by an older linkwrap is tightened.
        os.chmod(lw_home / "links.db", 0o644)
        db.connect().close()
        assert stat.S_IMODE((lw_home / "links.db").stat().st_mode) == 0o600
    finally:
        os.umask(old)


def test_a_linkwrap_home_in_another_users_directory_links_as_asked_touching_nothing(tmp_path, hello_obj,
                                                                                    other_user):
    """Issue 31: its owner could change the shims and caches every link trusts. The link runs as asked,
    with one warning naming the directory, and nothing is read or written there (no record, no cache)."""
    shared = tmp_path / "shared"
    home = shared / "lw"
    home.mkdir(parents=True)
    os.chown(shared, other_user[1], other_user[2])
    env = {**os.environ, "LINKWRAP_HOME": str(home), "LINKWRAP_LINKER": "bfd"}
    proc = subprocess.run([script("linkwrap-cc"), str(hello_obj), "-o", "prog"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == (f"linkwrap: warning: {shared} is owned by user {other_user[0]} and writable by them: "
                           "linkwrap's state not used; linking as asked (set LINKWRAP_HOME to a directory of "
                           "your own)\n")
    assert os.listdir(home) == []
    assert subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True).stdout == "hello\n"
