"""A server child's world: its own as it waited, and the client's, which it takes for a link.

Owns: the process state of a child that lives from one link to the next (_OWN: its own cgroups,
limits, environment as it waited; _KEPT: what it keeps for its next links; _LINK: this link's notes;
_notify and _handoff, the fds it tells the server by) and adopting a client's world: its fds at
their own numbers (fds_of(), take(): fds 0-2 and the jobserver's), its working directory,
environment, umask, resource limits, priority and scheduling policy (settle()), its cgroups
(join_cgroups()), noting what cannot be put back after the link.
May import: protocol (below it) and linkwrap's lower packages, lazily; the other modules of
linkwrap.server read and set this state as world._KEPT and the like.
"""
import os

from linkwrap.server.protocol import _quit

# This spare's own cgroups (/proc/self/cgroup as read) and resource limits, read before it
# waits: a link compares the client's with them and changes only what differs.
_OWN = {}
PR_SET_CHILD_SUBREAPER = 36


def _own_world() -> None:
    import resource
    with open("/proc/self/cgroup", "rb") as f:
        _OWN["cgroup"] = f.read()
    # By number, as the client sends them (0 to RLIM_NLIMITS - 1): Python names no RLIMIT_LOCKS.
    top = max(getattr(resource, n) for n in dir(resource) if n.startswith("RLIMIT_"))
    _OWN["limits"] = {which: resource.getrlimit(which) for which in range(top + 1)}
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        call = libc.syscall
        call.restype = ctypes.c_long
        call.argtypes = (ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_long)
        _OWN["syscall"] = call
        # A forking linker's worker, orphaned when the linker's first process exits, is then
        # reparented to this child rather than to init: its time and memory reach the record, and
        # nothing of the link outlives the child (run.reap). Not inherited by the linker.
        _OWN["reaps"] = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (ImportError, OSError, AttributeError):
        _OWN["syscall"] = None


# In a child: what it keeps from one link to the next, and how it was while it waited for its
# first (_keep()). The fds, all close-on-exec (no linker may inherit the listening socket):
# "listener", "life" (the server's life pipe), "handoff" (hand_off()'s socket), "cwd" (a directory
# fd of its working directory), "stdio" ([(a copy of fd 0, 1, 2, its inheritable flag)]) and
# "fds", the set of every fd it holds but the kept mount table's (probe: opened again when lost).
_KEPT = {}


# In a child, for the link it serves: "changed" (what settle() changed that cannot go back),
# "again" (it will serve the next link), "why" (what stopped it, for the tests), "told" (the words
# sent to the server).
_LINK = {}


_notify = None  # in a child: the notify pipe's write end (workers.spare())


# In a child: the server's end of the hand-off (hand_off()), and its inode, by which it is known
# still to be that socket (take() may have put one of the client's fds at its number).
_handoff = None


def fds_of(pid, targets, conn):
    """Copies of the client's fds, taken from it (pidfd_getfd(2), Linux 5.6): no round trip for
    them. -> None where that is refused (ptrace rules, a container's seccomp filter, an older
    kernel): the client then sends them."""
    import select
    import socket
    syscall = _OWN.get("syscall")
    if syscall is None:
        return None
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return None
    got = []
    try:
        # Still connected, so pid is still the client (not a pid reused since it died).
        if select.select([conn], [], [], 0)[0] and conn.recv(1, socket.MSG_PEEK) == b"":
            _quit()
        for fd in targets:
            copy = syscall(PIDFD_GETFD, pidfd, fd, 0)
            if copy < 0:
                for c in got:
                    os.close(c)
                return None
            got.append(copy)
        return got
    finally:
        os.close(pidfd)


PIDFD_GETFD = 438  # the same number on every architecture (added after the tables were unified)


def settle(req, peer_pid) -> None:
    """Become the client's link but for its fds: its cwd, environment, umask, limits, priority and cgroups."""
    os.chdir(req["cwd"])
    env, want = os.environ, req["env"]
    # Compared with a plain copy of os.environ (spare()): each read of os.environ itself decodes.
    own = _OWN.get("env")
    if own is None:
        own = dict(env)
    # The keys changed are noted: _back() puts back those alone (a whole copy of os.environ decodes
    # every name and value, ~0.1 ms a link), then checks the rest is as it was.
    touched = _LINK.setdefault("env", [])
    for k in own.keys() - want.keys():
        del env[k]
        touched.append(k)
    for k, v in want.items():  # the server's own environment came from a build's: most are alike
        if own.get(k) != v:
            env[k] = v
            touched.append(k)
    os.umask(req["umask"])
    # What cannot be put back exactly after the link (a hard limit this process may not raise
    # again, a priority it may not take back, a scheduling policy, a cgroup left): noted, and this
    # child then serves no other link. The rest _back() puts back: a server started by a niced
    # build, or by one with other limits, must not lose its children's reuse to every other build.
    changed = _LINK.setdefault("changed", [])
    _LINK["limits"] = _same_limits(req["limits"])  # whether _back() has any to set back
    if _LINK["limits"] and not _limits_go_back():
        changed.append("limits")
    try:
        # `nice cargo build`: its links run at its priority, not at the server's (that of whichever
        # build started it). Going back up may be refused (RLIMIT_NICE): the link then runs as the server.
        policy, nice = os.sched_getscheduler(peer_pid), os.getpriority(os.PRIO_PROCESS, peer_pid)
        if policy != os.sched_getscheduler(0) and policy in (os.SCHED_OTHER, os.SCHED_BATCH, os.SCHED_IDLE):
            changed.append("policy")
            os.sched_setscheduler(0, policy, os.sched_param(0))
        if nice != os.getpriority(os.PRIO_PROCESS, 0):
            # A lower priority than the one it waited at is taken back only where nice 19 is (the
            # tidying's: _may_renice); a higher one is always given up.
            if nice > _KEPT.get("nice", 0) and not _KEPT.get("renice"):
                changed.append("nice")
            os.setpriority(os.PRIO_PROCESS, 0, nice)
    except OSError:
        pass
    if req["cgroup"] != _OWN.get("cgroup"):  # the world key matched, but the server may have moved
        changed.append("cgroups")
        join_cgroups(peer_pid)
    import _signal
    for sig in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGCHLD):
        _signal.signal(sig, _signal.SIG_DFL)
    from linkwrap.run import output
    output._owner = None  # this child owns the link's private directory, not the server


def take(req, fds, conn):
    """The client's fds at their own numbers. -> conn, moved above the fd numbers the link
    needs (a jobserver's may be any), as is each fd this process keeps for its next links
    (_KEPT["fds"]: the listener, the life and notify pipes, the hand-off...) that has one of them."""
    import socket
    kept = set(_KEPT.get("fds") or ()) | ({_notify} if _notify is not None else set())
    targets = set(req["fds"])
    if not targets & (set(fds) | kept | {conn.fileno()}):
        # The usual case: no fd of ours, nor a received one, has a target's number.
        for fd, target in zip(fds, req["fds"]):
            os.dup2(fd, target, inheritable=True)
            os.close(fd)
        return conn
    # Received fds and the connection first go above every target and every received fd,
    # so that no dup2 overwrites one still needed.
    floor = max(req["fds"] + fds + [conn.fileno()] + list(kept))
    moved = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0, fileno=_dup_above(conn.fileno(), floor))
    conn.close()
    conn = moved
    floor = conn.fileno()
    for fd in sorted(kept & targets):
        floor = _dup_above(fd, floor)
        _renumber(fd, floor)
    high = [_dup_above(fd, floor) for fd in fds]
    for fd in fds:
        os.close(fd)
    for fd, target in zip(high, req["fds"]):
        os.dup2(fd, target, inheritable=True)
        os.close(fd)
    return conn


def _dup_above(fd, floor):
    import fcntl
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, floor + 1)


def _renumber(old, new) -> None:
    """take() moved a kept fd from old to new: what names it follows, and old is closed."""
    import socket
    global _notify, _handoff
    if _notify == old:
        _notify = new
    for key in ("listener", "handoff"):
        sock = _KEPT.get(key)
        if sock is not None and sock.fileno() == old:
            moved = socket.socket(sock.family, sock.type, sock.proto, fileno=new)
            if _handoff is sock:
                _handoff = moved
            _KEPT[key] = moved
            sock.detach()
    for key in ("life", "cwd"):
        if _KEPT.get(key) == old:
            _KEPT[key] = new
    if _KEPT.get("stdio"):
        _KEPT["stdio"] = [(new if copy == old else copy, inheritable) for copy, inheritable in _KEPT["stdio"]]
    if _KEPT.get("fds") is not None:
        _KEPT["fds"].discard(old)
        _KEPT["fds"].add(new)
    os.close(old)


def _same_limits(limits) -> bool:
    """The client's resource limits ({resource: (soft, hard)}, -1 unlimited) where they differ.
    -> True when one was set."""
    import resource
    own = _OWN.get("limits", {})
    changed = False
    for which, want in limits.items():
        if own.get(which) != want:
            changed = True
            resource.setrlimit(which, want)
    return changed


def _limits_go_back() -> bool:
    """Whether the limits this process waited with (_OWN) can be set again after the client's:
    a hard limit the client lowered is raised again only with CAP_SYS_RESOURCE."""
    import resource
    own = _OWN.get("limits")
    if own is None:  # not read (_own_world failed): settle() set every limit, with nothing to go back to
        return False
    for which, (_, hard) in own.items():
        now = resource.getrlimit(which)[1]
        if hard != now and (hard == resource.RLIM_INFINITY or (now != resource.RLIM_INFINITY and hard > now)):
            return _capable(24)  # CAP_SYS_RESOURCE
    return True


def _may_renice(nice) -> bool:
    """Whether this process may go back from nice 19 to nice (RLIMIT_NICE, CAP_SYS_NICE)."""
    import resource
    soft = resource.getrlimit(resource.RLIMIT_NICE)[0]
    if soft == resource.RLIM_INFINITY or 20 - nice <= soft:
        return True
    return _capable(23)  # CAP_SYS_NICE


def _capable(bit) -> bool:
    """Whether this process has the capability numbered bit in its effective set, in the initial
    user namespace: the kernel checks a hard limit's raising and a priority's taking there, and in
    another (rootless podman, `unshare -r`) every capability shows in CapEff."""
    try:
        with open("/proc/self/uid_map", "rb") as f:
            if f.read().split() != [b"0", b"0", b"4294967295"]:
                return False
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"CapEff:"):
                    return bool(int(line.split()[1], 16) >> bit & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def join_cgroups(pid) -> None:
    """Move this process into every cgroup the client is in (v1 hierarchies and v2)."""
    mine = _cgroups("self")
    theirs = _cgroups(pid)
    if mine == theirs:
        return
    mounts = _cgroup_mounts()
    for hier, (controllers, path) in theirs.items():
        if mine.get(hier) == (controllers, path):
            continue
        where = mounts.get(controllers)
        if where is None:
            raise OSError(f"cgroup hierarchy {controllers or 'v2'} is not mounted")
        mnt, root = where
        if root != "/" and (path + "/").startswith(root.rstrip("/") + "/"):
            path = path[len(root.rstrip("/")):]
        with open(os.path.join(mnt, path.lstrip("/"), "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))


def _cgroups(pid) -> dict:
    out = {}
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            hier, controllers, path = line.rstrip("\n").split(":", 2)
            out[hier] = (controllers, path)
    return out


def _cgroup_mounts() -> dict:
    """{controllers as /proc/*/cgroup names them ("memory", "cpu,cpuacct", "name=systemd", "" for v2):
    (mount point, the mount's root within the hierarchy)}."""
    with open("/proc/cgroups") as f:
        known = {line.split()[0] for line in f if line.strip() and not line.startswith("#")}
    out = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fstype, _, opts = (right.split() + ["", "", ""])[:3]
            fields = left.split()
            where = (fields[4], fields[3])
            if fstype == "cgroup2":
                out.setdefault("", where)
            elif fstype == "cgroup":
                names = opts.split(",")
                controllers = ",".join(n for n in names if n in known)
                out.setdefault(controllers or next((n for n in names if n.startswith("name=")), "?"), where)
    return out
