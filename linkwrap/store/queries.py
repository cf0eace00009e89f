"""Named read (and the few write) queries the commands use: no SQL in cli/ or report/."""
import json

from linkwrap.errors import UsageError


# A build that linked something: at least one record names an output. A record
# without one (`linkwrap-cc --help`, `cc -v` through the wrapper) is no link, and
# must never make its own one-record "build" the last build.
_LINKED = ("EXISTS (SELECT 1 FROM links WHERE links.build_id = builds.id "
           "AND links.output_path IS NOT NULL AND links.output_path != '')")


def last_build(db):
    """The latest build with at least one link that has an output."""
    return db.execute(f"SELECT * FROM builds WHERE {_LINKED} "
                      "ORDER BY last_seen_utc DESC, id DESC LIMIT 1").fetchone()


def find_build(db, ref: str):
    """A build by number (`#3` or `3`), by key, or by a unique key prefix."""
    ref = ref.strip().lstrip("#")
    if ref.isdigit():
        row = db.execute("SELECT * FROM builds WHERE id = ?", (int(ref),)).fetchone()
        if row:
            return row
    row = db.execute("SELECT * FROM builds WHERE build_key = ?", (ref,)).fetchone()
    if row:
        return row
    rows = db.execute("SELECT * FROM builds WHERE build_key LIKE ? ESCAPE '\\' LIMIT 2",
                      (ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%",)).fetchall()
    if len(rows) == 1:
        return rows[0]
    if rows:
        raise UsageError(f"build {ref!r} is ambiguous: give more of its key or its number")
    raise UsageError(f"no build {ref!r} in the records (see `linkwrap summary --all`)")


# Listed builds: those that linked something, and those `linkwrap run` timed (a
# build that linked nothing is still a build); not the records of non-links alone.
_LISTED = f"({_LINKED} OR builds.wall_ms IS NOT NULL)"


def builds_since(db, since_utc: str):
    return db.execute(f"SELECT * FROM builds WHERE last_seen_utc >= ? AND {_LISTED} "
                      "ORDER BY last_seen_utc, id", (since_utc,)).fetchall()


def all_builds(db):
    return db.execute(f"SELECT * FROM builds WHERE {_LISTED} ORDER BY last_seen_utc, id").fetchall()


def links_of(db, build_id: int):
    """The build's links, slowest first."""
    return db.execute("SELECT * FROM links WHERE build_id = ? ORDER BY wall_ms DESC, id",
                      (build_id,)).fetchall()


def links_since(db, build_id: int, since_utc: str):
    return db.execute("SELECT * FROM links WHERE build_id = ? AND started_utc >= ? ORDER BY wall_ms DESC, id",
                      (build_id, since_utc)).fetchall()


def counts(db) -> dict:
    links, first, last = db.execute("SELECT count(*), min(started_utc), max(started_utc) FROM links").fetchone()
    builds = db.execute("SELECT count(*) FROM builds").fetchone()[0]
    import sqlite3
    try:
        rejected = db.execute("SELECT value FROM store_counts WHERE name = 'rejected_records'").fetchone()[0]
    except (sqlite3.Error, TypeError):  # a read-only database from before m004
        rejected = 0
    return {"links": links, "builds": builds, "first_utc": first, "last_utc": last, "rejected": rejected}


def record_run(db, key, *, command, cwd, started_utc, finished_utc, wall_ms, exit_status) -> int:
    """Store what `linkwrap run` knows about its build; -> the build's number."""
    from linkwrap.store.spool import upsert_build
    db.execute("BEGIN IMMEDIATE")
    try:
        build_id = upsert_build(db, key, tool="linkwrap run", command=command, cwd=cwd)
        db.execute("UPDATE builds SET tool = 'linkwrap run', command = ?, cwd = ?, started_utc = ?, "
                   "finished_utc = ?, wall_ms = ?, exit_status = ?, "
                   "last_seen_utc = max(coalesce(last_seen_utc, ''), ?) WHERE id = ?",
                   (command, cwd, started_utc, finished_utc, wall_ms, exit_status, finished_utc, build_id))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return build_id


def json_list(text):
    return json.loads(text) if text else []
