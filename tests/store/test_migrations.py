"""Migrations: a blank database and an older one end with exactly the expected schema (llm test_migrate)."""
import sqlite3

from linkwrap.store import db, migrations

EXPECTED_LINKS = {
    "id": "INTEGER", "record_uid": "TEXT", "build_id": "INTEGER", "started_utc": "TEXT",
    "project_dir": "TEXT", "manifest_dir": "TEXT", "cwd": "TEXT", "pid": "INTEGER",
    "output_path": "TEXT", "output_kind": "TEXT", "output_bytes": "INTEGER", "crate_name": "TEXT",
    "crate_kind": "TEXT", "package_name": "TEXT", "primary_package": "INTEGER", "linker": "TEXT",
    "linker_version": "TEXT", "linker_version_text": "TEXT", "linker_path": "TEXT", "asked_fuse_ld": "TEXT",
    "flags_added": "TEXT", "write_mode": "TEXT", "reasons": "TEXT", "fs_type": "TEXT", "fs_options": "TEXT",
    "kernel_release": "TEXT", "nlink_before": "INTEGER", "output_held": "INTEGER", "wall_ms": "REAL",
    "user_ms": "REAL", "sys_ms": "REAL", "peak_rss_kb": "INTEGER", "exit_status": "INTEGER",
    "input_count": "INTEGER", "input_bytes": "INTEGER", "overhead_ms": "REAL", "fell_back": "INTEGER",
    "first_exit_status": "INTEGER", "first_wall_ms": "REAL", "first_command": "TEXT", "fault": "TEXT",
    "driver": "TEXT", "argv": "TEXT", "args_expanded": "TEXT", "command": "TEXT",
    "first_linker": "TEXT", "first_error": "TEXT", "startup_ms": "REAL",
    "predicted_peak_kb": "INTEGER", "prediction_source": "TEXT", "charge_kb": "INTEGER", "charge_how": "TEXT",
    "waited_ms": "REAL", "wait_note": "TEXT", "memory_room_kb": "INTEGER", "jobserver_wait": "TEXT",
    "mem_limit_mb": "INTEGER",
    "linker_start": "TEXT", "entry_point": "TEXT", "compiles": "INTEGER", "spawner_rss_kb": "INTEGER",
}
EXPECTED_BUILDS = {
    "id": "INTEGER", "build_key": "TEXT", "tool": "TEXT", "pid": "INTEGER", "command": "TEXT", "cwd": "TEXT",
    "started_utc": "TEXT", "finished_utc": "TEXT", "wall_ms": "REAL", "exit_status": "INTEGER",
    "last_seen_utc": "TEXT", "project_dir": "TEXT", "build_dir": "TEXT",
}
EXPECTED_INDEXES = {"links_build", "links_started", "builds_last_seen", "builds_project", "bench_results_output"}


def columns(conn, table):
    return {r[1]: r[2] for r in conn.execute(f"PRAGMA table_info({table})")}


def indexes(conn):
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")}


def test_a_blank_database_gets_exactly_the_expected_schema(tmp_path):
    conn = db.connect(str(tmp_path / "links.db"))
    assert columns(conn, "links") == EXPECTED_LINKS
    assert columns(conn, "builds") == EXPECTED_BUILDS
    assert indexes(conn) == EXPECTED_INDEXES
    assert [r[0] for r in conn.execute("SELECT name FROM _linkwrap_migrations ORDER BY name")] == \
        [m.__name__ for m in migrations.MIGRATIONS]
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_every_measure_column_names_its_unit():
    units = ("_ms", "_kb", "_bytes", "_utc", "_count")
    measures = {"wall_ms", "user_ms", "sys_ms", "peak_rss_kb", "output_bytes", "input_bytes",
                "overhead_ms", "first_wall_ms", "started_utc", "input_count", "startup_ms"}
    assert all(c.endswith(units) for c in measures)
    assert measures <= set(EXPECTED_LINKS)


def test_bench_results_columns_name_their_units(tmp_path):
    cols = columns(db.connect(str(tmp_path / "links.db")), "bench_results")
    for c in ("median_ms", "ci_low_ms", "ci_high_ms", "min_ms", "max_ms", "peak_rss_kb", "input_bytes",
              "measured_utc", "linker_mtime_ns"):
        assert c in cols
    assert {"machine_key", "fs_type", "kernel_release", "linker", "variant", "runs", "failed"} <= set(cols)


def test_an_older_database_is_brought_up_to_date_and_keeps_its_rows(tmp_path):
    path = str(tmp_path / "links.db")
    old = sqlite3.connect(path, isolation_level=None)
    old.execute(f"CREATE TABLE {migrations.TABLE} (name TEXT PRIMARY KEY, applied_utc TEXT)")
    migrations.m001_initial(old)  # the schema as the first release left it
    old.execute(f"INSERT INTO {migrations.TABLE} VALUES ('m001_initial', '2026-01-01T00:00:00.000Z')")
    old.execute("INSERT INTO links (record_uid, started_utc, wall_ms) VALUES ('u1', '2026-01-01T00:00:00.000Z', 12.5)")
    old.close()

    conn = db.connect(path)
    assert columns(conn, "links") == EXPECTED_LINKS
    assert indexes(conn) == EXPECTED_INDEXES
    assert conn.execute("SELECT wall_ms FROM links WHERE record_uid = 'u1'").fetchone()[0] == 12.5
    assert migrations.migrate(conn) == []  # nothing left to do, and running again is harmless


def test_a_database_from_before_first_error_gains_the_new_columns_as_null(tmp_path):
    path = str(tmp_path / "links.db")
    old = sqlite3.connect(path, isolation_level=None)
    old.execute(f"CREATE TABLE {migrations.TABLE} (name TEXT PRIMARY KEY, applied_utc TEXT)")
    for fn in (migrations.m001_initial, migrations.m002_indexes):
        fn(old)
        old.execute(f"INSERT INTO {migrations.TABLE} VALUES (?, '2026-01-01T00:00:00.000Z')", (fn.__name__,))
    old.execute("INSERT INTO links (record_uid, started_utc, fell_back, first_exit_status) "
                "VALUES ('u1', '2026-01-01T00:00:00.000Z', 1, 1)")
    old.close()

    conn = db.connect(path)
    assert columns(conn, "links") == EXPECTED_LINKS
    row = conn.execute("SELECT fell_back, first_exit_status, first_error, first_linker, startup_ms FROM links").fetchone()
    assert tuple(row) == (1, 1, None, None, None)
    # m013: whether the driver compiled too is unknown for a link recorded before (never guessed)
    assert conn.execute("SELECT compiles FROM links").fetchone()[0] is None
    # m014: whose peak the figure may be is unknown too
    assert conn.execute("SELECT spawner_rss_kb FROM links").fetchone()[0] is None


def test_m012_finds_again_the_project_of_a_build_run_with_dash_C(tmp_path):
    # Recorded before m012: `ninja -C build` in a CMake source directory got <build>/build as its project.
    src, build = tmp_path / "cm", tmp_path / "cm" / "build"
    build.mkdir(parents=True)
    (build / "CMakeCache.txt").write_text(f"CMAKE_HOME_DIRECTORY:INTERNAL={src}\n")
    path = str(tmp_path / "links.db")
    conn = db.connect(path)
    conn.execute("DELETE FROM _linkwrap_migrations WHERE name = 'm012_project_after_chdir'")
    conn.execute("INSERT INTO builds (build_key, tool, command, cwd, project_dir, build_dir) VALUES "
                 "('k1', 'ninja', 'ninja -C build', ?, ?, ?)",
                 (str(build), str(build / "build"), str(build / "build")))
    conn.execute("INSERT INTO builds (build_key, tool, command, cwd, project_dir, build_dir) VALUES "
                 "('k2', 'ninja', 'ninja', ?, '/kept', '/kept')", (str(build),))
    conn.close()
    conn = db.connect(path)  # migrates
    from linkwrap.store import spool
    spool.backfill_projects(conn)
    rows = dict(conn.execute("SELECT build_key, project_dir FROM builds").fetchall())
    assert rows == {"k1": str(src), "k2": "/kept"}


def test_a_database_from_before_m016_reads_its_bench_results_with_the_load_unknown(tmp_path):
    # bench_results as m005 and m010 left it, with a result in it: opened, migrated, read
    path = str(tmp_path / "links.db")
    old = sqlite3.connect(path, isolation_level=None)
    old.execute(f"CREATE TABLE {migrations.TABLE} (name TEXT PRIMARY KEY, applied_utc TEXT)")
    for fn in migrations.MIGRATIONS[:migrations.MIGRATIONS.index(migrations.m016_bench_load)]:
        fn(old)
        old.execute(f"INSERT INTO {migrations.TABLE} VALUES (?, '2026-01-01T00:00:00.000Z')", (fn.__name__,))
    assert "taken_busy" not in columns(old, "bench_results")
    old.execute("INSERT INTO bench_results (measured_utc, machine_key, linker, variant, median_ms) "
                "VALUES ('2026-01-01T00:00:00Z', 'Some CPU x2', 'mold', 'fresh', 120.5)")
    old.close()

    conn = db.connect(path)
    cols = columns(conn, "bench_results")
    assert (cols["others_cpus"], cols["taken_busy"]) == ("REAL", "INTEGER")
    row = conn.execute("SELECT linker, median_ms, others_cpus, taken_busy FROM bench_results").fetchone()
    assert tuple(row) == ("mold", 120.5, None, None)    # unknown, never guessed
    assert migrations.migrate(conn) == []
