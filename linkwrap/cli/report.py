"""`linkwrap report --html FILE`: a self-contained HTML page of link times per build and per linker."""
import os

from linkwrap.errors import UsageError

DEFAULT_BUILDS = 20


def add_arguments(parser) -> None:
    parser.add_argument("--html", metavar="FILE", required=True, help="write the page here ('-' for stdout)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--build", metavar="ID", help="only this build (number or key)")
    which.add_argument("--all", action="store_true", help=f"every build (default: the last {DEFAULT_BUILDS})")
    parser.add_argument("--since", metavar="WHEN", help="builds since WHEN: 30m, 2h, 3d, 1w or a UTC date")


def run(args) -> int:
    import time
    from linkwrap.report import html, summary
    from linkwrap.store import db as store
    from linkwrap.store import queries
    from linkwrap.store.spool import utc_iso
    conn = store.open_store()
    since = summary.parse_since(args.since) if args.since else None
    if args.build:
        builds = [queries.find_build(conn, args.build)]
    elif since:
        builds = queries.builds_since(conn, since)
    else:
        builds = queries.all_builds(conn)
        if not args.all:
            builds = builds[-DEFAULT_BUILDS:]
    data = summary.summarize(conn, builds, since_utc=since)
    text = html.page(data, generated_utc=utc_iso(time.time()))
    if args.html == "-":
        import sys
        sys.stdout.write(text)
        return 0
    target = os.path.abspath(args.html)
    _write(target, text, args.html)
    print(f"Wrote {target}: {len(data['builds'])} builds, {data['totals']['links']} links")
    return 0


def _write(target, text, shown) -> None:
    """A regular file is replaced whole (a new name renamed over it); a device or FIFO
    (/dev/stdout, /dev/full) is written as it is, never replaced. Every failure is an error,
    and no temporary file is left behind."""
    import stat
    try:
        special = not stat.S_ISREG(os.stat(target).st_mode)
    except FileNotFoundError:
        special = False
    except OSError as e:
        raise UsageError(f"cannot write {shown}: {e.strerror or e}") from None
    tmp = target if special else f"{target}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:  # close() flushes: ENOSPC surfaces here at the latest
            f.write(text)
        if not special:
            os.replace(tmp, target)
    except OSError as e:
        if not special:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise UsageError(f"cannot write {shown}: {e.strerror or e}") from None
