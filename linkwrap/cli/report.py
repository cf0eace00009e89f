"""`linkwrap report`: a self-contained HTML page of where the link time went.

Written, like `cargo build --timings`, inside the project's build directory
(Cargo's target directory, the CMake or ninja build directory) as
linkwrap-report.html, and the path is printed; outside any project, into
linkwrap's state directory. --html FILE writes elsewhere ('-': stdout); --open
shows it in a browser. --from FILE... builds one page from `linkwrap log export`
files of several machines, a section per machine.
"""
import os
import sys

from linkwrap.errors import LinkwrapError, UsageError

DEFAULT_BUILDS = 20
FILE_NAME = "linkwrap-report.html"


def add_arguments(parser) -> None:
    parser.add_argument("--html", metavar="FILE",
                        help=f"write the page here ('-' for stdout; default: {FILE_NAME} in the project's "
                             "build directory)")
    parser.add_argument("--open", action="store_true", help="open the page in a web browser")
    which = parser.add_mutually_exclusive_group()
    from linkwrap.cli.summary import BUILD_HELP
    which.add_argument("--build", metavar="N", help="only this build: " + BUILD_HELP)
    which.add_argument("--all", action="store_true", help=f"every build (default: the last {DEFAULT_BUILDS})")
    parser.add_argument("--since", metavar="WHEN", help="builds since WHEN: 30m, 2h, 3d, 1w or a UTC date")
    parser.add_argument("--from", dest="from_files", metavar="FILE", nargs="+",
                        help="build the page from these `linkwrap log export` files (several machines' "
                             "records, grouped by machine) instead of this machine's records")
    from linkwrap.cli import scope
    scope.add_arguments(parser)


def select(conn, args, project):
    from linkwrap.report import summary
    from linkwrap.store import queries
    since = summary.parse_since(args.since) if args.since else None
    if args.build:
        builds = [queries.find_build(conn, args.build, project)]
    elif since:
        builds = queries.builds_since(conn, since, project, args.empty)
    else:
        builds = queries.all_builds(conn, project, args.empty)
        if not args.all:
            builds = builds[-DEFAULT_BUILDS:]
    return summary.summarize(conn, builds, since_utc=since)


def run(args) -> int:
    import time
    from linkwrap import paths
    from linkwrap.report import html
    from linkwrap.store.spool import utc_iso
    generated = utc_iso(time.time())
    where = None
    if args.from_files:
        if args.build:
            raise UsageError("--build goes with this machine's records, not with --from")
        from linkwrap.report import export
        machines = []
        for host, (conn, machine) in sorted(export.load(args.from_files).items()):
            # Every project in an export: it holds what its machine chose to export.
            machines.append((machine, select(conn, args, None)))
        text = html.fleet_page(machines, generated_utc=generated)
        builds = sum(len(s["builds"]) for _, s in machines)
        links = sum(s["totals"]["links"] for _, s in machines)
    else:
        from linkwrap.cli import scope
        from linkwrap.report import export
        from linkwrap.store import db as store
        conn = store.open_store()
        project, shows = scope.resolve(conn, args)
        data = select(conn, args, project)
        data["scope"] = {"project_dir": project, "shows": shows}  # builds named per project in one
        from linkwrap.cli.summary import history_of
        data["history"] = history_of(conn, data["builds"], project)
        from linkwrap.store import queries
        text = html.page(data, generated_utc=generated, machine=export.machine(), scope=f"Builds of {shows}",
                         bench=queries.latest_bench(conn))
        builds, links = len(data["builds"]), data["totals"]["links"]
        where = _build_dir(conn, project)
    if args.html == "-":
        sys.stdout.write(text)
        return 0
    if args.html:
        target = os.path.abspath(args.html)
    else:
        target = os.path.join(where or paths.state_dir(), FILE_NAME)
        os.makedirs(os.path.dirname(target), 0o700, exist_ok=True)  # the state dir, when it is not there yet
    _write(target, text, args.html or target)
    print(f"Link report saved to {target} ({plural_builds(builds, links)})")
    if args.open:
        import webbrowser
        if not webbrowser.open("file://" + target):
            print(f"linkwrap: warning: found no web browser to open {target} with", file=sys.stderr)
    return 0


def plural_builds(builds, links) -> str:
    from linkwrap.report.render import plural
    return f"{plural(builds, 'build')}, {plural(links, 'link')}"


def _build_dir(conn, project):
    """The project's build directory, when it exists: where the page goes by default."""
    if project is None:
        return None
    row = conn.execute("SELECT build_dir FROM builds WHERE project_dir = ? AND build_dir IS NOT NULL "
                       "ORDER BY last_seen_utc DESC LIMIT 1", (project,)).fetchone()
    if row and os.path.isdir(row[0]):
        return row[0]
    return project if os.path.isdir(project) else None


def _write(target, text, shown) -> None:
    """A regular file is replaced whole (a new name, made here, renamed over it); a device or FIFO
    (/dev/stdout, /dev/full) is written as it is, never replaced. Every failure is an error (exit 1:
    the machine said no), and no temporary file is left behind."""
    import stat
    try:
        special = not stat.S_ISREG(os.stat(target).st_mode)
    except FileNotFoundError:
        special = False
    except OSError as e:
        raise LinkwrapError(f"cannot write {shown}: {e.strerror or e}") from None
    tmp = target if special else f"{target}.{os.getpid()}.tmp"
    try:
        if special:
            f = open(tmp, "w", encoding="utf-8")
        else:
            f = os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644), "w",
                          encoding="utf-8")
        with f:  # close() flushes: ENOSPC surfaces here at the latest
            f.write(text)
        if not special:
            os.replace(tmp, target)
    except OSError as e:
        if not special:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise LinkwrapError(f"cannot write {shown}: {e.strerror or e}") from None
