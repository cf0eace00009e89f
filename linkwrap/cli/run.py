"""`linkwrap run -- <build command>`: run a build, then print the summary of its links.

The build gets LINKWRAP_BUILD_ID in its environment, so every link under it
(at any depth: cargo, ninja, make, scripts) is grouped into this build, and its
wall time is measured here, which gives the share of it spent linking. The
exit status is the build command's (128+N when a signal N ended it).

Where things go: the human summary goes to stderr, after the build's own
output, so that it never mixes into what the build prints on stdout (which a
caller may be capturing). With --json the JSON is all that goes to stdout, so
`linkwrap run --json -- make > links.json` is parseable: the build's own stdout
is sent to stderr then.
"""
import argparse
import os
import shlex
import signal
import subprocess
import sys
import time

from linkwrap.errors import UsageError


EPILOG = ("The summary table goes to stderr, after the build's own output, so that it never mixes "
          "with what the build prints on stdout. With --json, stdout carries only the JSON (the "
          "build's own stdout goes to stderr), so `linkwrap run --json -- make > links.json` works.")


def add_arguments(parser) -> None:
    parser.epilog = EPILOG
    parser.add_argument("--json", action="store_true",
                        help="print the summary as JSON on stdout (the build's own stdout goes to stderr)")
    parser.add_argument("--quiet", "-q", action="store_true", help="print no summary; only record the build")
    parser.add_argument("--save", action="store_true",
                        help="keep this build's links replayable for `linkwrap bench` (sets LINKWRAP_SAVE=1)")
    # dest is not "command": cli.main keeps the subcommand's name there.
    parser.add_argument("build_command", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                        help="the build command and its arguments, after --")


def run(args) -> int:
    from linkwrap.wrap import build
    argv = list(args.build_command)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        raise UsageError("usage: linkwrap run -- <build command> [arguments...]")
    key = build.new_run_key()
    cwd = os.getcwd()
    env = {**os.environ, build.ENV: key, "LINKWRAP_BUILD_CWD": cwd}
    if args.save:
        env["LINKWRAP_SAVE"] = "1"
    started_unix, started = time.time(), time.perf_counter()
    # ^C goes to the whole foreground process group: let the build handle it and end.
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        try:
            # --json: stdout is the JSON's alone, so the build's stdout joins its stderr.
            proc = subprocess.Popen(argv, env=env, restore_signals=True, stdout=2 if args.json else None,
                                    preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        except OSError as e:  # as a shell says it, with a shell's status
            print(f"linkwrap: error: cannot run {argv[0]}: {e.strerror or e}", file=sys.stderr)
            return 127 if isinstance(e, FileNotFoundError) else 126
        code = proc.wait()
    finally:
        signal.signal(signal.SIGINT, old)
    wall_ms = (time.perf_counter() - started) * 1000
    if code < 0:
        code = 128 - code
    _summarise(args, key, " ".join(shlex.quote(a) for a in argv), cwd, started_unix, wall_ms, code)
    return code


def _summarise(args, key, command, cwd, started_unix, wall_ms, code) -> None:
    """Record and show the build; a broken store is said, never changes the exit status."""
    import sqlite3
    from linkwrap.report import summary
    from linkwrap.store import db as store
    from linkwrap.store import queries
    from linkwrap.store.spool import utc_iso
    conn = store.open_store()
    try:
        build_id = queries.record_run(conn, key, command=command, cwd=cwd, started_utc=utc_iso(started_unix),
                                      finished_utc=utc_iso(started_unix + wall_ms / 1000), wall_ms=wall_ms,
                                      exit_status=code)
    except sqlite3.Error as e:
        store.warn(f"cannot record this build in {store.path()}: {e}")
        return
    if args.quiet:
        return
    row = queries.find_build(conn, str(build_id))
    data = summary.summarize(conn, [row], ninja_log=None)
    if args.json:
        import json
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        from linkwrap.report import render
        render.render(data, render.wide_console(stderr=True))
