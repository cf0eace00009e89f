"""`linkwrap log path|status|on|off|clear`: where the link records are, and whether links are recorded.

off leaves a `logs-off` marker in the state directory (checked with one stat()
per link, as simonw/llm's `logs off` does); on removes it, and also the
once-only warning markers of earlier recording failures, so a recurring one
is said again.
clear deletes every record: on a terminal it asks first; elsewhere (a script,
CI) it needs --yes, as there is nobody to ask.
"""
import os

from linkwrap import faults, paths


def add_arguments(parser) -> None:
    parser.add_argument("action", choices=("path", "status", "on", "off", "clear"),
                        help="path: print the database path; status: recording on/off, counts, size, "
                             "pending records; on/off: start/stop recording links; clear: delete every record "
                             "(asks first; --yes when not on a terminal)")
    parser.add_argument("--yes", "-y", action="store_true", help="clear without asking")


def run(args) -> int:
    if args.action == "clear":
        return _clear(args.yes)
    return {"path": _path, "status": _status, "on": _on, "off": _off}[args.action]()


def _path() -> int:
    from linkwrap.store import db
    print(db.path())
    return 0


def off_marker() -> str:
    from linkwrap.wrap.record import OFF_MARKER
    return os.path.join(paths.state_dir(), OFF_MARKER)


def warned_markers() -> list:
    state = paths.state_dir()
    found = []
    try:
        found += [os.path.join(state, n) for n in sorted(os.listdir(state)) if n.startswith(".warned-")]
    except OSError:
        pass
    import errno
    for kind in sorted(set(errno.errorcode.values()) | {"error"}):
        m = faults.fallback_marker(state, kind)
        if os.path.exists(m):
            found.append(m)
    return found


def _status() -> int:
    from linkwrap.report.render import fmt_bytes
    from linkwrap.store import db, queries, spool
    state = paths.state_dir()
    on = not os.path.exists(off_marker())
    env_off = os.environ.get("LINKWRAP_LOG", "").lower() in ("off", "0", "no", "false")
    print(f"Recording: {'on' if on and not env_off else 'off'}"
          + (" (LINKWRAP_LOG is off in this shell)" if env_off and on else "")
          + ("" if on else " (`linkwrap log on` starts it again)"))
    print(f"Database: {db.path()}")
    conn = db.open_store()
    c = queries.counts(conn)
    size = sum(os.path.getsize(db.path() + s) for s in ("", "-wal") if os.path.exists(db.path() + s))
    print(f"Records: {c['links']} links in {c['builds']} builds, {fmt_bytes(size)}"
          + (f", from {c['first_utc']} to {c['last_utc']}" if c["links"] else ""))
    if c["rejected"]:
        print(f"Skipped: {c['rejected']} malformed records from the spool (not counted above)")
    if spool.pending(state):
        print(f"Waiting in the spool: {fmt_bytes(spool.pending(state))} (the database could not take them)")
    for m in warned_markers():
        kind = os.path.basename(m).split("warned-", 1)[1].split("-", 1)[0]
        if kind == "config":  # pipeline.py's notice of a malformed linkwrap.toml, not a recording failure
            continue
        print(f"Recording failed at least once ({kind}); `linkwrap log on` resets this notice: {m}")
    if os.path.exists(paths.log_file()):
        print(f"linkwrap's own faults (tracebacks): {paths.log_file()}, {fmt_bytes(os.path.getsize(paths.log_file()))}")
    limits = db.retention()
    shown = [f"links older than {limits['keep_days']:g} days" if limits["keep_days"] else "",
             f"links.db over {limits['max_db_mb']:g} MiB" if limits["max_db_mb"] else "",
             f"a spool over {limits['max_spool_mb']:g} MiB (rotated once)" if limits["max_spool_mb"] else "",
             f"linkwrap.log over {limits['max_log_kb']:g} KiB (its newer half kept)" if limits["max_log_kb"] else ""]
    shown = [s for s in shown if s]
    print("Trimmed: " + ("; ".join(shown) if shown else "nothing (no limits)")
          + " ([records] in linkwrap.toml)")
    return 0


def _on() -> int:
    for m in [off_marker(), *warned_markers()]:
        try:
            os.unlink(m)
        except FileNotFoundError:
            pass
    print(f"Link recording is on ({paths.state_dir()})")
    return 0


def _off() -> int:
    paths.make_private_dir(paths.state_dir())
    with open(off_marker(), "w", encoding="utf-8") as f:
        f.write("linkwrap: links are not recorded while this file exists (`linkwrap log on`)\n")
    print("Link recording is off (`linkwrap log on` starts it again)")
    return 0


def _clear(yes: bool) -> int:
    """Delete links.db and the spool, under the ingestion lock, once the user said yes."""
    import fcntl
    from linkwrap.store import db, spool
    from linkwrap.wrap.record import SPOOL
    state = paths.state_dir()
    if not os.path.isdir(state):
        print("No link records.")
        return 0
    if not yes and not _confirmed(state):
        print("Nothing deleted.")
        return 1
    fd = os.open(os.path.join(state, spool.LOCK), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        removed = 0
        for name in (db.DB_NAME, db.DB_NAME + "-wal", db.DB_NAME + "-shm", SPOOL, spool.INGESTING, SPOOL + ".1"):
            try:
                os.unlink(os.path.join(state, name))
                removed += 1
            except FileNotFoundError:
                pass
    finally:
        os.close(fd)
    print(f"Deleted the link records in {state}." if removed else "No link records.")
    return 0


def _confirmed(state) -> bool:
    """Ask on the terminal; without one, --yes is the only way (raises UsageError)."""
    import sys
    from linkwrap.errors import UsageError
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("`linkwrap log clear` deletes every link record and there is no terminal to ask "
                         "on: add --yes to delete them")
    what = "every link record"
    try:
        from linkwrap.report.render import plural
        from linkwrap.store import db, queries
        c = queries.counts(db.open_store())
        what = f"{plural(c['links'], 'link record')} in {plural(c['builds'], 'build')}"
    except Exception:  # a broken store can still be cleared
        pass
    try:
        answer = input(f"Delete {what} in {state}? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")
