"""Numbered schema migrations for links.db (simonw/llm style).

MIGRATIONS is the ordered list; each is a function m<NNN>_<what>(db) run once,
inside the transaction that records its name in _linkwrap_migrations.
Never edit an applied migration: add the next one. Column names carry units.
"""
MIGRATIONS = []


def migration(fn):
    MIGRATIONS.append(fn)
    return fn

TABLE = "_linkwrap_migrations"


@migration
def m001_initial(db):
    db.execute("""
        CREATE TABLE builds (
            id INTEGER PRIMARY KEY,
            build_key TEXT NOT NULL UNIQUE,   -- see linkwrap.facts.build
            tool TEXT,                        -- cargo | ninja | make | linkwrap run | ...
            pid INTEGER,
            command TEXT,
            cwd TEXT,
            started_utc TEXT,                 -- known for `linkwrap run`, else the first link's
            finished_utc TEXT,
            wall_ms REAL,                     -- the whole build, when known (linkwrap run)
            exit_status INTEGER,
            last_seen_utc TEXT                -- latest link or end of run: "the last build"
        )""")
    db.execute("""
        CREATE TABLE links (
            id INTEGER PRIMARY KEY,
            record_uid TEXT NOT NULL UNIQUE,  -- makes ingestion idempotent
            build_id INTEGER REFERENCES builds(id),
            started_utc TEXT NOT NULL,        -- ISO 8601, milliseconds, Z
            project_dir TEXT,
            manifest_dir TEXT,
            cwd TEXT,
            pid INTEGER,
            output_path TEXT,
            output_kind TEXT,                 -- pie | exec | shared | static | ...
            output_bytes INTEGER,
            crate_name TEXT,                  -- or the output's file name outside Cargo
            crate_kind TEXT,                  -- bin | build-script | proc-macro | test | cdylib | executable | shared-library
            package_name TEXT,
            primary_package INTEGER,
            linker TEXT,                      -- mold | lld | bfd | ... | "as asked"
            linker_version TEXT,
            linker_version_text TEXT,
            linker_path TEXT,
            asked_fuse_ld TEXT,
            flags_added TEXT,                 -- JSON list
            write_mode TEXT,                  -- fresh | in-place
            reasons TEXT,                     -- JSON list of sentences
            fs_type TEXT,
            fs_options TEXT,
            kernel_release TEXT,
            nlink_before INTEGER,
            output_held INTEGER,
            wall_ms REAL,
            user_ms REAL,
            sys_ms REAL,
            peak_rss_kb INTEGER,
            exit_status INTEGER,
            input_count INTEGER,
            input_bytes INTEGER,
            overhead_ms REAL,
            fell_back INTEGER NOT NULL DEFAULT 0,
            first_exit_status INTEGER,
            first_wall_ms REAL,
            first_command TEXT,               -- JSON list
            fault TEXT,
            driver TEXT,
            argv TEXT,                        -- JSON list, as received (replay)
            args_expanded TEXT,               -- JSON list, when argv used @files
            command TEXT                      -- JSON list, what was run
        )""")


@migration
def m002_indexes(db):
    db.execute("CREATE INDEX links_build ON links(build_id)")
    db.execute("CREATE INDEX links_started ON links(started_utc)")
    db.execute("CREATE INDEX builds_last_seen ON builds(last_seen_utc)")


@migration
def m003_first_attempt_and_startup(db):
    # Why a fall-back's first attempt failed, and the start-up that overhead_ms cannot see.
    db.execute("ALTER TABLE links ADD COLUMN first_linker TEXT")  # e.g. "mold 1.10.1"
    db.execute("ALTER TABLE links ADD COLUMN first_error TEXT")   # one line of its stderr, <= 300 chars
    db.execute("ALTER TABLE links ADD COLUMN startup_ms REAL")    # process start -> pipeline.main, +-5 ms


@migration
def m004_store_counts(db):
    # Counters of the store itself: records the spool held that were malformed and skipped.
    db.execute("CREATE TABLE store_counts (name TEXT PRIMARY KEY, value INTEGER NOT NULL)")
    db.execute("INSERT INTO store_counts (name, value) VALUES ('rejected_records', 0)")


@migration
def m005_bench_results(db):
    # `linkwrap bench`: one row per candidate (linker and variant) of one replayed link.
    db.execute("""
        CREATE TABLE bench_results (
            id INTEGER PRIMARY KEY,
            measured_utc TEXT NOT NULL,       -- ISO 8601, Z
            machine_key TEXT NOT NULL,        -- CPU model and usable CPUs (linkwrap.evidence.measured)
            fs_type TEXT,                     -- filesystem the outputs were written to
            kernel_release TEXT,
            project_dir TEXT,                 -- the link's working directory
            output_path TEXT,
            output_key TEXT,                  -- output_path without Cargo's hash
            output_kind TEXT,                 -- pie | exec | shared | ...
            input_bytes INTEGER,
            linker TEXT NOT NULL,             -- mold | wild | lld | rust-lld | bfd | gold | python
            linker_label TEXT,                -- "mold 1.10.1"
            linker_path TEXT,
            linker_mtime_ns INTEGER,          -- a measurement counts only while the binary is unchanged
            variant TEXT NOT NULL,            -- fresh | in-place | no-mmap
            median_ms REAL,
            ci_low_ms REAL,                   -- 95 % confidence interval of the median
            ci_high_ms REAL,
            min_ms REAL,
            max_ms REAL,
            peak_rss_kb INTEGER,
            runs INTEGER,
            failed TEXT,                      -- the first error line of a candidate that failed
            rounds INTEGER,
            load_avg_1m REAL                  -- how busy the machine was when the bench ended
        )""")
    db.execute("CREATE INDEX bench_results_output ON bench_results(output_key)")


@migration
def m006_memory(db):
    # Links that fit in memory (linkwrap/choice/admission.py): the prediction, what the link added, the wait.
    for column in ("predicted_peak_kb INTEGER",   # what the link was predicted to add to its memory group
                   "prediction_source TEXT",      # output | model | default
                   "charge_kb INTEGER",           # what it added, estimated from its peak RSS (charge_how)
                   "charge_how TEXT",             # peak RSS | peak RSS less mapped inputs
                   "waited_ms REAL",              # time spent waiting for memory; NULL: admission was off
                   "wait_note TEXT",              # why it ran without fitting: alone, or the wait bound
                   "memory_room_kb INTEGER",      # the room when it was admitted
                   "jobserver_wait TEXT",         # what was done with the build's jobserver slot while waiting
                   "mem_limit_mb INTEGER"):       # the memory limit that applied (cgroup), if any
        db.execute(f"ALTER TABLE links ADD COLUMN {column}")


@migration
def m007_link_start(db):
    # How the link was started: linker_start direct (the linker itself) | driver (through cc);
    # entry_point script (a process per link) | server (forked by the warm link server).
    db.execute("ALTER TABLE links ADD COLUMN linker_start TEXT")
    db.execute("ALTER TABLE links ADD COLUMN entry_point TEXT")


@migration
def m008_project(db):
    # The project a build belongs to (linkwrap.facts.build.project_of), set when it is ingested:
    # what `summary`, `report` and `log status` are scoped to.
    db.execute("ALTER TABLE builds ADD COLUMN project_dir TEXT")  # Cargo workspace root, CMake source dir, ninja file's dir
    db.execute("ALTER TABLE builds ADD COLUMN build_dir TEXT")    # Cargo target dir, CMake build dir, ninja file's dir
    db.execute("CREATE INDEX builds_project ON builds(project_dir)")


@migration
def m010_bench_paired_ratio(db):
    # `linkwrap bench`: each candidate's time over the caller's default's in the same round (paired).
    for column in ("ratio_vs TEXT",         # the linker the ratios are to (the caller's default)
                   "ratio_median REAL",     # median of the per-round ratios
                   "ratio_ci_low REAL",     # its 95 % confidence interval (order statistics)
                   "ratio_ci_high REAL"):
        db.execute(f"ALTER TABLE bench_results ADD COLUMN {column}")


@migration
def m012_project_after_chdir(db):
    # `ninja -C build` / `make -C dir`: the tool's /proc cwd is already the -C directory, and the project
    # was taken from <it>/<DIR> (a project nobody is in). Found again from their first link when read.
    db.execute("UPDATE builds SET project_dir = NULL, build_dir = NULL "
               "WHERE tool IN ('ninja', 'samu', 'make', 'gmake') AND command LIKE '% -C%'")


@migration
def m013_compiles(db):
    # The link's driver compiled sources too (make's `$(CXX) -o $@ $<`): its wall_ms is compile and
    # link, so summary keeps it out of the linking share and learning never times a linker by it.
    db.execute("ALTER TABLE links ADD COLUMN compiles INTEGER")  # 1, 0, or NULL (recorded before m013)


@migration
def m014_spawner_rss(db):
    # The peak RSS of the process that started the linker (posix_spawn: the kernel folds it into the
    # linker's ru_maxrss at its exec). A peak_rss_kb at or below it is an upper bound, not the linker's.
    db.execute("ALTER TABLE links ADD COLUMN spawner_rss_kb INTEGER")


@migration
def m015_unreadable_records(db):
    # Records the spool lost to damaged bytes (flipped, torn): counted apart from the malformed
    # (rejected_records), shown by `summary` and `log status`.
    db.execute("INSERT OR IGNORE INTO store_counts (name, value) VALUES ('unreadable_records', 0)")


@migration
def m016_bench_load(db):
    # How busy the rest of the machine was during a measurement's rounds (linkwrap/bench/load.py), as
    # the measurement cache's rows have it: reports and queries see which results were taken busy.
    db.execute("ALTER TABLE bench_results ADD COLUMN others_cpus REAL")     # CPUs the rest used on average
    db.execute("ALTER TABLE bench_results ADD COLUMN taken_busy INTEGER")   # 1: at or above the background
    # load limit (measured again when idle), 0: below it, NULL: unknown or measured before m016


def migrate(db) -> list:
    """Apply the migrations not yet applied; -> their names.

    db: a sqlite3 connection in autocommit mode (isolation_level=None), so
    each migration and its bookkeeping row share one explicit transaction;
    BEGIN IMMEDIATE makes two commands migrating at once take turns.
    """
    import sqlite3
    try:
        done = {r[0] for r in db.execute(f"SELECT name FROM {TABLE}")}
    except sqlite3.OperationalError:  # no such table: a blank database
        done = set()
    if all(fn.__name__ in done for fn in MIGRATIONS):
        return []  # the usual case takes no write lock at all
    db.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (name TEXT PRIMARY KEY, applied_utc TEXT)")
    applied = []
    for fn in MIGRATIONS:
        db.execute("BEGIN IMMEDIATE")
        try:
            if db.execute(f"SELECT 1 FROM {TABLE} WHERE name = ?", (fn.__name__,)).fetchone() is None:
                fn(db)
                db.execute(f"INSERT INTO {TABLE} (name, applied_utc) "
                           "VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))", (fn.__name__,))
                applied.append(fn.__name__)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return applied
