"""The warm link server: the link path imported once, children forked ahead, each serving links.

A link through the script pays Python's start and imports (~10 ms) every time;
the server pays them once. The native client (client.c) connects to a per-user
socket whose name says which world it serves -- uid, cgroups, mount, pid and user
namespaces, linkwrap install (world_key()) -- so a client only ever reaches a
server that sees the same files, the same processes and the same limits.

Each link is served by a child forked ahead of it (a spare waiting in accept()). The child:
  1. checks the peer (SO_PEERCRED: our uid) and reads the request the client sent at once;
     'V' (another version) and 'F' send the client to the script;
  2. takes the client's fds 0-2 and jobserver fds from it (pidfd_getfd: 'T'; where refused, 'S'
     and the client sends them), its environment, working directory, umask and resource limits,
     its nice and scheduling policy, and joins its cgroups (memory limits and accounting stay the
     build's); the fds go to the same numbers;
  3. runs pipeline.link() for an Invocation naming the client
     (whose pid finds the build), while signal-driven I/O on the socket (F_SETSIG) turns each byte
     the client sends into that signal for the link -- and the client's end of the socket closing
     (SIGKILL of the build, a CI timeout) into SIGTERM;
  4. answers "X<status>", "K<signal>" or "D<argv>" (become the driver), waits for what the link
     left running (a forking linker's worker), and then waits for the next link itself when it can be
     put back exactly as it waited for this one (_back()): else it exits.
Peak RSS and times stay the linker's own: the child reaps it with wait4. It is a child subreaper
(_own_world), so mold's and wild's worker, orphaned when their first process exits, becomes its
child too: they run without --no-fork here, and the worker's figures join the record after the
answer (run.reap).

The server lives in its own session, exits after IDLE_S without a link, when
linkwrap's installed files change, or on `linkwrap server stop`. One server per
socket: it holds an flock on <socket>.lock for its lifetime.
"""
import os
import sys

IDLE_S = 15 * 60
CHECK_S = 5.0
MAGIC = 0x3343574C  # "LWC3", little-endian, as client.c sends it (3: no "A" before "T")
CONTROL = b"LWS1"
MAX_FDS = 19


# --- where: the same computation as client.c's -----------------------------------

def run_dir(environ=os.environ) -> str:
    home = environ.get("LINKWRAP_HOME", "")
    if home:
        return os.path.join(home, "run")
    rt = environ.get("XDG_RUNTIME_DIR", "")
    if rt.startswith("/"):
        return os.path.join(rt, "linkwrap")
    st = environ.get("XDG_STATE_HOME", "")
    if st.startswith("/"):
        return os.path.join(st, "linkwrap", "run")
    return os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".local", "state", "linkwrap", "run")


def open_run_dir(environ=os.environ, create=False) -> int:
    """An O_PATH-like fd of the run directory, after checking it is ours and 0700 (not followed if a symlink)."""
    path = run_dir(environ)
    if create:
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o077:
        os.close(fd)
        raise PermissionError(f"{path} is not a private directory of this user")
    return fd


def install_id() -> str:
    """The install this interpreter and package are (launcher.py names its bin directory so)."""
    import binascii
    import linkwrap
    parent = os.path.dirname(os.path.dirname(os.path.abspath(linkwrap.__file__)))
    where = binascii.crc32(f"{os.path.realpath(sys.executable)}\0{parent}".encode("utf-8", "surrogateescape"))
    return f"{where:08x}"


def world_key(install=None) -> str:
    """FNV-1a 64 of uid, /proc/self/cgroup, mnt/pid/user namespace inodes and the install."""
    parts = [f"{os.geteuid()}\n".encode()]
    try:
        with open("/proc/self/cgroup", "rb") as f:
            parts.append(f.read())
    except OSError:
        pass
    inodes = []
    for ns in ("mnt", "pid", "user"):
        try:
            inodes.append(str(os.stat(f"/proc/self/ns/{ns}").st_ino))
        except OSError:
            inodes.append("0")
    parts.append(f"\n{chr(10).join(inodes)}\n{install or install_id()}".encode())
    h = 14695981039346656037
    for b in b"".join(parts):
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def socket_name(key) -> str:
    return f"s-{key}"


# --- the server ------------------------------------------------------------------

# Where a link starts: the modules the child runs (its own and the pipeline's).
LINK_ROOTS = ("linkwrap.server.server", "linkwrap.pipeline")


def link_imports(roots=LINK_ROOTS) -> list:
    """Every module a link can import, derived from the source: the closure of the import
    statements (function-level ones included) of linkwrap's modules reachable from roots, and the
    other modules those statements name. A list kept by hand would miss the next lazy import, and
    each child would pay it at link time (struct, resource, zlib, learn... cost ~8 ms in all)."""
    import ast
    import importlib.util
    import linkwrap
    top = os.path.dirname(os.path.abspath(linkwrap.__file__)) + os.sep
    seen, ours, others, todo = set(), [], set(), list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None or not (spec.origin or "").startswith(top) or not spec.origin.endswith(".py"):
            continue
        ours.append(name)
        with open(spec.origin, "rb") as f:
            tree = ast.parse(f.read(), spec.origin)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                base = node.module if not node.level else importlib.util.resolve_name(
                    "." * node.level + node.module, spec.parent)
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for n in names:
                if n.split(".")[0] == "linkwrap":
                    todo.append(n)
                else:
                    others.add(n)
    return sorted(ours) + sorted(others)


def warm() -> None:
    """Import now, once, everything a link may import (link_imports()): the children inherit it."""
    import importlib
    for name in link_imports():
        try:
            importlib.import_module(name)
        except Exception:  # `from x import name` of a function, a module of another platform
            pass
    from linkwrap import libc
    libc.syscall()  # ~0.5 ms once here, not per link (libc.exchange, probe's cachestat)
    _TOUCHED.extend(_hand_off_objects())


# The objects of the link's hand-off and answer (the modules below: their functions, code and
# constants, classes), listed once in the server: a spare touches each before it waits (touch()).
HAND_OFF = ("linkwrap.server.server", "linkwrap.run.run", "linkwrap.run.output", "linkwrap.pipeline",
            "linkwrap.request.invocation", "linkwrap.faults", "linkwrap.records", "linkwrap.cache", "linkwrap.paths",
            "socket", "os", "posixpath", "stat")
_TOUCHED = []


def _hand_off_objects() -> list:
    import types
    seen, out = set(), []

    def add(o):
        if id(o) not in seen:
            seen.add(id(o))
            out.append(o)
            if isinstance(o, types.FunctionType):
                add(o.__code__)
                add(o.__defaults__)
            elif isinstance(o, types.CodeType):
                for k in o.co_consts:
                    add(k)
    for name in HAND_OFF:
        module = sys.modules.get(name)
        if module is None:
            continue
        add(module.__dict__)
        for value in list(vars(module).values()):
            add(value)
            if isinstance(value, type) and value.__module__ == name:
                add(value.__dict__)
                for member in list(vars(value).values()):
                    add(member)
    return out


def touch() -> None:
    """In a spare, before it waits: take a reference to each object of the hand-off and the answer.

    A forked child's first write to a page of the server's copies it (~3 us here), and running a
    function writes to its objects (reference counts, the interpreter's warm-up counters in its
    code): ~80 such copies between the accept and the linker's start here, each on the link's
    path. A reference taken and dropped here copies those pages while no link waits (~50 left)."""
    for _ in _TOUCHED:
        pass


def main() -> None:
    """`python -m linkwrap.server.server`: serve this world until idle; quiet, detached."""
    import fcntl
    import socket
    from linkwrap import __version__
    key = world_key()
    dfd = open_run_dir(create=True)
    name = socket_name(key)
    lock = os.open(f"/proc/self/fd/{dfd}/{name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                   0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os._exit(0)  # another server serves this world
    warm()
    path = f"/proc/self/fd/{dfd}/{name}"
    try:
        os.unlink(path)  # a stale socket of a server that died
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o077)
    try:
        listener.bind(path)
    finally:
        os.umask(old)
    listener.listen(128)
    listener.setblocking(False)
    stamp = installed_stamp()
    global _server_pid
    _server_pid = os.getpid()
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()} {__version__}\n".encode())
    serve(listener, stamp, path, dfd)


_stop = []


def _on_term(sig, frame):
    _stop.append(sig)


SPARES = 2  # children forked ahead, waiting in accept(): a link never waits for a fork
FORK_AFTER_S = 0.005  # how long after a link's answer the next spare is forked, while one waits
ANSWERED = 1 << 31  # on the notify pipe: pid | ANSWERED, the link of that child has answered; it exits
CONTROLLED = 1 << 30  # on the notify pipe: pid | CONTROLLED, that child's connection was no link
AGAIN = 1 << 29  # pid | AGAIN: answered, and it means to serve the next link (then READY, or ANSWERED: it exits)
READY = 1 << 28  # pid | READY: waiting for a connection again, as a spare
# The parent's figures, in a shared page every spare reads (its own copy is as old as its fork):
# links (8 bytes), running (4), the last child whose CONTROLLED word was counted out (4), stopping (1),
# at 20: the children waiting or coming back to wait (4).
FIGURES = 32
# A child that served a link serves the next one when it can be put back exactly as it waited
# (_back()): no fork, no rehearsal, no exit per link, and a process warm from a real link. Bounded:
# LINKS_PER_CHILD links, RSS_SLACK_KB more RSS than it had waiting for its first, and no more
# children waiting than SPARES and one per CPU (the rest exit after their link).
LINKS_PER_CHILD = 100
RSS_SLACK_KB = 4 << 10  # how much bigger than it waited for its first link a child may serve again
_notify = None  # in a child: the notify pipe's write end


def serve(listener, stamp, path, dfd) -> None:
    """Keep SPARES children waiting for links; exit when idle, outdated or asked to.

    A fork of this process costs milliseconds (page tables, then copy-on-write faults as the
    child touches objects), so it is paid ahead: each spare accepts one connection itself,
    tells the parent (its pid on the notify pipe) and the parent forks the next. The spares
    watch a pipe whose write end only the parent holds: the parent gone, they exit.
    """
    import gc
    import select
    import signal
    import time
    from linkwrap.bench import background  # hosted here: measures saved links while no link comes
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, _on_term)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    gc.collect()
    gc.freeze()  # the children's collector then never touches (and copies) the server's objects
    notify_r, notify_w = os.pipe()
    life_r, life_w = os.pipe()
    # The children's hand-off of their link's request (hand_off()): datagrams, each whole or none,
    # however many children send at once; a pipe would interleave requests longer than PIPE_BUF.
    import socket
    heard_r, heard_w = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    heard_r.setblocking(False)
    import mmap
    state = {"links": 0, "started": time.time(), "children": set(), "idle": set(), "busy": set(),
             "returning": set(), "figures": mmap.mmap(-1, FIGURES), "last": None, "handoff": heard_w,
             "per_child": _links_per_child()}
    last = time.monotonic()
    next_check = last + CHECK_S
    ino = os.stat(path).st_ino
    answered = 0.0  # when the last link answered
    pending = False  # a connection waits, and no spare did
    while True:
        # A spare forked (and rehearsing) while a link runs takes CPU from that link: while one is
        # left, the next waits until no link is before its answer, and FORK_AFTER_S more: the
        # client's exit and what the build does next come first. A child coming back (AGAIN)
        # counts as waiting: it will be in a few ms, without a fork -- unless a connection waits
        # while none does (it tidies at nice 19, behind a busy build): then one is forked now.
        wait = 1.0
        while True:
            waiting = len(state["idle"]) + len(state["returning"])
            if not (pending and not state["idle"]):
                if waiting >= SPARES or (state["busy"] and waiting):
                    break
                if waiting and time.monotonic() - answered < FORK_AFTER_S:
                    wait = max(0.0, answered + FORK_AFTER_S - time.monotonic())
                    break
            pending = False
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(notify_r)
                    os.close(life_w)
                    os.close(dfd)
                    heard_r.close()
                    spare(listener, notify_w, life_r, state)
                except BaseException as e:  # the client links again through the script
                    from linkwrap import faults
                    faults.note("serving a link", e)
                finally:
                    os._exit(70)
            state["children"].add(pid)
            state["idle"].add(pid)
        try:
            ready, _, _ = select.select([notify_r, heard_r] + ([] if state["idle"] else [listener]), [], [], wait)
        except InterruptedError:
            ready = []
        now = time.monotonic()
        if heard_r in ready:
            _last_request(heard_r, state)
            ready.remove(heard_r)
        if listener in ready:
            pending = True
            ready.remove(listener)
        if ready:
            data = os.read(notify_r, 4096)
            for i in range(0, len(data) - 3, 4):
                word = int.from_bytes(data[i:i + 4], "little")
                if word & ANSWERED:
                    state["busy"].discard(word & ~ANSWERED)
                    state["returning"].discard(word & ~ANSWERED)
                    answered = now
                    continue
                if word & AGAIN:
                    state["busy"].discard(word & ~AGAIN)
                    state["returning"].add(word & ~AGAIN)
                    answered = now
                    continue
                if word & READY:
                    if word & ~READY in state["returning"]:  # not one reaped meanwhile
                        state["returning"].discard(word & ~READY)
                        state["idle"].add(word & ~READY)
                    continue
                if word & CONTROLLED:  # `linkwrap server status|stop`, counted as a link below first
                    state["busy"].discard(word & ~CONTROLLED)
                    state["links"] -= 1
                    _publish(state, word & ~CONTROLLED)
                    continue
                state["idle"].discard(word)
                state["busy"].add(word)
                state["links"] += 1
                background.link_arrived()  # a measurement in progress stops at once
            last = now
        _reap(state)
        _publish(state)
        background.tick(now, last, bool(state["busy"]))  # starts, stops or reaps the measurer
        if _stop:
            break
        if now >= next_check:
            next_check = now + CHECK_S
            if now - last > IDLE_S and state["children"] <= state["idle"]:
                break
            if installed_stamp() != stamp:
                break  # a new linkwrap: the next link starts the new one
            try:
                if os.stat(path).st_ino != ino:
                    break  # our socket was replaced
            except OSError:
                break
    try:
        if os.stat(path).st_ino == ino:
            os.unlink(path)
    except OSError:
        pass
    os.close(life_w)  # the spares exit; links in progress finish and answer


def spare(listener, notify_w, life_r, state) -> None:
    """A child forked ahead, waiting for one connection: accept it, serve it."""
    import gc
    import select
    import signal
    import time
    gc.disable()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    known = len(sys.modules)  # dicts keep their order: what this link imports comes after
    global _handoff
    _handoff = state.get("handoff")
    if _handoff is not None:
        st = os.fstat(_handoff.fileno())
        _OWN["handoff"] = (st.st_dev, st.st_ino)
        from linkwrap import pipeline
        pipeline.HANDOFF = hand_off
    # A link already waiting (a burst took every spare) is served at once, its page copies made
    # as it runs: a rehearsal first would keep it waiting ~3.5 ms more (rehearse()).
    rehearsed = not select.select([listener], [], [], 0)[0]
    if rehearsed:
        rehearse(state.get("last"))  # reads this spare's own cgroups and limits too (_own_world)
    else:
        try:
            _own_world()
        except Exception:  # settle() then reads the client's cgroups, and sets every limit
            pass
    _OWN["env"] = dict(os.environ)  # for settle(), which changes only what differs from it
    _OWN["env_data"] = dict(getattr(os.environ, "_data", {}))  # for _back(): the same, as os.environ holds it
    if rehearsed:  # not while a link waits: its own page copies are fewer than touch()'s
        touch()
    global _notify
    _notify = notify_w  # kept to say when the link has answered (_answer)
    _KEPT.update(listener=listener, life=life_r, handoff=_handoff, figures=state.get("figures"),
                 per_child=state.get("per_child", LINKS_PER_CHILD))
    _keep()
    while True:
        conn = _accept(_KEPT["listener"], _KEPT["life"], rehearsed, state.get("last"))
        reached = time.perf_counter_ns()
        conn.setblocking(True)
        os.write(_notify, os.getpid().to_bytes(4, "little"))
        if _control(conn, state, _notify):
            return
        child(conn, reached, known)  # returns only when this process is back as it waited (_back())
        rehearsed = True
        known = len(sys.modules)
        try:
            os.write(_notify, (os.getpid() | READY).to_bytes(4, "little"))
        except OSError:  # the server is gone
            _server_gone()


def _accept(listener, life_r, rehearsed, last=None):
    """The next connection, for a spare. -> the accepted socket.

    The listener stays non-blocking in every process: its flag belongs to the one open file that
    the server and all its spares share, so a spare that set it blocking would make another's
    accept() block (without its watch on the server's life) or a third's raise. Each spare waits in
    its own epoll with EPOLLEXCLUSIVE: the kernel wakes one waiter per connection, where select()
    woke every spare and, on a small machine, the others' wake-ups took a CPU from the link being
    handed over. The life pipe in the same epoll ends a spare whose server is gone."""
    import select
    while not rehearsed:
        try:
            return listener.accept()[0]
        except (BlockingIOError, InterruptedError):
            pass
        if select.select([listener], [], [], 0)[0]:
            continue  # another link came meanwhile
        rehearse(last)  # another spare took the link that was waiting, and no other waits: now
        touch()
        rehearsed = True
    waiting = select.epoll(2)
    try:
        waiting.register(listener.fileno(), select.EPOLLIN | getattr(select, "EPOLLEXCLUSIVE", 0))
        waiting.register(life_r, select.EPOLLIN)
        while True:
            if any(fd == life_r for fd, _ in waiting.poll()):
                _server_gone()  # the server is gone
            try:
                return listener.accept()[0]
            except (BlockingIOError, InterruptedError):
                continue  # another spare was woken too (EPOLLEXCLUSIVE wakes one or more)
    finally:
        waiting.close()


def _server_gone() -> None:
    """A spare whose server has gone ends."""
    os._exit(0)


def rehearse(last=None) -> None:
    """In a spare, before it waits: make the link's decisions once, for the last link this server
    served (last: its hand_off() datagram), else for a stand-in link.

    A forked child writes to the server's pages as it runs (reference counts, the interpreter's
    specialised bytecode, the allocator's free lists): each first write copies a page, ~460 of them
    in a link's decisions, ~2 ms of a link's CPU on this machine kind. Done here, while no link waits,
    those copies are made; the link then finds its pages its own. A build links the same outputs
    again and again (the edit-build loop, `cargo test`), so the last real link also walks the paths
    the next one will: its ~60 arguments, its configuration files, its linkers, its output's
    directory. Nothing is written but the caches a link fills anyway (linkers, the driver's
    expansion), and nothing is linked."""
    try:
        from linkwrap.request import args
        from linkwrap.run import direct
        from linkwrap.facts import probe
        from linkwrap.facts import filesystems
        from linkwrap.record import record
        from linkwrap.choice.choose import choose
        filesystems.keep_mountinfo()  # a link reads the mount table again only if it changed
        # What settle() does with a client's request, on this process's own environment.
        env = dict(os.environ)
        _own_world()
        limits = [str(v).encode() for which in sorted(_OWN["limits"]) for v in _OWN["limits"][which]]
        payload = [b"0", b"linkwrap-cc", os.fsencode(os.getcwd()), b"18", str(len(_OWN["limits"])).encode(),
                   *limits, _OWN["cgroup"], b"2", b"x.o", b"-o", str(len(env)).encode()]
        payload += [os.fsencode(f"{k}={v}") for k, v in env.items()] + [b"3", b"0", b"1", b"2", b""]
        req = parse_request(b"\0".join(payload))
        os.environ.update(req["env"])
        _same_limits(req["limits"])
        _cgroups("self")
        argv, driver, cwd = ["linkwrap-rehearsal.o", "-o", "linkwrap-rehearsal"], None, os.getcwd()
        if last is not None:
            try:
                argv, driver, cwd, env = _last_link(last)
            except (ValueError, TypeError, EOFError):
                pass
        request = args.parse(argv, driver, env, cwd=cwd)
        # As pipeline.link() makes them, then what only the record needs.
        choice = choose(request, env, memory=False, later=True, reaps=_OWN.get("reaps", False))
        # Nothing is made beside the output ahead of the link: after an answer the caller may be
        # removing that directory (make clean, CMake's try_compile), and a directory made in it then
        # fails its rm -rf. The direct line is split for the output's own name, then.
        if choice.decision.linker is not None:
            try:
                direct.command(request, choice.decision, request.output, env)
            except direct.NotDirect:
                pass
        from linkwrap.choice.choose import with_memory
        choice = with_memory(choice._replace(facts=probe.complete(choice.facts, request, env)), request)
        from linkwrap.run.run import Outcome
        outcome = Outcome(0, 1.0, 1.0, 1.0, 1, b"", b"", ("ld",), choice.decision.write_mode, 1, None, "direct")
        record.encode(record.make(request, choice.facts, choice.decision, outcome, started_ns=0, environ=env))
    except Exception:  # a rehearsal only: the link itself says what fails
        pass


# In a child: the server's end of the hand-off (hand_off()), and its inode, by which it is known
# still to be that socket (take() may have put one of the client's fds at its number).
_handoff = None


def hand_off(inv) -> None:
    """While the linker runs: tell the server this link's request (what the next spare rehearses).

    The caller-independent parts only: arguments, driver, working directory, environment."""
    global _handoff
    sock, _handoff = _handoff, None  # once a link, a retry's second start included
    if sock is None:
        return
    # A link like the one this child handed off last (a build's next program: the same directory,
    # environment and number of arguments) would be rehearsed alike: not sent, and the server is
    # not woken for it.
    shape = (inv.cwd, inv.driver, len(inv.argv), inv.environ)
    if _KEPT.get("handed") == shape:
        return
    import marshal
    import socket
    try:
        if not _same_socket(sock):
            return
        sock.send(marshal.dumps((tuple(inv.argv), inv.driver, inv.cwd, dict(inv.environ))), socket.MSG_DONTWAIT)
        _KEPT["handed"] = (inv.cwd, inv.driver, len(inv.argv), dict(inv.environ))
    except (OSError, ValueError):
        pass  # too big, or the server gone: the next spare rehearses an older link


def _same_socket(sock) -> bool:
    import stat
    try:
        st = os.fstat(sock.fileno())
    except (OSError, ValueError):
        return False
    return stat.S_ISSOCK(st.st_mode) and (st.st_dev, st.st_ino) == _OWN.get("handoff")


def _last_request(sock, state) -> None:
    """In the server: keep the newest request its children handed off, for the spares it forks."""
    while True:
        try:
            state["last"] = sock.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return


def _last_link(data):
    """(argv, driver, cwd, environ) of a hand_off() datagram; ValueError when it is none."""
    import marshal
    argv, driver, cwd, env = marshal.loads(data)
    if not (isinstance(argv, tuple) and all(isinstance(a, str) for a in argv) and isinstance(cwd, str)
            and (driver is None or isinstance(driver, str)) and isinstance(env, dict)):
        raise ValueError("not a link's request")
    return list(argv), driver, cwd, env


def _reap(state):
    while state["children"]:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            state["children"].clear()
            state["idle"].clear()
            state["busy"].clear()
            state["returning"].clear()
            return
        if pid == 0:
            return
        state["children"].discard(pid)
        state["idle"].discard(pid)  # a spare that died before taking a link
        state["busy"].discard(pid)
        state["returning"].discard(pid)


def _publish(state, controlled=None) -> None:
    """The parent's figures into the shared page the spares answer `status` from."""
    fig = state["figures"]
    fig[0:12] = state["links"].to_bytes(8, "little") + len(state["busy"]).to_bytes(4, "little")
    fig[20:24] = (len(state["idle"]) + len(state["returning"])).to_bytes(4, "little")
    if controlled is not None:
        fig[12:16] = controlled.to_bytes(4, "little")


def _figures(state, notify_w) -> tuple:
    """In a control child: (links, running, stopping) as the parent counts them, this connection not
    among them (it was told as a link: the parent counts it out, then says so)."""
    import time
    fig = state["figures"]
    me = os.getpid()
    try:
        os.write(notify_w, (me | CONTROLLED).to_bytes(4, "little"))
    except OSError:
        pass
    deadline = time.monotonic() + 2
    while (int.from_bytes(fig[12:16], "little") != me and not fig[16]
           and time.monotonic() < deadline):
        time.sleep(0.001)  # the parent wakes on the notify pipe: about one scheduler tick
    return int.from_bytes(fig[0:8], "little"), int.from_bytes(fig[8:12], "little"), bool(fig[16])


def _control(conn, state, notify_w=None) -> bool:
    """In a child: `linkwrap server status|stop` speak CONTROL first. -> True when it was that."""
    import socket
    try:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _FIVE_S)  # the kernel's: no poll() per recv
        head = conn.recv(4, socket.MSG_PEEK)
    except OSError:
        return True
    if head != CONTROL:
        return False
    try:
        what = conn.recv(64)[4:].strip()
        from linkwrap import __version__
        links, running, stopping = _figures(state, notify_w)
        if what == b"stop":
            state["figures"][16] = 1  # said to every status until the server is gone
        conn.sendall(f"pid={_server_pid} version={__version__} install={install_id()} "
                     f"links={links} running={running} "
                     f"started={int(state['started'])}{' stopping=1' if stopping else ''}\n".encode())
        if what == b"stop":
            _signal_server(_server_pid, 15)
    except OSError:
        pass
    conn.close()
    return True


_server_pid = None  # in the server and its children: the server's pid (a child's getppid() may be an adopter's)


def _signal_server(pid, sig) -> None:
    """sig to the server, only while it is still this child's parent: once it has exited, the
    child belongs to whoever adopted it (init, a subreaper such as a supervisor or systemd --user)
    and the server's pid may be another process's."""
    import _signal
    try:
        fd = os.pidfd_open(pid)
    except OSError:  # a kernel before 5.3, a seccomp filter: checked, then sent by pid
        if os.getppid() == pid:
            os.kill(pid, sig)
        return
    try:
        if os.getppid() == pid:  # read after the pidfd was taken: the pidfd is the server
            _signal.pidfd_send_signal(fd, sig)
    finally:
        os.close(fd)


def installed_stamp():
    """Sizes and mtimes of linkwrap's installed files: the server stops when they change."""
    import linkwrap
    top = os.path.dirname(os.path.abspath(linkwrap.__file__))
    out = []
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if f.endswith((".py", ".c")):
                try:
                    st = os.stat(os.path.join(root, f))
                except OSError:
                    continue
                out.append((f, st.st_size, st.st_mtime_ns))
    return sorted(out)


# --- the child: one link ---------------------------------------------------------

def child(conn, reached=None, known=None) -> None:
    """One link, for the client at conn, taken at reached (ns);
    known: how many modules were imported then (LINKWRAP_TEST_IMPORTS: see _note_imports)."""
    import socket
    # Blocking, bounded by the kernel (SO_RCVTIMEO): Python's own timeout would poll() before
    # every recv and toggle O_NONBLOCK. The client is silent this long only when stuck or gone.
    conn.setblocking(True)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _TEN_S)
    peer_pid, peer_uid, _ = _CREDS.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CREDS.size))
    if peer_uid != os.geteuid():
        _quit()  # not ours: say nothing
    data = _recv_exactly(conn, 8, 1 << 16)  # the client sent its whole request at once
    magic, size = _HEAD.unpack_from(data)
    if magic != MAGIC or size > 64 << 20:
        _refuse(conn, b"V" if magic & 0xFFFFFF == MAGIC & 0xFFFFFF else b"F")  # "LWC<n>": another client
    if len(data) > 8 + size:
        _refuse(conn, b"F")  # nothing comes before our answer
    data = (data if len(data) == 8 + size else data + _recv_exactly(conn, 8 + size - len(data)))[8:]
    try:
        req = parse_request(data)
    except (ValueError, IndexError, StopIteration):
        _refuse(conn, b"F")
    _LINK.clear()
    before = _module_state() if req["env"].get("LINKWRAP_TEST_STATE") else None
    from linkwrap import __version__
    if req["version"] != __version__:
        _refuse(conn, b"V")
    if req["name"] == "linkwrap-launch":
        from linkwrap.request.invocation import launch_usage
        import io
        saved, sys.stdout, sys.stderr = (sys.stdout, sys.stderr), io.StringIO(), io.StringIO()
        try:
            not_a_link = launch_usage(req["argv"], "linkwrap-launch") is not None
        finally:
            sys.stdout, sys.stderr = saved
        if not_a_link:
            _refuse(conn, b"F")  # usage, --version: the script answers as it always did
    # The fds: taken from the client itself ('T'), else sent by it ('S') while this child settles.
    fds = fds_of(peer_pid, req["fds"], conn)
    try:
        conn.sendall(b"S" if fds is None else b"T")
    except OSError:
        _quit()  # the client is gone
    try:
        settle(req, peer_pid)
    except Exception as e:
        from linkwrap import faults
        faults.note("taking a link from the client", e)
        _refuse(conn, b"F")
    if fds is None:
        try:
            mark, fds, _, _ = socket.recv_fds(conn, 1, MAX_FDS)
        except OSError:
            _quit()  # the client is gone
        if mark != b"R" or len(fds) != len(req["fds"]):
            _refuse(conn, b"F")
    try:
        conn = take(req, fds, conn)
    except Exception as e:
        from linkwrap import faults
        faults.note("taking a link from the client", e)
        _refuse(conn, b"F")
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _NO_TIMEOUT)
    # Served again after this link only if settle() changed nothing that cannot go back exactly.
    _LINK["again"] = (not _LINK.get("changed") and _KEPT.get("fds") is not None
                      and _KEPT["links"] + 1 < _KEPT["per_child"])
    from linkwrap.run import run
    # While the linker runs, not before it: the tidying lock's file (after take(): no fd of the
    # client's may land on it) and /dev/null for the answer.
    run.WHILE_LINKING.append(_ahead_of_the_answer)
    done = []
    result = run_link(req, peer_pid, conn, reached, done)
    if not done:  # Exec, Killed, a configuration error: answered at the end
        from linkwrap.request import invocation
        if isinstance(result, invocation.Exec):
            reply = b"D" + b"\0".join(os.fsencode(a) for a in result.argv) + b"\0"
        elif isinstance(result, invocation.Killed):
            reply = f"K{result.signal}\n".encode()
        else:
            reply = f"X{int(result)}\n".encode()
        _answer(conn, reply, req["fds"], done)
    from linkwrap.request import invocation
    from linkwrap.run import output, run
    # An interrupted link's worker was stopped with it: nothing of that link outlives this child. A
    # link that ended was reaped by the pipeline; a worker still writing then is left to finish.
    interrupted = isinstance(result, invocation.Killed)
    run.reap(bound_s=run.REAP_S if interrupted else 0, kill=interrupted)
    output.tidy()
    _note_imports(req["env"].get("LINKWRAP_TEST_IMPORTS"), known)
    if _LINK.get("again") and not isinstance(result, (invocation.Exec, invocation.Killed)) and _back(req, done):
        _note_state(req["env"].get("LINKWRAP_TEST_STATE"), before)
        return  # the next link's (spare())
    if _LINK.get("again"):
        _tell(ANSWERED)  # it said AGAIN: not coming back after all, the server forks another
        _note_state(req["env"].get("LINKWRAP_TEST_STATE"), None, _LINK.get("why"))
    os._exit(0)


def _recv_exactly(conn, size, upto=0) -> bytes:
    """size bytes from conn (upto: more, if they came with them); the client gone or silent
    (conn's timeout) before them: exit quietly."""
    try:
        data = conn.recv(max(size, upto))
        if len(data) >= size:
            return data
        data = bytearray(data)
        while len(data) < size:
            chunk = conn.recv(min(1 << 20, size - len(data)))
            if not chunk:
                _quit()
            data += chunk
    except OSError:
        _quit()
    return bytes(data)


def _structs():
    import struct
    return (struct.Struct("3i"), struct.Struct("<II"), struct.pack("ll", 10, 0), struct.pack("ll", 5, 0),
            struct.pack("ll", 0, 0))


# SO_PEERCRED's struct ucred, the request's header, SO_RCVTIMEO's struct timeval of 10 s, 5 s and none
_CREDS, _HEAD, _TEN_S, _FIVE_S, _NO_TIMEOUT = _structs()


def _answer(conn, reply, fds, done) -> None:
    """Answer the client, then let go of everything of its: the build goes on while we tidy.

    rustc reads the linker's stdout and stderr to their end and make/Cargo count jobserver tokens
    by their pipes: a child that kept them would keep the build waiting for its records. The
    readers of the records wait for links still tidying (TIDYING): a shared lock, taken first."""
    hold = _tidying_lock()
    done.append(hold)  # before the reply: the client's end closing is no longer a SIGTERM
    # The client's fds go first: a build that reads the link's stderr to its end (rustc, a
    # benchmark's pipe) would otherwise wait for them after the answer too.
    from linkwrap import faults
    faults.UNHEARD = True
    null = _null.pop() if _null else os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    for fd in (0, 1, 2):
        os.dup2(null, fd, inheritable=False)
    os.close(null)
    for fd in fds:
        if fd > 2:
            try:
                os.close(fd)
            except OSError:
                pass
    try:
        conn.sendall(reply)
    except OSError:
        pass
    try:
        conn.shutdown(2)  # the client's EOF
    except OSError:
        pass
    conn.close()
    again = _LINK["again"] = bool(_LINK.get("again")) and reply[:1] == b"X" and _room()
    _tell(AGAIN if again else ANSWERED)
    if again and not _KEPT.get("renice"):
        # Nice 19 could not be undone here (RLIMIT_NICE, no CAP_SYS_NICE): the tidying runs at this
        # process's own priority, and the next link is served without a fork and a rehearsal.
        return
    try:
        # What is left (the record, the memory history, removing the private directory) must
        # not take a CPU from a live link: the weight of nice 19 is 1.5 % of a link's. Not
        # SCHED_IDLE, whose 0.3 % could hold the spool's lock for seconds behind a busy build.
        os.nice(19)
    except OSError:
        pass


def _tell(word) -> None:
    """Tell the server this link has answered (ANSWERED: it may fork the next spare now; AGAIN:
    this child will wait for the next link itself), once a link."""
    if _notify is not None and not _LINK.get("told", 0) & word:
        _LINK["told"] = _LINK.get("told", 0) | word
        try:
            os.write(_notify, (os.getpid() | word).to_bytes(4, "little"))
        except OSError:
            pass


def _room() -> bool:
    """Fewer children wait (or come back to wait) than SPARES and one per CPU: room for this one."""
    figures = _KEPT.get("figures")
    if figures is None:
        return True
    return int.from_bytes(figures[20:24], "little") < SPARES + (os.cpu_count() or 1)


# Links that answered and still write their records hold a shared flock on this file in the state
# directory; readers of the records (store.db.open_store) take it exclusively, for a bounded time.
TIDYING = "tidying.lock"
TIDYING_WAIT_S = 10.0


_tidying = []  # TIDYING, opened ahead of the answer (_tidying_file): between the result and the answer, only the lock
_null = []  # /dev/null, opened ahead of the answer


def _ahead_of_the_answer() -> None:
    """While the linker runs: what the answer needs opened (run.WHILE_LINKING)."""
    if not _tidying:
        _tidying.append(_tidying_file())
    if not _null:
        _null.append(os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC))


def _tidying_file():
    """TIDYING in this link's state directory (the client's environment names it), opened; None when it cannot be."""
    from linkwrap import paths
    try:
        state = paths.state_dir()
        paths.make_private_dir(state)
        return os.open(os.path.join(state, TIDYING), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None


def _tidying_lock():
    """This child's shared hold on TIDYING until it exits; None when it cannot be had."""
    import fcntl
    fd = _tidying.pop() if _tidying else _tidying_file()
    if fd is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError:
        os.close(fd)
        return None
    return fd


def wait_for_tidying(state, timeout=TIDYING_WAIT_S) -> bool:
    """Wait until no link under state is still writing what it did after answering its client
    (its record, memory history, evidence), at most timeout seconds. -> True when none is."""
    import fcntl
    import time
    try:
        fd = os.open(os.path.join(state, TIDYING), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return True  # no server ever linked here
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False  # links that never stop coming: read what is there
                time.sleep(0.005)
    finally:
        os.close(fd)


def _note_imports(path, known) -> None:
    """For the tests: append the modules this link imported (none: warm() left nothing out) to path."""
    if not path or known is None:
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, ("".join(f"{m}\n" for m in list(sys.modules)[known:]) + "--\n").encode())
    finally:
        os.close(fd)


def _refuse(conn, why) -> None:
    try:
        conn.sendall(why)
    except OSError:
        pass
    _quit()


def _quit() -> None:
    """Exit without serving the link."""
    os._exit(0)


def parse_request(data: bytes) -> dict:
    """The client's payload: NUL-terminated fields (client.c's put_* calls, in order)."""
    # Decoded in one call, as os.fsdecode() would each field (a NUL is never part of a character):
    # fsdecode is a Python function, and a request has a few hundred fields.
    enc, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
    it = iter(data.decode(enc, errors).split("\0"))
    version, name, cwd = next(it), next(it), next(it)
    umask = int(next(it))
    pairs = [int(next(it)) for _ in range(2 * int(next(it)))]
    limits = {which: (pairs[2 * which], pairs[2 * which + 1]) for which in range(len(pairs) // 2)}
    cgroup = next(it).encode(enc, errors)
    argv = [next(it) for _ in range(int(next(it)))]
    env = {}
    for _ in range(int(next(it))):
        k, _, v = next(it).partition("=")
        env[k] = v
    targets = [int(next(it)) for _ in range(int(next(it)))]
    return {"version": version, "name": name, "cwd": cwd, "argv": argv, "env": env, "fds": targets,
            "umask": umask, "limits": limits, "cgroup": cgroup}


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


# --- the child again: the next link ----------------------------------------------

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
        _KEPT["cwd"] = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        _KEPT["stdio"] = [(_dup_above(fd, 2), os.get_inheritable(fd)) for fd in (0, 1, 2)]
        mask = os.umask(0o077)
        os.umask(mask)
        _clear_peak()  # the rehearsal's peak is not the first linker's either
        _KEPT.update(umask=mask, nice=os.getpriority(os.PRIO_PROCESS, 0), policy=os.sched_getscheduler(0),
                     signals={sig: _signal.getsignal(sig) for sig in (  # those settle(), run_link() set
                         _signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGCHLD, _signal.SIGRTMIN + 1)},
                     mask=_signal.pthread_sigmask(_signal.SIG_BLOCK, ()), log_max=faults.LOG_MAX_BYTES,
                     links=0, rss_kb=_rss_kb(), peak_kb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        _KEPT["renice"] = _may_renice(_KEPT["nice"])
        _KEPT["fds"] = _open_fds()
    except (OSError, ValueError):  # fd 0, 1 or 2 closed, /proc missing: one link per child, as before
        _KEPT["fds"] = None


def _may_renice(nice) -> bool:
    """Whether this process may go back from nice 19 to nice (RLIMIT_NICE, CAP_SYS_NICE)."""
    import resource
    soft = resource.getrlimit(resource.RLIMIT_NICE)[0]
    if soft == resource.RLIM_INFINITY or 20 - nice <= soft:
        return True
    return _capable(23)  # CAP_SYS_NICE


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
    before each use: the memos of args, config, linkers, direct and probe (docs/design.md)."""
    import _signal
    import gc
    import resource
    from linkwrap import faults
    from linkwrap.run import output, run
    from linkwrap import pipeline
    from linkwrap.facts import filesystems, probe
    global _handoff
    try:
        _LINK["why"] = "a child left"  # what stopped it, for the tests' notes (LINKWRAP_TEST_STATE)
        try:
            os.waitpid(-1, os.WNOHANG)
            return False  # a child left, running or just ended
        except ChildProcessError:
            pass
        # The client's limits (settle()), first: a tiny RLIMIT_NOFILE or RLIMIT_AS of its would
        # fail the checks below for this child's own work.
        _LINK["why"] = "the limits"
        for which, want in _OWN.get("limits", {}).items() if _LINK.get("limits", True) else ():
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
        for fd, (copy, inheritable) in enumerate(_KEPT["stdio"]):
            os.dup2(copy, fd, inheritable=inheritable)
        os.fchdir(_KEPT["cwd"])
        env, own = os.environ, _OWN["env"]
        for k in _LINK.get("env", ()):
            if k in own:
                env[k] = own[k]
            else:
                env.pop(k, None)
        # os.environ's own bytes against those it waited with (one comparison in C); anything else
        # changed (a link step that set a variable) is put back the long way.
        if getattr(env, "_data", None) != _OWN.get("env_data"):
            now = dict(env)
            for k in now.keys() - own.keys():
                del env[k]
            for k, v in own.items():
                if now.get(k) != v:
                    env[k] = v
        os.umask(_KEPT["umask"])
        for sig, how in _KEPT["signals"].items():
            _signal.signal(sig, how)
        run.WHILE_LINKING.clear()
        output.tidy()  # done already: _later None
        pipeline.HANDOFF = hand_off
        _handoff = _KEPT.get("handoff")
        faults.LOG_MAX_BYTES = _KEPT["log_max"]
        faults.UNHEARD = False
        entry = sys.modules.get("linkwrap.cc")
        if entry is not None:
            del entry._LOST[:]
        for fd in _tidying + _null:
            if fd is not None:
                os.close(fd)
        del _tidying[:], _null[:]
        probe.read_mountinfo()  # forgets the kept table if a client's fd took its number
        _LINK["why"] = "the cgroups"
        with open("/proc/self/cgroup", "rb") as f:
            if f.read() != _OWN.get("cgroup"):  # moved from outside: settle() compares with it
                return False
        _LINK["why"] = "the signal mask, fds or memory"
        if _signal.pthread_sigmask(_signal.SIG_BLOCK, ()) != _KEPT["mask"] or _open_fds() != _KEPT["fds"]:
            return False
        if not filesystems._MOUNTINFO:
            filesystems.keep_mountinfo()
        gc.collect()  # the link's cycles: the collector is off in the spares (serve())
        # A linker started with posix_spawn shares this process's memory until its exec, and the
        # kernel folds that memory's peak into the linker's ru_maxrss: the next link's record would
        # carry this one's memory (a 4 MB response file parsed here: tens of MB). So the child serves
        # again only as big as it waited for its first link (RSS_SLACK_KB; freed memory given back
        # first), and with its peak reset to that.
        _LINK["why"] = "its memory"
        if _rss_kb() - _KEPT["rss_kb"] > RSS_SLACK_KB and (not _trim() or _rss_kb() - _KEPT["rss_kb"] > RSS_SLACK_KB):
            return False
        _LINK["why"] = "the peak RSS"
        if not _clear_peak() and resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > _KEPT["peak_kb"] + RSS_SLACK_KB:
            return False
        _LINK["why"] = "the priority"
        if os.getpriority(os.PRIO_PROCESS, 0) != _KEPT["nice"]:  # the tidying's nice 19, or the client's
            os.setpriority(os.PRIO_PROCESS, 0, _KEPT["nice"])
        if (os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0)) != (_KEPT["nice"], _KEPT["policy"]):
            return False
        _KEPT["links"] += 1
        # Nothing made ahead for the next link: the caller may remove the output's directory as soon
        # as it has the answer (make clean, CMake's try_compile), and a directory made in it then
        # failed that removal ("Directory not empty") one time in ten.
        return True
    except Exception as e:
        _LINK["why"] = repr(e)
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


def run_link(req, peer_pid, conn, reached=None, done=None):
    """The link, with the client's signals (and its silent death) turned into this child's;
    answered (_answer) as soon as its result is final. done: [] -> non-empty once answered."""
    import _signal
    import fcntl
    import select
    import socket
    from linkwrap.request import invocation
    from linkwrap.run import output, run
    from linkwrap import pipeline
    done = [] if done is None else done

    def heard(*_):
        """Each byte the client sends is a signal for the link; its end closing (SIGKILL of the
        build, a CI timeout) is SIGTERM. Runs in this (main) thread, between the link's steps."""
        if done:
            return  # answered: the client may go, and its signals no longer concern the link
        ready = select.poll()  # not select(): after take() the connection's fd may be above 1023
        ready.register(conn, select.POLLIN)
        if not ready.poll(0):
            return  # nothing yet (the usual first call): no exception raised and caught for it
        try:
            data = conn.recv(64, socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        for sig in data or b"\x0f":
            if sig in (1, 2, 15):
                if _signal.getsignal(sig) == _signal.SIG_DFL:
                    # No step of the link forwards it now (run.py does while the linker runs): this
                    # child dies of it, and a forking linker's worker, its child by now, with it.
                    run.kill_descendants(_signal.SIGKILL)
                os.kill(os.getpid(), sig)

    def answer(status):
        _answer(conn, f"X{int(status)}\n".encode(), req["fds"], done)

    # Signal-driven rather than a watching thread: a thread costs its start and, holding the
    # interpreter's lock in turn, switches with the link's own thread on a busy machine.
    sig = _signal.SIGRTMIN + 1  # sent by the kernel when the client's socket has something to read
    _signal.signal(sig, heard)
    fd = conn.fileno()
    fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
    fcntl.fcntl(fd, fcntl.F_SETSIG, sig)
    fcntl.fcntl(fd, fcntl.F_SETFL, os.O_ASYNC)  # and not O_NONBLOCK: conn blocks (child())
    heard()  # what came before
    argv, driver = req["argv"], None
    if req["name"] == "linkwrap-launch":
        argv = argv[1:] if argv[:1] == ["--"] else argv
        argv, driver = argv[1:], argv[0]
    # os.environ holds the same (settle()), but each read of it decodes: a dict is read in C.
    inv = invocation.Invocation(tuple(argv), driver, req["env"], req["cwd"], peer_pid, None, "server", reached,
                                _OWN.get("reaps", False))
    output.defer()
    return pipeline.link(inv, answer)


if __name__ == "__main__":
    main()
