"""`linkwrap summary`: the links of the last build (or --build, --all, --since) as a table or --json."""
import sys

from linkwrap.errors import LinkwrapError, UsageError


# One sentence for summary's and report's --build: a number is per project, as the listings show it.
BUILD_HELP = ("a build by its number as `--all` lists it: in a project, its Nth build (the first is 1); "
              "with --all-projects or outside any project, the #N counting every project's; or its key")


def add_arguments(parser) -> None:
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--build", metavar="N", help=BUILD_HELP)
    which.add_argument("--all", action="store_true", help="every recorded build")
    parser.add_argument("--since", metavar="WHEN",
                        help="builds (and links) since WHEN: 30m, 2h, 3d, 1w or a UTC date 2026-05-01")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    from linkwrap.cli import scope
    scope.add_arguments(parser)
    parser.add_argument("--ninja-log", metavar="FILE",
                        help="read this .ninja_log for the build's linking share; used only when the build "
                             "was run by ninja and the log's last run is that build's (default: ./.ninja_log, "
                             "when ninja ran the build in this directory)")


def collect(args, db) -> dict:
    from linkwrap.cli import scope
    from linkwrap.report import summary
    from linkwrap.store import queries
    since = summary.parse_since(args.since) if args.since else None
    project, scope_text = scope.resolve(db, args)
    empty = getattr(args, "empty", False)
    if args.build:
        builds = [queries.find_build(db, args.build, project)]
        # Named in its project's numbers when a project is in scope (a key may name another's build).
        project = (builds[0]["project_dir"] or None) if project is not None else None
        scope_text = "that build"
    elif args.all:
        builds = (queries.builds_since(db, since, project, empty) if since
                  else queries.all_builds(db, project, empty))
    elif since:
        builds = queries.builds_since(db, since, project, empty)
    else:
        last = queries.last_build(db, project)
        builds = [last] if last else []
    data = _collect(args, db, builds, since)
    data["scope"] = {"project_dir": project, "shows": scope_text}
    data["history"] = history_of(db, builds, project)
    data["dropped_records"] = queries.dropped_records(db)
    from linkwrap.report.render import name_builds
    return name_builds(data)


def history_of(db, builds, project):
    """What linkwrap saved over the history of the shown builds' project (of every project when they
    are of several, or of none known); None when no build is shown."""
    from linkwrap.report import summary
    if not builds:
        return None
    if project is None:
        known = {b["project_dir"] for b in builds}
        project = known.pop() if len(known) == 1 else None
    return summary.history(db, project)


def _collect(args, db, builds, since) -> dict:
    from linkwrap.report import summary
    ninja = None
    if len(builds) == 1:
        ninja = summary.ninja_log_for(builds[0], args.ninja_log)
    elif args.ninja_log:
        raise UsageError("--ninja-log needs one build (the last one, or --build ID)")
    since = since if not args.build else None
    from linkwrap.store.db import warn
    # A log the user named and that is not this build's is said; ./.ninja_log is only a guess.
    told = warn if args.ninja_log else None
    try:
        return summary.summarize(db, builds, since_utc=since, ninja_log=ninja, on_ninja_mismatch=told)
    except LinkwrapError as e:
        if args.ninja_log or ninja is None:
            raise
        # ./.ninja_log was only a guess: a bad one costs the share, not the summary.
        warn(f"{e}; shown without the linking share")
        return summary.summarize(db, builds, since_utc=since, ninja_log=None)


def run(args) -> int:
    from linkwrap.store import db as store
    db = store.open_store()
    data = collect(args, db)
    if args.json:
        from linkwrap.report import jsonout
        jsonout.dump(data, sys.stdout)
    else:
        from linkwrap.report import render
        render.render(data)
    return 0


def forced_linker_lines(cwd=None) -> list:
    """For `linkwrap status`: a forced linker that is not installed, from the last build's records
    (of the project cwd is in, else any); [] when there is none or the records cannot be read."""
    try:
        from linkwrap.cli import scope
        from linkwrap.report import summary
        from linkwrap.store import db as store, queries
        db = store.open_store()
        project, _ = scope.resolve(db, None, cwd)
        build = queries.last_build(db, project)
        if build is None:
            return []
        links = [summary.link_dict(r) for r in queries.links_of(db, build["id"])]
        name = queries.build_label(db, build, across=project is None)
        return [f"{summary.forced_missing_text(item)} in {name}"
                for item in summary.forced_missing(links)]
    except Exception:   # status says what is installed; the records are an extra
        return []
