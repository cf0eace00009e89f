"""A child that served a link, serving the next: what it keeps, and putting it back as it waited.

Owns: how many links a child serves and how much it may grow (LINKS_PER_CHILD, RSS_SLACK_KB), the
picture of a spare as it waits for its first link (_keep(): its fds, working directory, umask,
priority, signals, memory), putting the process back to that after each link or saying it cannot
(_back(): then the child exits), and the tests' notes of what a link left changed (_module_state,
_note_state: LINKWRAP_TEST_STATE).
May import: warm, world and tidying (below it), and the link path's modules, lazily.
"""
import os
import sys

from linkwrap.server import tidying, world
from linkwrap.server.warm import hand_off
from linkwrap.server.world import _dup_above, _may_renice

# A child that served a link serves the next one when it can be put back exactly as it waited
# (_back()): no fork, no rehearsal, no exit per link, and a process warm from a real link. Bounded:
# LINKS_PER_CHILD links, RSS_SLACK_KB more RSS than it had waiting for its first, and no more
# children waiting than SPARES and one per CPU (the rest exit after their link).
LINKS_PER_CHILD = 100
RSS_SLACK_KB = 4 << 10  # how much bigger than it waited for its first link a child may serve again


def _links_per_child() -> int:
    """LINKS_PER_CHILD, or fewer when the server's environment says so (the tests' bound)."""
    try:
        return max(1, int(os.environ.get("LINKWRAP_TEST_LINKS_PER_CHILD") or LINKS_PER_CHILD))
    except ValueError:
        return LINKS_PER_CHILD


def _keep() -> None:
    """In a spare, before it waits: what _back() puts back after each link, as it is now."""
    import _signal
    import resource
    from linkwrap import faults
    try:
        world._KEPT["cwd"] = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        world._KEPT["stdio"] = [(_dup_above(fd, 2), os.get_inheritable(fd)) for fd in (0, 1, 2)]
        mask = os.umask(0o077)
        os.umask(mask)
        _clear_peak()  # the rehearsal's peak is not the first linker's either
        world._KEPT.update(umask=mask, nice=os.getpriority(os.PRIO_PROCESS, 0), policy=os.sched_getscheduler(0),
                     signals={sig: _signal.getsignal(sig) for sig in (  # those settle(), run_link() set
                         _signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGCHLD, _signal.SIGRTMIN + 1)},
                     mask=_signal.pthread_sigmask(_signal.SIG_BLOCK, ()), log_max=faults.LOG_MAX_BYTES,
                     links=0, rss_kb=_rss_kb(), peak_kb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        world._KEPT["renice"] = _may_renice(world._KEPT["nice"])
        world._KEPT["fds"] = _open_fds()
    except (OSError, ValueError):  # fd 0, 1 or 2 closed, /proc missing: one link per child, as before
        world._KEPT["fds"] = None


def _open_fds() -> set:
    """This process's open fds above 2 (0-2 are the link's, then its own again: _KEPT["stdio"]),
    but the kept mount table's (filesystems.keep_mountinfo())."""
    import fcntl
    from linkwrap.facts import filesystems
    out = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            fcntl.fcntl(int(name), fcntl.F_GETFD)  # closed by now: the listing's own
        except OSError:
            continue
        if int(name) > 2:
            out.add(int(name))
    if filesystems._MOUNTINFO:
        out.discard(filesystems._MOUNTINFO[0])
    return out


def _back(req, done) -> bool:
    """After a link that answered with an exit status: this process put back exactly as it waited
    for its first link (_keep()), for the next. -> False when anything cannot be: it then exits.

    Put back: fds 0-2 (the spare's own; the client's were let go at the answer, its jobserver fds
    closed), the working directory, os.environ (keys deleted, changed or added by settle()), the
    umask, the signal dispositions settle() and run_link() set, the priority (nice 19 after the
    answer), and the per-link state of the modules: run.WHILE_LINKING, output's deferred and
    directories (tidy() ended them), pipeline.HANDOFF and _handoff (re-armed), faults'
    LOG_MAX_BYTES and UNHEARD, linkwrap.cc's _LOST, _tidying and _null (empty: the answer took
    them), the tidying lock (let go: this link's record is written). Checked, else exit: no child
    left (a forking linker's worker: the next link's record must not take it in), the same cgroups,
    signal mask and fds (none of the link's left open), LINKS_PER_CHILD, RSS_SLACK_KB; the resource
    limits and the priority the client's link had are set back (settle() noted where they cannot be). Kept, as checked
    before each use: the memos of args, config, linkers, direct and probe, and what was read of the
    inputs by their identity (request/inputs.py) (docs/server.md, "Memos")."""
    import _signal
    import gc
    import resource
    from linkwrap import faults
    from linkwrap.run import output, run
    from linkwrap import pipeline
    from linkwrap.facts import filesystems, probe
    try:
        world._LINK["why"] = "a child left"  # what stopped it, for the tests' notes (LINKWRAP_TEST_STATE)
        try:
            os.waitpid(-1, os.WNOHANG)
            return False  # a child left, running or just ended
        except ChildProcessError:
            pass
        # The client's limits (settle()), first: a tiny RLIMIT_NOFILE or RLIMIT_AS of its would
        # fail the checks below for this child's own work.
        world._LINK["why"] = "the limits"
        for which, want in world._OWN.get("limits", {}).items() if world._LINK.get("limits", True) else ():
            if resource.getrlimit(which) != want:
                resource.setrlimit(which, want)
        for hold in done:
            if hold is not None:
                os.close(hold)  # the tidying lock: this link's record and history are written
        del done[:]
        for f in (sys.stdout, sys.stderr):
            if f is not None:
                try:
                    f.flush()  # what Python kept of a print goes where the link's fds are: /dev/null
                except (OSError, ValueError):
                    pass
        for fd, (copy, inheritable) in enumerate(world._KEPT["stdio"]):
            os.dup2(copy, fd, inheritable=inheritable)
        os.fchdir(world._KEPT["cwd"])
        env, own = os.environ, world._OWN["env"]
        for k in world._LINK.get("env", ()):
            if k in own:
                env[k] = own[k]
            else:
                env.pop(k, None)
        # os.environ's own bytes against those it waited with (one comparison in C); anything else
        # changed (a link step that set a variable) is put back the long way.
        if getattr(env, "_data", None) != world._OWN.get("env_data"):
            now = dict(env)
            for k in now.keys() - own.keys():
                del env[k]
            for k, v in own.items():
                if now.get(k) != v:
                    env[k] = v
        os.umask(world._KEPT["umask"])
        for sig, how in world._KEPT["signals"].items():
            _signal.signal(sig, how)
        run.WHILE_LINKING.clear()
        output.tidy()  # done already: _later None
        pipeline.HANDOFF = hand_off
        world._handoff = world._KEPT.get("handoff")
        faults.LOG_MAX_BYTES = world._KEPT["log_max"]
        faults.UNHEARD = False
        entry = sys.modules.get("linkwrap.cc")
        if entry is not None:
            del entry._LOST[:]
        for fd in tidying._tidying + tidying._null:
            if fd is not None:
                os.close(fd)
        del tidying._tidying[:], tidying._null[:]
        probe.read_mountinfo()  # forgets the kept table if a client's fd took its number
        world._LINK["why"] = "the cgroups"
        with open("/proc/self/cgroup", "rb") as f:
            if f.read() != world._OWN.get("cgroup"):  # moved from outside: settle() compares with it
                return False
        world._LINK["why"] = "the signal mask, fds or memory"
        if _signal.pthread_sigmask(_signal.SIG_BLOCK, ()) != world._KEPT["mask"] or _open_fds() != world._KEPT["fds"]:
            return False
        if not filesystems._MOUNTINFO:
            filesystems.keep_mountinfo()
        gc.collect()  # the link's cycles: the collector is off in the spares (serve())
        # A linker started with posix_spawn shares this process's memory until its exec, and the
        # kernel folds that memory's peak into the linker's ru_maxrss: the next link's record would
        # carry this one's memory (a 4 MB response file parsed here: tens of MB). So the child serves
        # again only as big as it waited for its first link (RSS_SLACK_KB; freed memory given back
        # first), and with its peak reset to that.
        world._LINK["why"] = "its memory"
        if (_rss_kb() - world._KEPT["rss_kb"] > RSS_SLACK_KB
                and (not _trim() or _rss_kb() - world._KEPT["rss_kb"] > RSS_SLACK_KB)):
            return False
        world._LINK["why"] = "the peak RSS"
        if (not _clear_peak()
                and resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > world._KEPT["peak_kb"] + RSS_SLACK_KB):
            return False
        world._LINK["why"] = "the priority"
        if os.getpriority(os.PRIO_PROCESS, 0) != world._KEPT["nice"]:  # the tidying's nice 19, or the client's
            os.setpriority(os.PRIO_PROCESS, 0, world._KEPT["nice"])
        priority = (os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0))
        if priority != (world._KEPT["nice"], world._KEPT["policy"]):
            return False
        world._KEPT["links"] += 1
        # Nothing made ahead for the next link: the caller may remove the output's directory as soon
        # as it has the answer (make clean, CMake's try_compile), and a directory made in it then
        # failed that removal ("Directory not empty") one time in ten.
        return True
    except Exception as e:
        world._LINK["why"] = repr(e)
        return False


def _rss_kb() -> int:
    """This process's resident memory now (kB), from /proc/self/statm."""
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


def _trim() -> bool:
    """Give the C allocator's free memory back to the system (glibc's malloc_trim). -> False where
    there is no such call."""
    try:
        import ctypes
        ctypes.CDLL(None).malloc_trim(0)  # its result says only whether memory was given back
    except (OSError, AttributeError):
        return False
    return True


def _clear_peak() -> bool:
    """Reset this process's peak RSS to its RSS now. -> False where it cannot be (Linux < 4.0).

    A linker started with posix_spawn shares this process's memory until its exec, and the kernel
    folds the old memory's peak into the new program's: a linker's ru_maxrss is at least this
    process's peak. Without the reset, one big link (a 4 MB response file parsed here) would be the
    peak in the records, and the memory history, of every later link this child serves."""
    try:
        fd = os.open("/proc/self/clear_refs", os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        os.write(fd, b"5")  # 5: reset the peak resident set size
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _module_state() -> dict:
    """For the tests (LINKWRAP_TEST_STATE): what each of linkwrap's module-level names holds, and
    the process's environment, working directory, umask and priority."""
    mask = os.umask(0o077)
    os.umask(mask)
    out = {"os.environ": (0, repr(sorted(os.environ.items()))), "os.getcwd": (0, os.getcwd()), "os.umask": (0, mask),
           "os.getpriority": (0, os.getpriority(os.PRIO_PROCESS, 0))}  # the fds: _back() checks them
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] != "linkwrap" or module is None:
            continue
        for key, value in list(vars(module).items()):
            if isinstance(value, (list, bytearray)):  # appended to per link, or not
                out[f"{name}.{key}"] = (id(value), len(value))
            elif isinstance(value, (dict, set)):
                out[f"{name}.{key}"] = (id(value), repr(value))
            elif not key.startswith("__"):
                out[f"{name}.{key}"] = (id(value), None)
    return out


def _note_state(path, before, why=None) -> None:
    """For the tests: append the module-level names a link left changed (after _back()) to path, or
    why this child could not serve another link."""
    if not path:
        return
    if before is not None:
        after = _module_state()
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    else:
        changed = ["exits:", str(why)]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, (f"{os.getpid()} " + " ".join(changed) + "\n").encode())
    finally:
        os.close(fd)
