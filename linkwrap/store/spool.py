"""Move the links spool (written by linkwrap.record.record) into links.db.

Input: <state_dir>/links.spool, frames of MAGIC + length + marshal(dict) + TRAILER.
Output: rows in builds and links; the spool is emptied.

Atomic and exactly-once: under an exclusive flock on links.lock (two commands
ingesting at once take turns) the spool is renamed to links.spool.ingesting,
then locked with os.lockf (the writers' lock) so a link that opened the old
file before the rename has finished its single write, or will notice the
rename and write a new spool. The rows go in one transaction and the file is
removed after COMMIT; a crash in between leaves it to the next ingestion,
where each record's uid (UNIQUE, INSERT OR IGNORE) keeps rows from doubling.
"""
import json
import marshal
import os
import time

from linkwrap.record.record import MAGIC, ROTATED, SPOOL, TRAILER

INGESTING = SPOOL + ".ingesting"
LOCK = "links.lock"

# Record keys that hold tuples and become JSON text columns.
_JSON_KEYS = ("flags_added", "reasons", "first_command", "argv", "args_expanded", "command")
_BOOL_KEYS = ("primary_package", "output_held", "fell_back", "compiles")
LINK_COLUMNS = (
    "record_uid", "build_id", "started_utc", "project_dir", "manifest_dir", "cwd", "pid",
    "output_path", "output_kind", "output_bytes", "crate_name", "crate_kind", "package_name",
    "primary_package", "linker", "linker_version", "linker_version_text", "linker_path",
    "asked_fuse_ld", "flags_added", "write_mode", "reasons", "fs_type", "fs_options",
    "kernel_release", "nlink_before", "output_held", "wall_ms", "user_ms", "sys_ms",
    "peak_rss_kb", "exit_status", "input_count", "input_bytes", "overhead_ms", "fell_back",
    "first_exit_status", "first_wall_ms", "first_command", "fault", "driver", "argv",
    "args_expanded", "command", "first_linker", "first_error", "startup_ms",
    "predicted_peak_kb", "prediction_source", "charge_kb", "charge_how", "waited_ms", "wait_note",
    "memory_room_kb", "jobserver_wait", "mem_limit_mb",
    "linker_start", "entry_point", "compiles", "spawner_rss_kb",
)


# What each record field may hold; a record with anything else is rejected whole, so one
# crafted or corrupt record cannot break every reading command (summary, report, log status).
_NUMBER_KEYS = frozenset(("started_unix", "wall_ms", "user_ms", "sys_ms", "overhead_ms", "first_wall_ms",
                          "startup_ms"))
_INT_KEYS = frozenset(("pid", "build_pid", "output_bytes", "nlink_before", "peak_rss_kb", "exit_status",
                       "input_count", "input_bytes", "first_exit_status", "v"))
# Columns are named with their units: any other field so named holds a number too.
_UNIT_SUFFIXES = ("_ms", "_s", "_kb", "_mb", "_bytes", "_unix")
_REQUIRED = ("uid", "started_unix")


def valid(rec) -> bool:
    """True when every field of the record has a type its column can take."""
    import math
    if not isinstance(rec, dict) or not all(k in rec for k in _REQUIRED) or not isinstance(rec["uid"], str):
        return False
    for key, value in rec.items():
        if not isinstance(key, str):
            return False
        if value is None:
            if key in _REQUIRED:
                return False
        elif key in _NUMBER_KEYS or key not in _INT_KEYS and key.endswith(_UNIT_SUFFIXES):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                return False
            if key == "started_unix" and not 0 <= value < 1e11:  # before year 5138: gmtime() can show it
                return False
        elif key in _INT_KEYS:
            if isinstance(value, bool) or not isinstance(value, int) or abs(value) >= 1 << 63:
                return False
        elif key in _BOOL_KEYS:
            if not isinstance(value, (bool, int)):
                return False
        elif key in _JSON_KEYS:
            if not isinstance(value, (tuple, list)) or not all(isinstance(v, str) for v in value):
                return False
        elif not isinstance(value, str):
            return False
    return True


def parse(data: bytes, rejected=None, unreadable=None):
    """-> (records, skipped_bytes). Torn or foreign bytes are skipped, never fatal; whole frames
    whose record is not valid() are skipped too, and counted in `rejected` (a list) when given.
    unreadable (a list): gets the offset of each run of skipped bytes, once per record lost in it
    to damaged bytes (flipped, torn); see lost_in()."""
    records, skipped, pos, n = [], 0, 0, len(data)
    gap = None  # where the bytes skipped since the last whole frame begin

    def close_gap(end):
        if gap is not None and unreadable is not None:
            unreadable.extend([gap] * lost_in(data[gap:end]))

    while pos < n:
        start = data.find(MAGIC, pos)
        if start < 0:
            skipped += n - pos
            gap = pos if gap is None else gap
            break
        if start > pos:
            gap = pos if gap is None else gap
        skipped += start - pos
        rec = None
        if start + 8 <= n:
            length = int.from_bytes(data[start + 4:start + 8], "little")
            end = start + 8 + length
            if end + len(TRAILER) <= n and data[end:end + len(TRAILER)] == TRAILER:
                try:
                    rec = marshal.loads(data[start + 8:end])
                except (ValueError, EOFError, TypeError):
                    rec = None
                if valid(rec) or rec is not None and rejected is not None:
                    close_gap(start)
                    gap = None
                    pos = end + len(TRAILER)
                    if valid(rec):
                        records.append({k: _storable(v) for k, v in rec.items()})
                    else:
                        rejected.append(rec)
                        skipped += pos - start
                    continue
        # Not a whole frame here: resynchronise on the next MAGIC.
        gap = start if gap is None else gap
        skipped += 1
        pos = start + 1
    close_gap(n)
    return records, skipped


def lost_in(skipped: bytes) -> int:
    """How many records a run of skipped bytes held, at least one: a frame hit by flipped or torn
    bytes keeps its MAGIC, its TRAILER, or both (a MAGIC then a TRAILER is one frame)."""
    anchors = sorted([(i, MAGIC) for i in _find_all(skipped, MAGIC)]
                     + [(i, TRAILER) for i in _find_all(skipped, TRAILER)])
    frames, after_magic = 0, False
    for _, anchor in anchors:
        if anchor == MAGIC or not after_magic:
            frames += 1
        after_magic = anchor == MAGIC
    return max(1, frames)


def _find_all(data: bytes, sub: bytes):
    i = data.find(sub)
    while i >= 0:
        yield i
        i = data.find(sub, i + 1)


def _storable(value):
    """Paths need not be UTF-8 (their undecodable bytes arrive as surrogate escapes),
    SQLite text must be: such bytes are shown as U+FFFD, and the record is kept."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if isinstance(value, (tuple, list)):
        return type(value)(_storable(v) for v in value)
    return value


def utc_iso(unix: float) -> str:
    ms = int(round((unix - int(unix)) * 1000))
    secs = int(unix)
    if ms == 1000:
        secs, ms = secs + 1, 0
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{ms:03d}Z"


def pending(state: str) -> int:
    """Bytes waiting in the spool (for `linkwrap log status`)."""
    total = 0
    for name in (SPOOL, INGESTING, ROTATED):
        try:
            total += os.path.getsize(os.path.join(state, name))
        except OSError:
            pass
    return total


def ingest(db, state: str) -> int:
    """Move every spooled record into db; -> how many rows were added.

    Raises sqlite3.Error when the database cannot take them: the records then
    stay on disk (links.spool.ingesting) for the next command.
    """
    spool, ingesting = os.path.join(state, SPOOL), os.path.join(state, INGESTING)
    rotated = os.path.join(state, ROTATED)
    if not any(os.path.exists(p) for p in (spool, ingesting, rotated)):
        return 0
    lock_fd = hold_lock(state)
    try:
        added = 0
        # A leftover from an ingestion that died after its rename: its turn first.
        if os.path.exists(ingesting):
            added += _ingest_file(db, ingesting)
        # The older records a long-unread spool was rotated into.
        try:
            os.rename(rotated, ingesting)
            added += _ingest_file(db, ingesting)
        except FileNotFoundError:
            pass
        try:
            os.rename(spool, ingesting)
        except FileNotFoundError:
            return added
        added += _ingest_file(db, ingesting)
        return added
    finally:
        os.close(lock_fd)


def hold_lock(state) -> int:
    """An fd holding links.lock's exclusive flock (ingest, `log --clear`); closing it releases it.
    Never through a symlink, never another user's file: its owner could hold the lock for ever."""
    import fcntl
    fd = os.open(os.path.join(state, LOCK), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or st.st_mode & 0o170000 != 0o100000:
            raise PermissionError(13, "not this user's regular file: not used", os.path.join(state, LOCK))
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _ingest_file(db, path) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    try:
        # Waits for a writer that opened this file before the rename.
        os.lockf(fd, os.F_LOCK, 0)
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
        # Read: let waiting writers go now, not after the database (up to its 5 s busy timeout).
        # They find the spool renamed under them and append to a new one.
        os.lockf(fd, os.F_ULOCK, 0)
        rejected, unreadable = [], []
        records, _ = parse(b"".join(chunks), rejected, unreadable)
        added = insert(db, records, len(rejected), len(unreadable))
        os.unlink(path)
        return added
    finally:
        os.close(fd)


def insert(db, records, rejected=0, unreadable=0) -> int:
    """Insert records (dicts from the spool) in one transaction; -> rows added.

    rejected, unreadable: how many malformed records, and records lost to damaged bytes, the spool
    held; added to the counts `log status` and `summary` show, in the same transaction (a spool
    left for the next ingestion by a failure is not counted twice)."""
    if not (records or rejected or unreadable):
        return 0
    placeholders = ", ".join("?" for _ in LINK_COLUMNS)
    sql = f"INSERT OR IGNORE INTO links ({', '.join(LINK_COLUMNS)}) VALUES ({placeholders})"
    build_ids, spans = {}, {}
    added = 0
    db.execute("BEGIN IMMEDIATE")
    try:
        for name, count in (("rejected_records", rejected), ("unreadable_records", unreadable)):
            if count:
                db.execute("UPDATE store_counts SET value = value + ? WHERE name = ?", (count, name))
        for rec in records:
            started = utc_iso(rec["started_unix"])
            key = rec.get("build_key") or "unknown"
            if key not in build_ids:
                build_ids[key] = upsert_build(db, key, tool=rec.get("build_tool"), pid=rec.get("build_pid"),
                                              command=rec.get("build_command"), cwd=rec.get("build_cwd"))
                set_project(db, build_ids[key], rec)
            build_id = build_ids[key]
            first, last = spans.get(build_id, (started, started))
            spans[build_id] = (min(first, started), max(last, started))
            row = []
            for col in LINK_COLUMNS:
                if col == "record_uid":
                    v = rec["uid"]
                elif col == "build_id":
                    v = build_id
                elif col == "started_utc":
                    v = started
                else:
                    v = rec.get(col)
                    if col in _JSON_KEYS and v is not None:
                        v = json.dumps(list(v))
                    elif col in _BOOL_KEYS and v is not None:
                        v = int(bool(v))
                    elif col == "fell_back":
                        v = 0  # NOT NULL: OR IGNORE would silently drop the row
                row.append(v)
            added += db.execute(sql, row).rowcount
        # One update per build, not per link: its first link and its latest activity.
        for build_id, (first, last) in spans.items():
            db.execute("UPDATE builds SET last_seen_utc = max(coalesce(last_seen_utc, ''), ?), "
                       "started_utc = CASE WHEN started_utc IS NULL OR started_utc > ? THEN ? "
                       "ELSE started_utc END WHERE id = ?", (last, first, first, build_id))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return added


def upsert_build(db, key, *, tool=None, pid=None, command=None, cwd=None) -> int:
    db.execute("INSERT INTO builds (build_key, tool, pid, command, cwd) VALUES (?, ?, ?, ?, ?) "
               "ON CONFLICT(build_key) DO UPDATE SET tool = coalesce(builds.tool, excluded.tool), "
               "pid = coalesce(builds.pid, excluded.pid), command = coalesce(builds.command, excluded.command), "
               "cwd = coalesce(builds.cwd, excluded.cwd)", (key, tool, pid, command, cwd))
    return db.execute("SELECT id FROM builds WHERE build_key = ?", (key,)).fetchone()[0]


def set_project(db, build_id, rec) -> None:
    """Give a build its project (once: the first record ingested decides)."""
    if db.execute("SELECT project_dir FROM builds WHERE id = ?", (build_id,)).fetchone()[0] is not None:
        return
    from linkwrap.facts.build import BUILD_TOOLS, project_of
    tool = rec.get("build_tool")
    if tool in BUILD_TOOLS:
        # /proc's command line, space-joined: good enough to find -C DIR or --manifest-path.
        argv = (rec.get("build_command") or tool).split(" ")
        project, build_dir = project_of(rec.get("build_cwd"), argv, tool=tool, output=rec.get("output_path"),
                                        moved=True)  # build_cwd is the tool's /proc cwd, after its -C
    elif tool == "linkwrap run":
        # The run's command is not known yet: `linkwrap run` sets it when the build ends.
        project, build_dir = project_of(rec.get("build_cwd"), output=rec.get("output_path"))
    else:  # links outside a build tool: the directory they ran in
        project, build_dir = project_of(rec.get("cwd") or rec.get("build_cwd"), output=rec.get("output_path"))
    # '' when it cannot be told (no directory recorded): shown with --all-projects only, never asked again.
    db.execute("UPDATE builds SET project_dir = ?, build_dir = ? WHERE id = ?",
               (_storable(project or ""), _storable(build_dir), build_id))


def backfill_projects(db, limit=2000) -> int:
    """Give builds recorded before projects were (migration m008) theirs, from their first link.
    -> how many. Their directories are read now, so a project since deleted is told by its cwd alone."""
    todo = db.execute("SELECT builds.id, builds.tool, builds.command, builds.cwd FROM builds "
                      "WHERE project_dir IS NULL LIMIT ?", (limit,)).fetchall()
    if not todo:
        return 0
    db.execute("BEGIN IMMEDIATE")
    try:
        for build_id, tool, command, cwd in todo:
            first = db.execute("SELECT cwd, output_path FROM links WHERE build_id = ? ORDER BY started_utc, id "
                               "LIMIT 1", (build_id,)).fetchone()
            rec = {"build_tool": tool, "build_command": command, "build_cwd": cwd,
                   "cwd": first[0] if first else None, "output_path": first[1] if first else None}
            if tool == "linkwrap run" and command:
                import shlex
                from linkwrap.facts.build import project_of
                try:
                    project, build_dir = project_of(cwd, shlex.split(command))
                except ValueError:
                    project, build_dir = project_of(cwd)
                db.execute("UPDATE builds SET project_dir = ?, build_dir = ? WHERE id = ?",
                           (project or "", build_dir, build_id))
            else:
                set_project(db, build_id, rec)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return len(todo)
