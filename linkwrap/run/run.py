"""RUN: (request, decision) -> Outcome. Runs the cc driver with the chosen linker.

The driver is started with os.posix_spawn and reaped with os.wait4, which
gives the rusage of the whole driver -> collect2 -> linker chain (the kernel
keeps the maximum RSS over waited-for descendants). mold and wild fork: their
first process exits once the output is complete and a worker, which wait4
never sees, frees the memory. Where the process running the link is a child
subreaper (the server's child: reaps=True) the worker becomes its child and
reap() adds its figures after the answer; elsewhere the policy gives them
--no-fork so that the figure is the linker's own.

The linker's stdout and stderr go to memfds, not pipes: nothing can deadlock,
and when a failed attempt is retried as the caller asked, its messages can be
kept out of the build log.
"""
import _signal  # not `signal`: that one imports enum (~3 ms)
import errno
import os
import sys
import time
from linkwrap.records import record
from linkwrap.run.capture import own_peak_kb, waited

from linkwrap.request import args as args_mod
from linkwrap.run import output as output_mod


class Outcome(record("Outcome", [
    "returncode",   # int: the driver's exit status (128+N for signal N)
    "wall_ms",      # float
    "user_ms",      # float
    "sys_ms",       # float
    "peak_rss_kb",  # int: max RSS of the driver and the linker it ran
    "stdout",       # bytes: what the driver and linker printed
    "stderr",       # bytes
    "command",      # tuple[str]: what was run
    "write_mode",   # str: the write mode that was applied
    "output_bytes", # int | None: size of the output after a successful link
    "linker",       # str | None: the linker that ran ("mold 1.10.1"), None when run as asked
    "start",        # "direct" (the linker itself) | "driver" (through cc): see direct.py |
                    # "in-process" (linkwrap's own linker in a fork of the server's child: in_process.py)
    "spawner_rss_kb",  # int | None: this process's peak RSS as the linker started (own_peak_kb())
], defaults=(None,))):
    __slots__ = ()


# mold's `-run` hijacks every exec of ld/ld.lld/ld.bfd/... (LD_PRELOAD of
# mold-wrapper.so): it would turn whatever we chose back into mold.
def linker_environment(environ=os.environ) -> dict:
    env = dict(environ)
    preload = env.get("LD_PRELOAD", "")
    if "mold-wrapper" in preload:
        kept = [p for p in preload.replace(":", " ").split() if "mold-wrapper" not in p]
        if kept:
            env["LD_PRELOAD"] = " ".join(kept)
        else:
            del env["LD_PRELOAD"]
    env.pop("MOLD_PATH", None)
    return env


def command(request, decision, link_path) -> list:
    """The driver command line for this decision, linking to link_path."""
    if decision.linker is None:
        # As asked: the original arguments, rustc's linker-forcing ones included.
        base = args_mod.expand_response_files(request.argv, request.cwd)
        return [request.driver] + (args_mod.with_output(base, link_path) if link_path else base)
    from linkwrap.facts.linkers import shim_dir
    body = args_mod.with_output(request.args, link_path) if link_path else list(request.args)
    flags = [f"-Wl,{f}" for f in decision.linker_flags]
    # -B<shim> first: gcc takes the first -B that has an `ld` (reference §5).
    return [request.driver, f"-B{shim_dir(decision.linker)}", *body, *flags, *decision.driver_flags]


def execute(request, decision, environ=os.environ, direct=True, owner=None, meanwhile=None,
            reaps=False) -> Outcome:
    """Run the link for this decision and carry out its write mode.

    SIGINT, SIGTERM and SIGHUP that arrive while the linker runs are passed on
    to the driver and everything it started; once it has exited the attempt is
    finished or cleaned up and linkwrap dies of the same signal, as the caller
    expects of an interrupted command (raises Interrupted). They stay in the caller's
    process group, so whatever stops or kills that group (^C, ^Z, a CI timeout's SIGKILL,
    ninja interrupting a job) reaches the linker too, even when linkwrap cannot pass it on.
    direct=False keeps the driver even when the linker could be started directly; owner
    names the private directory (invocation.owner); meanwhile() is called once the linker has
    started, before it is waited for (a fault in it is noted, never the link's). reaps: this
    process is a child subreaper, so a forking linker's worker may already be its own child when
    a signal comes: it is stopped too (reap() collects it).
    """
    plan = output_mod.prepare(request, decision.write_mode, owner)
    forward = _Forward(reaps)
    rsp = None
    held = []

    def alongside():
        # The old output's second name (output.hold) costs the commit nothing when made now.
        held.append(output_mod.hold(plan))
        while WHILE_LINKING:
            try:
                WHILE_LINKING.pop()()
            except Exception as e:  # it costs only what it was for: done again when needed
                from linkwrap import faults
                faults.note("working while the linker ran", e)
        if meanwhile is not None:
            meanwhile()
    try:
        argv = direct_command(request, decision, plan.link_path, environ) if direct else None
        start = "driver" if argv is None else "direct"
        if argv is None:
            argv = command(request, decision, plan.link_path)
        if request.used_response_file:
            rsp, argv = _to_response_file(argv, plan.work_dir, os.path.basename(plan.final or ""))
        env = linker_environment(environ)
        if decision.linker is not None and decision.linker.name == "python":
            # The policy decides whether linkwrap's own linker links incrementally (choice/
            # incremental.py), not what the environment passes on: its -B shim cannot pass a flag, so
            # the variable asks, set or taken away (LINKWRAP_INCREMENTAL=0, a release build).
            if decision.incremental:
                # patch-only where a full linker stands by (decision.instead): linkwrap's own full
                # link, many times the fast linker's, never runs on the build's path unasked
                from linkwrap.ld.incremental import where
                env[where.ENV] = where.PATCH_ONLY if decision.instead is not None else where.FULL_OR_PATCH
            else:
                env.pop("LINKWRAP_LD_INCREMENTAL", None)
            if plan.final and plan.link_path != plan.final:
                # linkwrap's own linker keeps an incremental link's state beside the output it is
                # for, not in this link's private directory (ld/incremental/state.py)
                env["LINKWRAP_LD_OUTPUT"] = os.path.join(request.cwd, plan.final)
        runner = spawn
        if start == "direct" and reaps and decision.instead is not None and decision.linker.name == "python":
            # a patch tried in the warm server: in a fork that has the linker imported (in_process.py)
            from linkwrap.run import in_process
            if in_process.runs_here(decision.linker):
                runner, start = in_process.spawn, "in-process"
        with forward:
            try:
                *result, spawner_kb = runner(argv, env, forward, alongside)
            except OSError as e:
                if e.errno not in _CANNOT_RUN:
                    raise  # not the driver's fault (EMFILE, E2BIG…): the pipeline links as asked
                # no such driver: fail as a shell would
                from linkwrap.errors import error_line
                msg = error_line(f"cannot run {argv[0]}: {e.strerror}").encode("utf-8", "surrogateescape")
                result, spawner_kb = [127, 0.0, 0.0, 0.0, 0, b"", msg], None
        if rsp:  # before commit: nothing of ours may be carried next to the output
            _unlink(rsp)
            rsp = None
        if forward.caught and result[0] != 0:
            # Interrupted: FRESH keeps the old output untouched; IN_PLACE's is gone.
            output_mod.abort(plan, linker_ran=True)
            forward.die()
        if forward.pid is None:  # nothing ran: leave the output as it was
            output_mod.abort(plan, linker_ran=False)
            output_bytes = error = None
        else:
            # A link that finished despite a signal is complete: keep it, then stop.
            ok, output_bytes, error = output_mod.commit(plan, result[0] == 0, held=bool(held and held[0]))
    except BaseException:
        output_mod.abort(plan, linker_ran=forward.pid is not None)
        raise
    finally:
        if rsp:
            _unlink(rsp)
    if error:
        result[0] = result[0] or 1
        result[6] += error.encode("utf-8", "surrogateescape")
    if plan.link_path != plan.final:
        # The linker's messages name our temporary path; the caller knows the real one.
        tmp, final = os.fsencode(plan.link_path), os.fsencode(plan.final)  # paths need not be UTF-8
        result[5] = result[5].replace(tmp, final)
        result[6] = result[6].replace(tmp, final)
    if forward.caught:
        forward.die()
    return Outcome(*result, tuple(argv), plan.mode, output_bytes,
                   decision.linker.label if decision.linker else None, start, spawner_kb)


def direct_command(request, decision, link_path, environ=os.environ):
    """The linker's own command line (direct.py), or None: the driver runs this link."""
    from linkwrap.run import direct
    try:
        return direct.command(request, decision, link_path, environ)
    except direct.NotDirect:
        return None
    except Exception as e:  # a fault of ours: the driver knows how to run it
        from linkwrap import faults
        faults.note("learning the driver's linker command", e)
        return None


# What the entry point needs done before the answer but not before the linker's start (the
# server's child: the files its answer needs, opened): called once, while the first attempt's
# linker runs.
WHILE_LINKING = []

# posix_spawnp errors that mean the driver itself cannot be run (a shell's 127).
_CANNOT_RUN = (errno.ENOENT, errno.EACCES, errno.ENOTDIR, errno.ENOEXEC)

# Signals that mean "stop the build"; each is passed on to the driver and its descendants.
_FORWARDED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)


class _Forward:
    """While the linker runs: pass termination signals on, remember the first."""

    def __init__(self, reaps=False):
        self.pid = None
        self.caught = None
        self.saved = {}
        self.reaps = reaps

    def __enter__(self):
        entry = sys.modules.get("linkwrap.cc")  # the script's: a ^C it could not raise (in a finaliser)
        if entry is not None and entry._LOST:
            self.caught = _signal.SIGINT  # passed on as soon as the linker starts: the link stops
        for sig in _FORWARDED:
            try:
                old = _signal.getsignal(sig)
                if old == _signal.SIG_IGN:
                    continue  # started with it ignored (nohup, `&`): so is the linker
                _signal.signal(sig, self._handler)
                self.saved[sig] = old
            except (ValueError, OSError):
                pass  # not the main thread: signals stay as they are
        return self

    def _handler(self, sig, frame):
        if self.caught is None:
            self.caught = sig
        if self.pid:
            # A signal sent to the whole group reaches them anyway; a second one is harmless. A
            # subreaper's own children include a forking linker's worker once its parent has exited.
            if self.reaps:
                kill_descendants(sig)
            else:
                _signal_tree(self.pid, sig)  # after its wait4 the pid is free: then nothing is sent

    def started(self, pid):
        self.pid = pid
        if self.caught:  # arrived between installing the handler and the spawn
            self._handler(self.caught, None)

    def __exit__(self, *exc):
        for sig, old in self.saved.items():
            try:
                _signal.signal(sig, old if old is not None else _signal.SIG_DFL)
            except (ValueError, OSError):
                pass
        return False

    def die(self):
        """End the link as stopped by this signal: the entry point dies of it (invocation.Killed)."""
        raise Interrupted(self.caught)


class Interrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP stopped the link; its attempt is cleaned up. Not an Exception:
    no fall-back may catch it and link again."""

    def __init__(self, sig):
        super().__init__(sig)
        self.signal = sig


def spawn(argv, env, forward=None, meanwhile=None):
    """Run argv; -> (returncode, wall_ms, user_ms, sys_ms, peak_rss_kb, stdout, stderr, spawner_rss_kb).

    meanwhile(), when given, runs while argv does (capture.waited says how)."""
    out_fd = os.memfd_create("linkwrap-stdout", os.MFD_CLOEXEC)
    err_fd = os.memfd_create("linkwrap-stderr", os.MFD_CLOEXEC)
    try:
        actions = [(os.POSIX_SPAWN_DUP2, out_fd, 1), (os.POSIX_SPAWN_DUP2, err_fd, 2)]
        started = time.perf_counter_ns()
        # In the caller's process group (a SIGKILL of the group must not leave a linker
        # running); SIGPIPE/SIGXFSZ back to default (Python ignores them).
        pid = os.posix_spawnp(argv[0], argv, env, file_actions=actions,
                              setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ))
        # posix_spawn returns once the child has exec'd: this process's peak now is the one the
        # kernel folded into the linker's (read while the linker runs, before meanwhile's work).
        spawner_kb = own_peak_kb()
        return waited(pid, started, out_fd, err_fd, spawner_kb, forward, meanwhile)
    finally:
        os.close(out_fd)
        os.close(err_fd)


# How long reap() waits for what a link left running. A forking linker's worker frees its memory in
# tens of ms per GiB, but it may also write (mold >= 2.33's detached separate debug file): it is
# never killed for being slow, only left to init once this process exits, as without linkwrap.
REAP_S = 60.0
# After an interruption the leftovers were sent SIGKILL: how long to wait for them to be gone.
REAP_KILLED_S = 2.0


def reap(outcome=None, bound_s=REAP_S, kill=False):
    """Wait for every child of this process (a child subreaper: orphaned descendants are its
    children too), at most bound_s. -> outcome with their figures added: user and sys summed,
    peak RSS the highest (a forked worker's ru_maxrss is max(its parent's RSS at the fork, its
    own peak): the real one). The wall time stays the first process's: the build waits for it
    alone, and the output is complete when it exits. kill: an interrupted link's leftovers,
    SIGKILLed at the bound and waited for REAP_KILLED_S more; otherwise what outlives the bound
    keeps running. outcome None: only the reaping."""
    user = sys_ = 0.0
    peak = 0
    deadline = time.monotonic() + bound_s
    killed = False
    while True:
        try:
            pid, _, ru = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break  # ECHILD: nothing left
        if pid:
            user += ru.ru_utime * 1000
            sys_ += ru.ru_stime * 1000
            peak = max(peak, ru.ru_maxrss)
            continue
        left = deadline - time.monotonic()
        if left <= 0:
            if killed or not kill:
                break  # init reaps it once we exit (unkillable for now: uninterruptible I/O)
            kill_descendants(_signal.SIGKILL)
            killed = True
            deadline = time.monotonic() + REAP_KILLED_S
            continue
        _wait_for_a_child(left)
    if outcome is None or not (user or sys_ or peak):
        return outcome
    return outcome._replace(user_ms=outcome.user_ms + user, sys_ms=outcome.sys_ms + sys_,
                            peak_rss_kb=max(outcome.peak_rss_kb, peak))


def kill_descendants(sig) -> None:
    """Send sig to every descendant of this process (whatever a link left running)."""
    _signal_tree(os.getpid(), sig, root=False)


def _wait_for_a_child(timeout) -> None:
    """Until one of this process's children exits, or timeout seconds. Each child's pidfd is
    readable once it has exited: no SIGCHLD handler, which another thread could take instead."""
    import select
    fds = []
    try:
        for p in _children(os.getpid()):  # not grandchildren: an exited one waits for its parent
            try:
                fds.append(os.pidfd_open(p))
            except OSError:
                pass  # gone since, or a kernel before 5.3
        if fds:
            select.select(fds, [], [], timeout)
        else:
            time.sleep(min(timeout, 0.002))
    finally:
        for fd in fds:
            os.close(fd)


def _signal_tree(pid, sig, root=True) -> None:
    """sig to pid (a child of this process; root=False: not to pid itself) and its descendants (the
    driver, collect2, the linker, its helpers), parents first.

    A pid names a process only until it is reaped, and pids come round (pid_max 32768, a build
    forks thousands): a pid listed here whose process ended since may already be another
    process's, which must never get the signal. So each is pinned with a pidfd first and
    signalled only if, read after that, it is still the child of the process it was found under:
    then the pidfd is that child. Every pidfd is taken before the first signal, so that no
    descendant is reparented by a kill of its parent while it is being checked."""
    me = os.getpid()
    todo = [(me, pid)] if root else [(pid, c) for c in _children(pid)]
    pinned = []  # (pidfd, pid); pidfd None where pidfds are missing: checked, then sent by pid
    try:
        while todo:
            parent, p = todo.pop(0)
            try:
                fd = os.pidfd_open(p)
            except OSError as e:
                if e.errno == errno.ESRCH:
                    continue  # gone
                fd = None  # a kernel before 5.3, a seccomp filter's EPERM, no fd left: by pid
            # A process whose parent ended meanwhile has come to this one (a subreaper, as the
            # server's child is): a forking linker's worker once its first process exited.
            if _parent_of(p) not in (parent, me):
                if fd is not None:
                    os.close(fd)
                continue
            pinned.append((fd, p))
            todo.extend((p, c) for c in _children(p))
        for fd, p in pinned:
            try:
                if fd is None:
                    os.kill(p, sig)
                else:
                    _signal.pidfd_send_signal(fd, sig)
            except OSError:
                pass  # ended meanwhile
    finally:
        for fd, _ in pinned:
            if fd is not None:
                os.close(fd)


def _parent_of(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _children(pid) -> list:
    out = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")  # a child belongs to the thread that forked it
    except OSError:
        return out
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/children", "rb") as f:
                out.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            pass
    return out


def _to_response_file(argv, work_dir=None, output_name=None):
    """Keep passing a response file when the caller needed one (ARG_MAX).

    It lives in the link's private directory when there is one, so it goes
    with it whatever happens to this process.
    """
    text = "\n".join(args_mod.quote_response_arg(a) for a in argv[1:])
    if work_dir:
        # Never the output's own name: the linker would write over its arguments.
        name = "linkwrap-args.rsp" if output_name != "linkwrap-args.rsp" else "linkwrap-args-1.rsp"
        path = os.path.join(work_dir, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    else:
        import tempfile
        fd, path = tempfile.mkstemp(prefix="linkwrap-", suffix=".rsp")
    with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)
    return path, [argv[0], "@" + path]


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def write_through(outcome) -> None:
    """Pass the linker's own output on unchanged (stdout, then stderr)."""
    for fd, data in ((1, outcome.stdout), (2, outcome.stderr)):
        view = memoryview(data)
        while view:
            try:
                n = os.write(fd, view)
            except OSError:
                break
            view = view[n:]


__all__ = ["Outcome", "Interrupted", "execute", "command", "spawn", "reap", "kill_descendants", "write_through"]
