"""links.db: the canonical store of link records (SQLite, WAL, busy timeout).

connect(path) -> a migrated sqlite3 connection in autocommit mode (each
write is an explicit short BEGIN IMMEDIATE transaction).
open_store() is what every reading command calls: it ingests the spool first
and copes with a database that is locked, read-only, full or corrupt by saying
so in one line (to stderr) and carrying on with what can still be read; the
spooled records then wait for the next command, so none is lost.
"""
import os
import sqlite3
import sys
import time

from linkwrap import paths
from linkwrap.store import migrations, spool

DB_NAME = "links.db"
BUSY_TIMEOUT_S = 5.0


def path() -> str:
    return os.path.join(paths.state_dir(), DB_NAME)


def connect(db_path=None, *, create=True) -> sqlite3.Connection:
    db_path = db_path or path()
    if create:
        paths.make_private_dir(os.path.dirname(db_path))
    elif not os.path.exists(db_path):
        raise FileNotFoundError(db_path)
    _private(db_path, create=create)
    conn = sqlite3.connect(db_path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    migrations.migrate(conn)
    return conn


def _private(db_path, create) -> None:
    """links.db 0600 whatever the umask, as every state file (SQLite would make it 0644); SQLite
    gives -wal and -shm the database's mode, and ones left 0644 by an older linkwrap are tightened."""
    for name, make in ((db_path, create), (db_path + "-wal", False), (db_path + "-shm", False)):
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_CREAT if make else 0)
        try:
            fd = os.open(name, flags, 0o600)
        except OSError:
            continue  # absent, a symlink, a read-only filesystem: SQLite says what matters
        try:
            st = os.fstat(fd)
            if st.st_uid == os.getuid() and st.st_mode & 0o077:
                os.fchmod(fd, 0o600)
        except OSError:
            pass
        finally:
            os.close(fd)


def connect_readonly(db_path=None) -> sqlite3.Connection:
    """The database as it is, without writing (it may be on a read-only filesystem)."""
    db_path = db_path or path()
    from urllib.parse import quote
    try:
        return _open_uri(f"file:{quote(db_path)}?mode=ro")
    except sqlite3.OperationalError:
        # A WAL database on a read-only filesystem: SQLite cannot make its -shm file
        # there, so read it as immutable (nobody can be writing it).
        return _open_uri(f"file:{quote(db_path)}?mode=ro&immutable=1")


def _open_uri(uri) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("SELECT count(*) FROM links").fetchone()
    return conn


def is_corrupt(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.DatabaseError) and (
        "not a database" in text or "malformed" in text or "corrupt" in text)


def warn(message: str) -> None:
    from linkwrap.errors import warning_line
    sys.stderr.write(warning_line(message))


def open_store(*, ingest=True, warn=warn) -> sqlite3.Connection:
    """A connection to links.db with the spool ingested; see the module docstring.

    Returns an empty in-memory store when nothing can be read at all.
    """
    problem = paths.state_problem()
    if problem:
        from linkwrap.errors import ConfigError
        raise ConfigError(problem)
    state = paths.state_dir()
    db_path = os.path.join(state, DB_NAME)
    try:
        conn = connect(db_path)
    except sqlite3.DatabaseError as e:
        if is_corrupt(e):
            conn = _replace_corrupt(db_path, e, warn)
        else:
            # Read-only, locked or full: show what is there; the spool waits (said once, just now).
            return _fallback(db_path, e, warn) or memory()
        if conn is None:
            return memory()
    except OSError as e:
        warn(f"cannot open {db_path}: {e.strerror or e}")
        return memory()
    if ingest:
        from linkwrap.server.server import wait_for_tidying
        wait_for_tidying(state)  # links the server answered may still be writing their records
        ingested = False
        try:
            if spool.ingest(conn, state):
                refit(conn)
            ingested = True
        except sqlite3.DatabaseError as e:
            if is_corrupt(e):
                conn.close()
                conn = _replace_corrupt(db_path, e, warn) or memory()
                try:
                    spool.ingest(conn, state)
                except (sqlite3.Error, OSError) as e2:
                    warn(f"new link records stay in the spool for now: {e2}")
            else:
                warn(f"new link records stay in the spool for now ({db_path}: {e})")
        except OSError as e:
            warn(f"cannot read the link spool in {state}: {e.strerror or e}")
        if ingested:  # a database that could take the spool can be trimmed
            limits = retention()
            try:
                trim(conn, limits)
            except sqlite3.Error as e:
                warn(f"cannot trim {db_path} to its limits: {e}")
            from linkwrap.evidence import learn, measured
            learn.prune(limits)   # the learnt evidence is kept by the same limits
            try:
                measured.migrate()    # an earlier linkwrap's one-file measurements, into shards
            except Exception as e:    # an aid to the link path: the report goes on
                from linkwrap import faults
                faults.note("splitting the measurements into shards", e)
        try:
            spool.backfill_projects(conn)
        except sqlite3.Error:  # read-only or busy: those builds show with --all-projects meanwhile
            pass
    return conn


def retention() -> dict:
    """[records] limits from linkwrap.toml (the defaults when it cannot be read: its error is said
    by the commands that read it, and the link path)."""
    from linkwrap.request import config
    try:
        return config.load(None, os.environ).retention
    except Exception:
        return dict(config.RETENTION)


def size_bytes(conn) -> int:
    return conn.execute("PRAGMA page_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]


def trim(conn, limits) -> int:
    """Delete links older than keep_days, then the oldest links while the database is over
    max_db_mb (freed pages are given back with VACUUM, only then); -> links deleted."""
    deleted = 0
    days = limits.get("keep_days") or 0
    if days:
        cutoff = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - days * 86400))
        if conn.execute("SELECT 1 FROM links WHERE started_utc < ? LIMIT 1", (cutoff,)).fetchone():
            deleted += conn.execute("DELETE FROM links WHERE started_utc < ?", (cutoff,)).rowcount
    max_bytes = int((limits.get("max_db_mb") or 0) * (1 << 20))
    if max_bytes:
        for _ in range(64):
            size, links = size_bytes(conn), conn.execute("SELECT count(*) FROM links").fetchone()[0]
            free = conn.execute("PRAGMA freelist_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]
            if size - free <= max_bytes or not links:
                break
            # Down to 90 % of the limit, in proportion to what one link takes on average.
            excess = (size - free) - max_bytes * 9 // 10
            n = max(1, min(links, -(-excess * links // max(1, size - free))))
            deleted += conn.execute("DELETE FROM links WHERE id IN (SELECT id FROM links "
                                    "ORDER BY started_utc, id LIMIT ?)", (n,)).rowcount
    if deleted:
        conn.execute("DELETE FROM builds WHERE NOT EXISTS (SELECT 1 FROM links WHERE links.build_id = builds.id) "
                      "AND coalesce(last_seen_utc, started_utc, '') < (SELECT coalesce(min(started_utc), '9') FROM links)")
        if max_bytes and size_bytes(conn) > max_bytes:
            conn.execute("VACUUM")
    return deleted


def refit(conn) -> None:
    """Fit the memory model the link path predicts with (linkwrap.evidence.predict) on the new records.
    It is an aid to prediction: a failure leaves the last model in place."""
    try:
        from linkwrap.evidence import predict
        predict.refit(conn)
    except Exception:
        pass


def _fallback(db_path, exc, warn):
    """Locked or read-only: read what is there, leave the spool for later."""
    warn(f"cannot write {db_path} ({exc}); showing the records already in it, "
         "new ones stay in the spool")
    try:
        return connect_readonly(db_path)
    except sqlite3.Error:
        return None


def _replace_corrupt(db_path, exc, warn):
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = f"{db_path}.corrupt-{stamp}"
    try:
        os.rename(db_path, aside)
        for suffix in ("-wal", "-shm"):
            if os.path.exists(db_path + suffix):
                os.rename(db_path + suffix, aside + suffix)
    except OSError as e:
        warn(f"{db_path} is corrupt ({exc}) and cannot be moved aside: {e.strerror or e}")
        return None
    warn(f"{db_path} was corrupt ({exc}); moved it to {aside} and started a new one")
    try:
        return connect(db_path)
    except (sqlite3.Error, OSError) as e:
        warn(f"cannot create a new {db_path}: {e}")
        return None


def memory() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.row_factory = sqlite3.Row
    migrations.migrate(conn)
    return conn
