"""A spare made warm before its link comes: what a link would otherwise pay at its start.

Owns: importing once, in the server, every module a link may import (link_imports(), warm()); the
objects of the hand-off each spare touches before it waits (HAND_OFF, touch()); the rehearsal of
the last link this server served (rehearse()), which a child hands off while its linker runs
(hand_off(): a datagram to the server, kept there by _last_request()); and the tests' note of what
a link still imported (_note_imports).
May import: world and protocol (below it), and the link path's modules (request, facts, run, record, pipeline), lazily.
"""
import os
import sys

from linkwrap.server import world
from linkwrap.server.protocol import parse_request
from linkwrap.server.world import _cgroups, _own_world, _same_limits

# Where a link starts: the modules the child runs (its own and the pipeline's).
LINK_ROOTS = ("linkwrap.server.server", "linkwrap.pipeline")


# linkwrap's own linker is a program of its own, not the link path: of it, only what the policy asks
# (whether a base to patch is ready) is imported by every server. The rest (with numpy) would make
# every spare bigger, and a linker's ru_maxrss takes in its spawner's memory: every record's peak.
LD_ON_THE_LINK_PATH = frozenset(("linkwrap.ld.incremental", "linkwrap.ld.incremental.where"))
# What a patch in a fork of the spare (run/in_process.py) imports at its start (~30 ms): a spare
# whose last link tried a patch imports it while it waits (rehearse), so the next patch starts warm.
PATCH_IMPORTS = ("linkwrap.ld.__main__", "linkwrap.ld.options", "linkwrap.ld.libraries",
                 "linkwrap.ld.incremental.main", "linkwrap.ld.incremental.relink",
                 "linkwrap.ld.incremental.changed", "linkwrap.ld.incremental.patch")


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
        if name.startswith("linkwrap.ld.") and name not in LD_ON_THE_LINK_PATH:
            continue  # the linker itself: imported by a spare that will patch (rehearse), not by all
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
HAND_OFF = ("linkwrap.server.server", "linkwrap.server.workers", "linkwrap.server.reuse", "linkwrap.server.warm",
            "linkwrap.server.world", "linkwrap.server.tidying", "linkwrap.server.lifetime",
            "linkwrap.server.protocol", "linkwrap.run.run", "linkwrap.run.output", "linkwrap.pipeline",
            "linkwrap.request.invocation", "linkwrap.faults", "linkwrap.records", "linkwrap.cache", "linkwrap.paths", "linkwrap.libc",
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
        from linkwrap.facts import filesystems, probe
        from linkwrap.record import record
        from linkwrap.choice.choose import choose
        filesystems.keep_mountinfo()  # a link reads the mount table again only if it changed
        # What settle() does with a client's request, on this process's own environment.
        env = dict(os.environ)
        _own_world()
        limits = [str(v).encode() for which in sorted(world._OWN["limits"]) for v in world._OWN["limits"][which]]
        payload = [b"0", b"linkwrap-cc", os.fsencode(os.getcwd()), b"18", str(len(world._OWN["limits"])).encode(),
                   *limits, world._OWN["cgroup"], b"2", b"x.o", b"-o", str(len(env)).encode()]
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
        choice = choose(request, env, memory=False, later=True, reaps=world._OWN.get("reaps", False))
        # Nothing is made beside the output ahead of the link: after an answer the caller may be
        # removing that directory (make clean, CMake's try_compile), and a directory made in it then
        # fails its rm -rf. The direct line is split for the output's own name, then.
        if choice.decision.linker is not None:
            try:
                direct.command(request, choice.decision, request.output, env)
            except direct.NotDirect:
                pass
        _learn_saved(request, choice, env)
        if choice.decision.instead is not None:   # a patch tried next: its fork finds the linker loaded
            from linkwrap.run import in_process
            if in_process.runs_here(choice.decision.linker):
                import importlib
                for name in PATCH_IMPORTS:
                    importlib.import_module(name)
        from linkwrap.choice.choose import with_memory
        choice = with_memory(choice._replace(facts=probe.complete(choice.facts, request, env)), request)
        from linkwrap.run.run import Outcome
        outcome = Outcome(0, 1.0, 1.0, 1.0, 1, b"", b"", ("ld",), choice.decision.write_mode, 1, None, "direct")
        record.encode(record.make(request, choice.facts, choice.decision, outcome, started_ns=0, environ=env))
    except Exception:  # a rehearsal only: the link itself says what fails
        pass


def _learn_saved(request, choice, env) -> None:
    """A link saved by default hard-links its inputs into the store while its linker runs: what the
    store holds already (an edit-build loop's unchanged inputs), learnt here, is not linked again
    (record/save.keep_inputs(learn_only=True))."""
    if not choice.replayable or env.get("LINKWRAP_SAVE") == "1":
        return      # not saved before (save.wanted, which ranks and writes, is the link's to ask), or
                    # asked for: then saving happens after the link, and nothing overlaps the linker
    from linkwrap.record import save
    save.keep_inputs(request, links_only=True, learn_only=True)


# A response file larger than this is not rehearsed: its words (60 000 arguments of a 2 MB one make
# a child ~13 MB bigger) would stay in the spare that rehearsed it, and a linker's ru_maxrss takes in
# its spawner's memory: the next link's record would carry the big link's memory as its own.
REHEARSED_RESPONSE_MAX = 256 << 10


def _big_response_file(inv) -> bool:
    for a in inv.argv:
        if a[:1] == "@":
            try:
                if os.stat(os.path.join(inv.cwd, a[1:])).st_size > REHEARSED_RESPONSE_MAX:
                    return True
            except (OSError, ValueError):
                pass
    return False


def hand_off(inv) -> None:
    """While the linker runs: tell the server this link's request (what the next spare rehearses).

    The caller-independent parts only: arguments, driver, working directory, environment."""
    sock, world._handoff = world._handoff, None  # once a link, a retry's second start included
    if sock is None:
        return
    # A link like the one this child handed off last (a build's next program: the same directory,
    # environment and number of arguments) would be rehearsed alike: not sent, and the server is
    # not woken for it.
    shape = (inv.cwd, inv.driver, len(inv.argv), inv.environ)
    if world._KEPT.get("handed") == shape or _big_response_file(inv):
        return
    import marshal
    import socket
    try:
        if not _same_socket(sock):
            return
        sock.send(marshal.dumps((tuple(inv.argv), inv.driver, inv.cwd, dict(inv.environ))), socket.MSG_DONTWAIT)
        world._KEPT["handed"] = (inv.cwd, inv.driver, len(inv.argv), dict(inv.environ))
    except (OSError, ValueError):
        pass  # too big, or the server gone: the next spare rehearses an older link


def _same_socket(sock) -> bool:
    import stat
    try:
        st = os.fstat(sock.fileno())
    except (OSError, ValueError):
        return False
    return stat.S_ISSOCK(st.st_mode) and (st.st_dev, st.st_ino) == world._OWN.get("handoff")


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


def _note_imports(path, known) -> None:
    """For the tests: append the modules this link imported (none: warm() left nothing out) to path."""
    if not path or known is None:
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, ("".join(f"{m}\n" for m in list(sys.modules)[known:]) + "--\n").encode())
    finally:
        os.close(fd)
