"""`linkwrap run -- <build command>`: run a build, then print the summary of its links.

The build gets LINKWRAP_BUILD_ID in its environment, so every link under it
(at any depth: cargo, ninja, make, scripts) is grouped into this build, and its
wall time is measured here, which gives the share of it spent linking. The
exit status is the build command's (128+N when a signal N ended it).

The build runs in a process group of its own (the terminal's foreground one, as
a shell does it): SIGTERM, SIGHUP and SIGINT sent to `linkwrap run` are passed
on to that group, and linkwrap waits for it, records the build and exits with its
status, so that a CI timeout or timeout(1) leaves no cargo or ninja behind.

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
    from linkwrap.facts import build
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
    # Without `linkwrap install`, make this child's links run linkwrap where that can be done from outside.
    from linkwrap.install import trial
    env, notes = trial.prepare(argv, env)
    for note in [] if args.quiet else notes:
        print(f"linkwrap: note: {note}", file=sys.stderr)
    started_unix, started = time.time(), time.perf_counter()
    try:
        # --json: stdout is the JSON's alone, so the build's stdout joins its stderr.
        code = run_build(argv, env, stdout=2 if args.json else None)
    except OSError as e:  # as a shell says it, with a shell's status
        from linkwrap.errors import error_line
        sys.stderr.write(error_line(f"cannot run {argv[0]}: {e.strerror or e}"))
        return 127 if isinstance(e, FileNotFoundError) else 126
    wall_ms = (time.perf_counter() - started) * 1000
    _summarise(args, key, " ".join(shlex.quote(a) for a in argv), cwd, started_unix, wall_ms, code,
               build.project_of(cwd, argv))
    _send_spans(key)
    return code


def _send_spans(key) -> None:
    """With OTEL_EXPORTER_OTLP_ENDPOINT set: this build's spans, over OTLP/HTTP; a failure is a warning."""
    from linkwrap.report import export
    if not export.endpoint():
        return
    from linkwrap.store import db as store
    try:
        payload = export.build_spans(store.open_store(), key)
        why = export.send_otlp(payload) if payload else None
    except Exception as e:  # the build is over and recorded: nothing here may change its exit status
        why = f"{type(e).__name__}: {e}"
    if why:
        store.warn(f"could not send this build's spans: {why}")


def _summarise(args, key, command, cwd, started_unix, wall_ms, code, project=(None, None)) -> None:
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
                                      exit_status=code, project=project)
    except sqlite3.Error as e:
        store.warn(f"cannot record this build in {store.path()}: {e}")
        return
    if args.quiet:
        return
    row = queries.find_build(conn, str(build_id))
    data = summary.summarize(conn, [row], ninja_log=None)
    from linkwrap.cli.summary import history_of
    data["history"] = history_of(conn, [row], None)   # what linkwrap saved over this project's builds
    if args.json:
        from linkwrap.report import jsonout
        jsonout.dump(data, sys.stdout)
    else:
        from linkwrap.report import render
        render.render(data, render.wide_console(stderr=True))
    hint = make_hint(command, data)
    if hint:
        print(f"linkwrap: note: {hint}", file=sys.stderr)


MAKES = ("make", "gmake")


def make_hint(command, data):
    """make's links cannot be routed from outside (its recipes name the compiler): how to, when it linked nothing."""
    import shlex
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    if not argv or os.path.basename(argv[0]) not in MAKES or any(b["links"] for b in data["builds"]):
        return None
    # GNU make's built-in rules link with $(CC) (LINK.o, LINK.c) and $(CXX) (LINK.cc); a variable set
    # on make's command line wins over the Makefile's own; compiles through linkwrap-launch run cc untouched.
    return (f"make links through linkwrap when its compiler is linkwrap's: `linkwrap run -- {command} "
            "CC='linkwrap-launch cc' CXX='linkwrap-launch c++'` (compile steps pass through untouched)")


# What a CI timeout, a closed terminal or ^C sends: passed on to the build's process group.
FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
# How long the rest of the build's process group may take to die once its leader has.
_GROUP_GRACE_S = 10.0


def run_build(argv, env, stdout=None) -> int:
    """Run the build in a process group of its own; -> its exit status (128+N if signal N ended it).

    Its own group, so that a signal to linkwrap reaches cargo, rustc, ninja and every linker under
    them (never linkwrap's caller, which may share linkwrap's group); on a terminal that group is
    made the foreground one, as a shell does, so that ^C and reads from the terminal reach the
    build directly. SIGTERM, SIGHUP and SIGINT sent to linkwrap itself are passed on to the group,
    and linkwrap waits until the build has ended, so that it can be recorded and nothing outlives
    `linkwrap run`. Raises OSError when the command cannot be started.
    """
    tty = _foreground_tty()
    pending, group = [], []

    def forward(signum, frame):
        pending.append(signum)
        if group:
            _kill_group(group[0], signum)

    # A signal linkwrap was started with ignored (SIGINT for a background job of a script) stays
    # ignored, for the build too, as a shell does it.
    old = {s: signal.signal(s, forward) for s in FORWARDED if signal.getsignal(s) is not signal.SIG_IGN}
    try:
        proc = subprocess.Popen(argv, env=env, stdout=stdout, restore_signals=True, process_group=0,
                                preexec_fn=None if tty is None else lambda: _take_terminal(tty))
        group.append(proc.pid)
        if tty is not None:
            _give_terminal(tty, proc.pid)  # the child did it too: whichever runs first wins the race
        for signum in pending:  # arrived before the group existed
            _kill_group(proc.pid, signum)
        try:
            _wait_ended(proc.pid, tty)
        finally:
            if tty is not None:
                _give_terminal(tty, os.getpgrp())
        # The leader has ended but is not reaped yet: while it is a zombie its pid cannot be reused, so a
        # signal forwarded now, and the wait for the rest of its group, reach this build and no other.
        if pending:
            _wait_group_gone(proc.pid)
        _, status = os.waitpid(proc.pid, 0)
        group.clear()  # reaped: from here on the pid may be another process's
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    code = proc.returncode
    return 128 - code if code < 0 else code


def _wait_ended(pid, tty) -> None:
    """Wait until the build's leader ends, leaving it unreaped; when ^Z stops it on a terminal, stop
    linkwrap too, then continue both."""
    while True:
        stops = 0 if tty is None else os.WSTOPPED
        info = os.waitid(os.P_PID, pid, os.WEXITED | stops | os.WNOWAIT)
        if info.si_code != os.CLD_STOPPED:
            return
        os.waitid(os.P_PID, pid, os.WSTOPPED)  # take the stop, so the next wait sees what comes after it
        _give_terminal(tty, os.getpgrp())
        os.kill(os.getpid(), signal.SIGSTOP)  # as the build is: the shell sees the job stopped
        _give_terminal(tty, pid)
        _kill_group(pid, signal.SIGCONT)


def _foreground_tty():
    """The fd of the controlling terminal when linkwrap runs in its foreground, else None."""
    for fd in (0, 1, 2):
        try:
            if os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp():
                return fd
        except OSError:
            continue
    return None


def _give_terminal(fd, pgid) -> None:
    # From the background tcsetpgrp raises SIGTTOU; ignored, it just works (as shells do it).
    old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        os.tcsetpgrp(fd, pgid)
    except OSError:
        pass
    finally:
        signal.signal(signal.SIGTTOU, old)


def _take_terminal(fd) -> None:
    """In the child, before exec: make its new group the terminal's foreground."""
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        os.tcsetpgrp(fd, os.getpgrp())
    except OSError:
        pass
    signal.signal(signal.SIGTTOU, signal.SIG_DFL)


def _kill_group(pgid, signum) -> None:
    try:
        os.killpg(pgid, signum)
    except OSError:
        pass  # gone already


def _wait_group_gone(pgid) -> None:
    """After a forwarded signal: wait (bounded) until the rest of the build's group has ended too."""
    deadline = time.monotonic() + _GROUP_GRACE_S
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except OSError:
            return
        time.sleep(0.02)

