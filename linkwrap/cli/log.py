"""`linkwrap log [status|path|on|off|clear|export]`: where the link records are, and whether links are recorded.

Alone, `linkwrap log` is `linkwrap log status`. export writes the records for
another machine or a collector (linkwrap.report.export: JSON lines or OTLP/JSON).

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
    parser.add_argument("action", nargs="?", default="status",
                        choices=("status", "path", "on", "off", "clear", "export"),
                        help="status (the default): recording on/off, counts, size, pending records; "
                             "path: the records' database and linkwrap's own fault log; on/off: start/stop "
                             "recording links; clear: delete every record (asks first; --yes when not on a "
                             "terminal); export: write the records as JSON lines or OTLP/JSON traces")
    parser.add_argument("--yes", "-y", action="store_true", help="clear without asking")
    parser.add_argument("--format", choices=("jsonl", "otlp"), default="jsonl",
                        help="export: one JSON object per link (jsonl, the default) or OpenTelemetry traces, "
                             "a span per build and per link (otlp): OTLP/JSON, or protobuf's binary encoding "
                             "when OTEL_EXPORTER_OTLP_PROTOCOL (or ..._TRACES_PROTOCOL) is http/protobuf")
    parser.add_argument("--since", metavar="WHEN", help="export: links since WHEN: 30m, 2h, 3d, 1w or a UTC date")
    parser.add_argument("--output", "-o", metavar="FILE", help="export: write to FILE (default: stdout)")
    from linkwrap.cli import scope
    scope.add_arguments(parser, empty=False)


def run(args) -> int:
    from linkwrap.errors import UsageError
    if args.action != "export" and (args.since or args.output or args.format != "jsonl"):
        raise UsageError("--format, --since and --output go with `linkwrap log export`")
    if args.action == "clear":
        return _clear(args.yes)
    if args.action == "export":
        return _export(args)
    if args.action == "status":
        return _status(args)
    return {"path": _path, "on": _on, "off": _off}[args.action]()


def _path() -> int:
    from linkwrap.store import db
    print(f"link records (SQLite): {db.path()}")
    print(f"linkwrap's own faults (text log): {paths.log_file()}")
    return 0


def _export(args) -> int:
    """Every record (of the current project unless --all-projects), oldest first."""
    import sys
    from linkwrap.cli import scope
    from linkwrap.errors import UsageError
    from linkwrap.report import export, summary
    from linkwrap.store import db
    conn = db.open_store()
    project, _ = scope.resolve(conn, args)
    since = summary.parse_since(args.since) if args.since else None
    binary, what = False, args.format
    if args.format == "otlp":
        # A file has no OTel default: JSON unless the environment asks for protobuf.
        proto, why = export.protocol(os.environ, default="http/json")
        if why:
            raise UsageError(why)
        binary, what = proto == "http/protobuf", f"otlp, {proto}"
        if binary and not (args.output and args.output != "-") and sys.stdout.isatty():
            raise UsageError("binary OTLP/protobuf is not for a terminal: give --output FILE, "
                             "or OTEL_EXPORTER_OTLP_PROTOCOL=http/json")
    if args.output and args.output != "-":
        target = os.path.abspath(args.output)
        tmp = f"{target}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")) as f:
                n = export.write(conn, f, fmt=args.format, project=project, since_utc=since, protobuf=binary)
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        print(f"Wrote {target}: {n} link{'s' if n != 1 else ''} ({what})", file=sys.stderr)
    elif binary:
        sys.stdout.flush()
        export.write(conn, sys.stdout.buffer, fmt=args.format, project=project, since_utc=since, protobuf=True)
        sys.stdout.buffer.flush()
    else:
        export.write(conn, sys.stdout, fmt=args.format, project=project, since_utc=since)
    return 0


def off_marker() -> str:
    from linkwrap.record.record import OFF_MARKER
    return os.path.join(paths.state_dir(), OFF_MARKER)


def warned_markers() -> list:
    state = paths.state_dir()
    found = []
    try:
        found += [os.path.join(state, n) for n in sorted(os.listdir(state)) if n.startswith(".warned-")]
    except OSError:
        pass
    return found + faults.fallback_markers(state)


def _status(args=None) -> int:
    from linkwrap.report.render import fmt_bytes, plural
    from linkwrap.store import db, queries, spool
    state = paths.state_dir()
    on = not os.path.exists(off_marker())
    env_off = os.environ.get("LINKWRAP_LOG", "").lower() in ("off", "0", "no", "false")
    print(f"Recording: {'on' if on and not env_off else 'off'}"
          + (" (LINKWRAP_LOG is off in this shell)" if env_off and on else "")
          + ("" if on else " (`linkwrap log on` starts it again)"))
    print(f"Database: {db.path()}")
    warned = []

    def warn(message):
        warned.append(message)
        db.warn(message)
    conn = db.open_store(warn=warn)
    c = queries.counts(conn)
    size = sum(os.path.getsize(db.path() + s) for s in ("", "-wal") if os.path.exists(db.path() + s))
    print(f"Records: {plural(c['links'], 'link')} in {plural(c['builds'], 'build')}, {fmt_bytes(size)}"
          + (f", {_minute(c['first_utc'])} to {_minute(c['last_utc'])} UTC" if c["links"] else ""))
    if c["rejected"]:
        print(f"Skipped: {plural(c['rejected'], 'malformed record')} from the spool (not counted above)")
    if c["unreadable"]:
        print(f"Dropped: {plural(c['unreadable'], 'unreadable record')} from the spool, its bytes damaged "
              "(not counted above)")
    from linkwrap.cli import scope
    project, shows = scope.resolve(conn, args)
    if project is not None:
        p = queries.counts(conn, project)
        print(f"This project: {plural(p['links'], 'link')} in {plural(p['builds'], 'build')} ({project}; "
              "`--all-projects` for every project's)")
    if spool.pending(state):
        # Why they wait is open_store's warning, when it gave one (a lock that is a directory, a read-only
        # database); without one they came in since (links running now).
        print(f"Waiting in the spool: {fmt_bytes(spool.pending(state))} (not in the database yet"
              + (": the warning above says why)" if warned else ")"))
    said = set()
    for m in warned_markers():
        kind = os.path.basename(m).split("warned-", 1)[1].split("-", 1)[0]
        # config: pipeline.py's notice of a malformed linkwrap.toml, not a recording failure; a kind
        # said in several builds (a marker each) is one line
        if kind == "config" or kind in said:
            continue
        said.add(kind)
        print(f"Recording failed at least once ({kind}); `linkwrap log on` resets this notice: {m}")
    _print_fault_log(fmt_bytes)
    limits = db.retention()
    shown = [f"links older than {limits['keep_days']:g} days" if limits["keep_days"] else "",
             f"links.db over {limits['max_db_mb']:g} MiB" if limits["max_db_mb"] else "",
             f"a spool over {limits['max_spool_mb']:g} MiB (rotated once)" if limits["max_spool_mb"] else "",
             f"linkwrap.log over {limits['max_log_kb']:g} KiB (its newer half kept)" if limits["max_log_kb"] else "",
             f"learnt evidence beyond {limits['max_learned']:g} outputs (least recently linked first)"
             if limits.get("max_learned") else ""]
    shown = [s for s in shown if s]
    import textwrap  # 80 columns, as every command's output
    print(textwrap.fill("Trimmed: " + ("; ".join(shown) if shown else "nothing (no limits)")
                        + " ([records] in linkwrap.toml)", 80, subsequent_indent="  ", break_on_hyphens=False))
    return 0


def _print_fault_log(fmt_bytes) -> None:
    """The fault log's counts; a log that cannot be read (a directory where it should be, another
    user's) is said as such, not counted as a fault: none may have happened, and none can be kept."""
    from linkwrap.errors import os_error_text, printable
    log = paths.log_file()
    if not os.path.lexists(log):
        return
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            text, size = f.read(), fmt_bytes(os.fstat(f.fileno()).st_size)
    except OSError as e:
        print(f"linkwrap's own faults cannot be logged or read: {printable(os_error_text(e))}; remove it or "
              "make it a file of yours")
        return
    n_faults, n_config, last = faults.counts(text)
    if n_faults:
        print(f"linkwrap's own faults (tracebacks): {log}, {size}: {n_faults}")
    if n_config:
        # The user's to fix, not linkwrap's: counted apart, with the last one's words.
        print(f"Configuration errors (yours to fix): {n_config} in {log}"
              + ("" if n_faults else f", {size}") + f"; the last: {printable(last or '?')}")


def _minute(utc) -> str:
    return (utc or "")[:16].replace("T", " ")


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
    from linkwrap.store import db, spool
    from linkwrap.record.record import SPOOL
    state = paths.state_dir()
    if not os.path.isdir(state):
        print("No link records.")
        return 0
    if not yes and not _confirmed(state):
        print("Nothing deleted.")
        return 1
    fd = spool.hold_lock(state)
    try:
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
