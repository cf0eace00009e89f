"""RECORD: one record per link, appended to a spool file after the link is over.

Input: the link's LinkRequest, Probe (or None), Decision and Outcome.
Output: one frame appended to <state_dir>/links.spool with a single os.write
on an O_APPEND fd. Never raises, never prints on success.

Why a spool and not SQLite here: `import sqlite3` (~4.5 ms) or json (~6 ms)
would cost more than the whole wrapper's budget, so the hot path only uses
marshal (built in). Reading commands (summary, report, log status, run) move
the spool into links.db first (linkwrap.store.spool.ingest).

Frame: MAGIC(4) + length(4, little endian) + marshal(dict) + TRAILER(4).
A torn frame (full disk, crash) is detected by its missing trailer and the
reader resynchronises on the next MAGIC: at most that record is lost.

Concurrency: the writer takes a POSIX lock (os.lockf: no fcntl import) on the
spool, then checks that the file it opened is still the one at the path,
because the ingester renames the spool aside under the same lock. So a record
lands either in the file being ingested, before it is read, or in a new spool.

Failures (read-only or full state dir, permissions) cost that record only and
are said once per build, state dir and failure kind: a `linkwrap: warning:` line on
stderr, remembered by a marker file `.warned-<errno>-<build crc>` in the state dir, or,
when the state dir cannot take it, /tmp/linkwrap-<uid>-warned-<errno>-<build crc>-<crc>.
`linkwrap log status` shows and `linkwrap log on` clears these markers.

linkwrap's own time per link has two parts: startup_ms, from the process's
start to pipeline.main (interpreter start-up and imports; see startup_ms()),
and overhead_ms, from main's start to the record, less the linker runs. The
interpreter's shutdown after the record is in neither. Through the link server,
startup_ms runs from the server's accept to the link's start (taking the client's
request, fds, environment, limits, cgroups) and overhead_ms ends at the answer to the
client: what the child does after it (this record, the memory history, evidence,
removing its private directory and the old output) is off the build's path.
A fall-back keeps why its first attempt failed: first_linker, first_error. A link whose driver
also compiled sources says so (compiles): its times are not the linker's alone.
"""
import marshal
import os
import time

from linkwrap.request import args as _args
from linkwrap.facts import probe as _probe

SPOOL = "links.spool"
ROTATED = SPOOL + ".1"  # the spool moved aside once it passed its size limit; the one before is dropped
OFF_MARKER = "logs-off"
MAGIC = b"LWr\x01"
TRAILER = b"\x01rWL"
FORMAT = 1  # the "v" of every record; bump when fields change meaning


def save(request, probe, decision, outcome, *, started_ns, first_attempt=None, memory=None,
         max_spool_bytes=64 << 20, environ=os.environ, caller_pid=None, entry="script", reached_ns=None,
         ended_ns=None, build=None) -> None:
    """Append this link's record to the spool. Never raises.

    ended_ns: when linkwrap's part of the link ended (the server's reply), else now; build: the
    link's build.identify(), found while its caller still ran (else now)."""
    try:
        now_ns = ended_ns or time.perf_counter_ns()
        from linkwrap import paths
        state = paths.state_dir()
        if _disabled(state, environ):
            return
        rec = make(request, probe, decision, outcome, started_ns=started_ns, first_attempt=first_attempt,
                   now_ns=now_ns, memory=memory, environ=environ, caller_pid=caller_pid, entry=entry,
                   reached_ns=reached_ns, build=build)
        frame = encode(rec)
    except BaseException as e:  # a fault of ours: the link's result stands
        _fault("building the link record", e)
        return
    try:
        append(state, frame, max_spool_bytes)
    except OSError as e:
        _warn_once(state, e, rec.get("build_key") or "")
    except BaseException as e:
        _fault("writing the link record", e)


def _disabled(state, environ=os.environ) -> bool:
    # `linkwrap log off` leaves a marker; LINKWRAP_LOG=off does the same per process.
    if environ.get("LINKWRAP_LOG", "").lower() in ("off", "0", "no", "false"):
        return True
    return os.path.exists(os.path.join(state, OFF_MARKER))


def make(request, probe, decision, outcome, *, started_ns, first_attempt=None, now_ns=None,
         environ=os.environ, memory=None, caller_pid=None, entry="script", reached_ns=None, build=None) -> dict:
    """The record: a dict of plain values (str, int, float, bool, None, tuples)."""
    now_ns = now_ns or time.perf_counter_ns()
    elapsed_ms = (now_ns - started_ns) / 1e6
    linker_runs_ms = outcome.wall_ms + (first_attempt.wall_ms if first_attempt else 0.0)
    # A wait for memory is the build's time, not linkwrap's work: it has its own figure (waited_ms).
    linker_runs_ms += (memory.waited_ms or 0.0) if memory is not None else 0.0
    if build is None:
        from linkwrap.facts import build as build_mod
        build = build_mod.identify(environ, caller_pid)
    b = build
    crate_name, crate_kind = classify(request, environ)
    linker = decision.linker
    out = probe.output if probe is not None else None
    fault = None
    for reason in decision.reasons:
        if reason.startswith(("linkwrap fault", "configuration error")):
            fault = reason
            break
    rec = {
        "v": FORMAT,
        "uid": f"{os.getpid()}-{time.time_ns()}-{os.urandom(4).hex()}",
        "started_unix": time.time() - (time.perf_counter_ns() - started_ns) / 1e9,
        "build_key": b.key,
        "build_tool": b.tool,
        "build_pid": b.pid,
        "build_command": b.command,
        "build_cwd": b.cwd,
        "project_dir": b.cwd or environ.get("CARGO_MANIFEST_DIR") or request.cwd,
        "manifest_dir": environ.get("CARGO_MANIFEST_DIR"),
        "cwd": request.cwd,
        "pid": caller_pid or os.getpid(),
        "output_path": request.output,
        "output_kind": request.kind,
        "output_bytes": outcome.output_bytes,
        "crate_name": crate_name,
        "crate_kind": crate_kind,
        "package_name": environ.get("CARGO_PKG_NAME"),
        "primary_package": environ.get("CARGO_PRIMARY_PACKAGE") == "1" if "CARGO_CRATE_NAME" in environ else None,
        "linker": linker.name if linker else "as asked",
        "linker_version": linker.label if linker else None,
        "linker_version_text": linker.version_text if linker else None,
        "linker_path": linker.path if linker else None,
        "asked_fuse_ld": request.fuse_ld,
        "flags_added": tuple(decision.linker_flags) + tuple(decision.driver_flags),
        "write_mode": outcome.write_mode,
        "reasons": tuple(decision.reasons),
        "fs_type": probe.fs if probe is not None else None,
        "fs_options": probe.fs_options if probe is not None else None,
        "kernel_release": os.uname().release,  # the full string; the probe keeps only numbers
        "nlink_before": out.nlink if out is not None else None,
        "output_held": out.held_by_others if out is not None else None,
        "wall_ms": outcome.wall_ms,
        "user_ms": outcome.user_ms,
        "sys_ms": outcome.sys_ms,
        "peak_rss_kb": outcome.peak_rss_kb,
        # At or below this, peak_rss_kb is linkwrap's own peak, folded in at the linker's exec: the
        # linker's is at most that (summary and explain say "≤").
        "spawner_rss_kb": getattr(outcome, "spawner_rss_kb", None),
        "exit_status": outcome.returncode,
        "input_count": len(request.inputs),
        "input_bytes": probe.input_bytes if probe is not None and probe.input_bytes is not None
        else _probe.input_bytes(request),
        "overhead_ms": max(0.0, elapsed_ms - linker_runs_ms),
        "fell_back": first_attempt is not None,
        "first_exit_status": first_attempt.returncode if first_attempt else None,
        "first_wall_ms": first_attempt.wall_ms if first_attempt else None,
        "first_command": compact_command(first_attempt, request) if first_attempt else None,
        "first_error": first_error(first_attempt.stderr) if first_attempt else None,
        "first_linker": first_attempt.linker if first_attempt else None,
        # A server's child was forked ahead of its link: its start-up is from taking the link.
        "startup_ms": startup_ms(now_ns - started_ns) if reached_ns is None
        else max(0.0, (started_ns - reached_ns) / 1e6),
        "fault": fault,
        "driver": request.driver,
        "argv": tuple(request.argv),
        "args_expanded": tuple(request.args) if request.used_response_file else None,
        "command": compact_command(outcome, request),
        "linker_start": outcome.start,
        "entry_point": entry,
        # The driver compiled sources too (`c++ -o app main.cpp`): wall_ms is not the linker's alone.
        "compiles": _args.compiles(request.args),
    }
    if memory is not None:  # admission.Memory: the prediction, the charge, the wait
        rec.update(predicted_peak_kb=memory.predicted_kb, prediction_source=memory.source,
                   charge_kb=memory.charge_kb, charge_how=memory.charge_how, waited_ms=memory.waited_ms,
                   wait_note=memory.wait_note, memory_room_kb=memory.room_kb, jobserver_wait=memory.jobserver,
                   mem_limit_mb=probe.mem_limit_mb if probe is not None else None)
    return rec


ARGS_MARK = "{args}"


def compact_command(outcome, request) -> tuple:
    """What was run, with the caller's own arguments (argv, or args_expanded for an @file, each
    already in the record) replaced by ARGS_MARK: a 100k-argument link is stored once, not twice.
    The -o inside them named this link's private path; the record's output_path says the real one."""
    command = tuple(outcome.command)
    if request.used_response_file:
        return command  # [driver, @file]: already short
    if getattr(outcome, "start", None) in ("direct", "in-process"):   # (the same line, started two ways)
        return _compact_direct(command, request)
    # linkwrap's choice: [driver, -B<shim>, *args, *flags]; as asked: [driver, *argv].
    start, n = (2, len(request.args)) if outcome.linker is not None else (1, len(request.argv))
    if len(command) < start + n:
        return command
    return command[:start] + (ARGS_MARK,) + command[start + n:]


def _compact_direct(command, request) -> tuple:
    """A direct start's line keeps the caller's inputs, -l and -Wl pieces as one block, in order
    (direct.split's items): that block is what ARGS_MARK stands for."""
    from linkwrap.run import direct
    try:
        items = tuple(direct.split(list(request.args))[1])
    except direct.NotDirect:
        return command
    n = len(items)
    if not n:
        return command
    for i in range(len(command) - n + 1):
        if command[i] == items[0] and command[i:i + n] == items:
            return command[:i] + (ARGS_MARK,) + command[i + n:]
    return command


FIRST_ERROR_CHARS = 300
_WHY_WORDS = ("error", "fatal", "not supported")


def first_error(stderr) -> str | None:
    """Why the first attempt failed: one line of its stderr, at most FIRST_ERROR_CHARS.

    The first line saying error / fatal / not supported, else the last non-empty
    line. gcc's closing `collect2: error: ld returned 1 exit status` says only
    that the linker failed, so it is the answer only when nothing else was said
    (GNU ld's `cannot find -lfoo` and `undefined reference` lines have none of
    the words, and come before it).
    """
    if not stderr:
        return None
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else str(stderr)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    said = [line for line in lines if not (line.startswith("collect2:") and "returned" in line)] or lines
    if not said:
        return None
    line = said[-1]
    for candidate in said:
        low = candidate.lower()
        if any(w in low for w in _WHY_WORDS):
            line = candidate
            break
    return line if len(line) <= FIRST_ERROR_CHARS else line[:FIRST_ERROR_CHARS - 1] + "…"


_START_UP_LIMIT_MS = 10_000.0


def startup_ms(since_main_ns: int) -> float | None:
    """Wall time from this process's start to pipeline.main's start, or None.

    That is the interpreter's start-up and the imports, which overhead_ms (timed
    from main's start) cannot see. The start is the kernel's: /proc/self/stat
    field 22, in clock ticks since boot on CLOCK_BOOTTIME (one ~3 µs read). Ticks
    are 10 ms (USER_HZ 100) and the kernel rounds down, so the true start lies in
    [tick, tick + 10 ms): taking the middle makes each figure good to ±5 ms and
    a build's sum unbiased (measured against a spawning parent's clock: mean
    error -0.2 ms, worst 5.1 ms over 40 starts). Precise enough for the ~20-30 ms
    it is here; CPU time (precise) would miss disk waits and a busy machine's
    queueing, which the build does pay for. It includes the fork-to-exec gap and
    any exec chain under the same pid (a pyenv shim), as the build pays those too.
    None when unknown, or when main was called in a long-lived process (tests,
    benchmarks), which has no start-up of its own to measure.
    """
    try:
        from linkwrap.facts.build import read_stat
        ticks = read_stat("self")[2]
        now_boot_ns = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        hz = os.sysconf("SC_CLK_TCK")
        started_boot_ns = ticks * 1_000_000_000 // hz + 500_000_000 // hz  # the middle of the tick
        # CLOCK_MONOTONIC (perf_counter) and CLOCK_BOOTTIME tick alike but for suspend,
        # so main's start on the boot clock is now minus the time since main began.
        ms = (now_boot_ns - since_main_ns - started_boot_ns) / 1e6
    except (OSError, ValueError, IndexError, AttributeError, TypeError):  # TypeError: no /proc
        return None
    if ms > _START_UP_LIMIT_MS:
        return None
    return max(0.0, ms)


def classify(request, environ=os.environ):
    """-> (name, kind) of what was linked.

    kind: bin, build-script, proc-macro, test, example, dylib, cdylib (shared when neither can be
    told) under Cargo;
    executable or shared-library otherwise (a C/C++ link).
    proc-macro: rustc links a proc-macro crate as a -shared object that takes
    the sysroot's libproc_macro-*.rlib; a cdylib does not (unless it depends on
    proc_macro itself, which is rare). A Rust dylib carries its metadata in rustc's rmeta.o; a
    cdylib has none and is linked with --gc-sections. Tests link libtest-*.rlib.
    """
    crate = environ.get("CARGO_CRATE_NAME")
    output = request.output or ""
    if not crate:
        base = os.path.basename(output) or "?"
        return base, "shared-library" if request.kind == "shared" else "executable"
    if crate.startswith("build_script_"):
        return environ.get("CARGO_PKG_NAME", crate), "build-script"
    takes_proc_macro = takes_libtest = has_rmeta = False
    for path in request.inputs:
        base = path[path.rfind("/") + 1:]
        if base == "rmeta.o":
            has_rmeta = True
        elif base.endswith(".rlib"):
            if base.startswith("libproc_macro-"):
                takes_proc_macro = True
            elif base.startswith("libtest-"):
                takes_libtest = True
    if request.kind == "shared":
        if takes_proc_macro:
            return crate, "proc-macro"
        if has_rmeta:
            return crate, "dylib"
        return crate, "cdylib" if "-Wl,--gc-sections" in request.args else "shared"
    if takes_libtest:  # a test harness, a binary's own unit tests included (CARGO_BIN_NAME is set there too)
        return environ.get("CARGO_BIN_NAME") or crate, "test"
    if environ.get("CARGO_BIN_NAME"):
        return environ["CARGO_BIN_NAME"], "bin"
    if "/examples/" in output:
        return crate, "example"
    return crate, "bin"


# --- the spool --------------------------------------------------------------

def encode(record: dict) -> bytes:
    body = marshal.dumps(record, 4)
    return MAGIC + len(body).to_bytes(4, "little") + body + TRAILER


def append(state, frame, max_bytes=0, _tries=3) -> None:
    """One os.write of one frame to the spool, under the spool's lock.

    A spool past max_bytes (nobody ran a reading command for a long time) is renamed to
    links.spool.1, replacing the one before: at most about twice max_bytes stay on disk, the
    oldest records go first, and the next ingestion reads links.spool.1 before links.spool."""
    path = os.path.join(state, SPOOL)
    for _ in range(_tries):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:
            from linkwrap.paths import make_private_dir
            make_private_dir(state)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.lockf(fd, os.F_LOCK, 0)
            # The ingester may have renamed this file aside before we got the lock.
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same and max_bytes and os.fstat(fd).st_size + len(frame) > max_bytes:
                try:
                    os.rename(path, os.path.join(state, ROTATED))
                except FileNotFoundError:
                    pass  # an ingester took it first
                continue  # under the lock: a writer waiting on this file will see it moved
            if same:
                n = os.write(fd, frame)
                if n != len(frame):
                    raise OSError(28, "short write to the link spool")
                return
        finally:
            os.close(fd)  # closing releases the lock
    raise OSError(11, "the link spool kept moving")


def _warn_once(state, err, build_key) -> None:
    """Said once per build and failure kind: once for ever could be never, as rustc drops a passed
    link's stderr (the first build's warning unseen, every later one silent, every record lost)."""
    import binascii
    import errno as errno_mod
    from linkwrap import faults
    kind = errno_mod.errorcode.get(err.errno, "error") if err.errno else "error"
    kind += f"-{binascii.crc32(build_key.encode('utf-8', 'surrogateescape')):08x}"
    from linkwrap.paths import state_problem
    problem = state_problem()
    why = f": {problem}" if problem else f" in {state} ({err.strerror or err})"
    faults.warn_once(kind, f"cannot record links{why}; links are not affected; said once "
                           "(see `linkwrap log status`)")


def _fault(doing, exc) -> None:
    try:
        from linkwrap import faults
        faults.note(doing, exc)
    except BaseException:
        pass
