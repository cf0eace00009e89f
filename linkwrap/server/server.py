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

This module is the host: main() starts the server, child() serves one link in a child. It owns no
part of them but their order; each part is a module of its own, and each imports only those below it:
  workers   the server's loop, its spares and their words to it, the answer's moment;
  reuse     a child put back as it waited, to serve the next link;
  warm      what a spare does before its link comes: imports, touched pages, the rehearsal;
  world     the child's own world and the client's, which it takes (fds, cwd, environment, limits, cgroups);
  tidying   the lock a link holds from its answer until its record is written;
  lifetime  the run directory, the socket, one server per world, when to exit;
  protocol  the wire format client.c speaks.
Of the link itself it knows only its entry, pipeline.link() (run_link()).
May import: every module of linkwrap.server; the link path's invocation, run.output, run.run and pipeline, lazily.
"""
import os
import sys

from linkwrap.server import lifetime, world
from linkwrap.server.lifetime import installed_stamp, open_run_dir, socket_name, world_key
from linkwrap.server.protocol import (_CREDS, _HEAD, _NO_TIMEOUT, _TEN_S, MAGIC, MAX_FDS, NOT_HERE, OTHER_VERSION,
                                      SEND_FDS, TAKEN, _quit, _recv_exactly, _refuse, become, exited, killed,
                                      parse_request)
from linkwrap.server.reuse import _back, _module_state, _note_state
from linkwrap.server.tidying import _ahead_of_the_answer
from linkwrap.server.warm import _note_imports, warm
from linkwrap.server.workers import ANSWERED, _answer, _tell, serve
from linkwrap.server.world import fds_of, settle, take


def main() -> None:
    """`python -m linkwrap.server.server`: serve this world until idle; quiet, detached."""
    from linkwrap import __version__
    lifetime.adopt_install(os.environ.pop("LINKWRAP_SERVER_INSTALL", None))
    key = world_key()
    dfd = open_run_dir(create=True)
    name = socket_name(key)
    lock = lifetime.claim(dfd, name)
    warm()
    listener, path = lifetime.listen(dfd, name)
    stamp = installed_stamp()
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()} {__version__}\n".encode())
    serve(listener, stamp, path, dfd, child)


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
        _refuse(conn, OTHER_VERSION if magic & 0xFFFFFF == MAGIC & 0xFFFFFF else NOT_HERE)  # "LWC<n>": another client
    if len(data) > 8 + size:
        _refuse(conn, NOT_HERE)  # nothing comes before our answer
    data = (data if len(data) == 8 + size else data + _recv_exactly(conn, 8 + size - len(data)))[8:]
    try:
        req = parse_request(data)
    except (ValueError, IndexError, StopIteration):
        _refuse(conn, NOT_HERE)
    world._LINK.clear()
    before = _module_state() if req["env"].get("LINKWRAP_TEST_STATE") else None
    from linkwrap import __version__
    if req["version"] != __version__:
        _refuse(conn, OTHER_VERSION)
    if req["name"] == "linkwrap-launch":
        from linkwrap.request.invocation import launch_usage
        import io
        saved, sys.stdout, sys.stderr = (sys.stdout, sys.stderr), io.StringIO(), io.StringIO()
        try:
            not_a_link = launch_usage(req["argv"], "linkwrap-launch") is not None
        finally:
            sys.stdout, sys.stderr = saved
        if not_a_link:
            _refuse(conn, NOT_HERE)  # usage, --version: the script answers as it always did
    # The fds: taken from the client itself ('T'), else sent by it ('S') while this child settles.
    fds = fds_of(peer_pid, req["fds"], conn)
    try:
        conn.sendall(SEND_FDS if fds is None else TAKEN)
    except OSError:
        _quit()  # the client is gone
    try:
        settle(req, peer_pid)
    except Exception as e:
        from linkwrap import faults
        faults.note("taking a link from the client", e)
        _refuse(conn, NOT_HERE)
    if fds is None:
        try:
            mark, fds, _, _ = socket.recv_fds(conn, 1, MAX_FDS)
        except OSError:
            _quit()  # the client is gone
        if mark != b"R" or len(fds) != len(req["fds"]):
            _refuse(conn, NOT_HERE)
    try:
        conn = take(req, fds, conn)
    except Exception as e:
        from linkwrap import faults
        faults.note("taking a link from the client", e)
        _refuse(conn, NOT_HERE)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _NO_TIMEOUT)
    # Served again after this link only if settle() changed nothing that cannot go back exactly.
    world._LINK["again"] = (not world._LINK.get("changed") and world._KEPT.get("fds") is not None
                           and world._KEPT["links"] + 1 < world._KEPT["per_child"])
    from linkwrap.run import run
    # While the linker runs, not before it: the tidying lock's file (after take(): no fd of the
    # client's may land on it) and /dev/null for the answer.
    run.WHILE_LINKING.append(_ahead_of_the_answer)
    done = []
    result = run_link(req, peer_pid, conn, reached, done)
    if not done:  # Exec, Killed, a configuration error: answered at the end
        from linkwrap.request import invocation
        if isinstance(result, invocation.Exec):
            reply = become(result.argv)
        elif isinstance(result, invocation.Killed):
            reply = killed(result.signal)
        else:
            reply = exited(result)
        _answer(conn, reply, req["fds"], done)
    from linkwrap.request import invocation
    from linkwrap.run import output, run
    # An interrupted link's worker was stopped with it: nothing of that link outlives this child. A
    # link that ended was reaped by the pipeline; a worker still writing then is left to finish.
    interrupted = isinstance(result, invocation.Killed)
    run.reap(bound_s=run.REAP_S if interrupted else 0, kill=interrupted)
    output.tidy()
    _note_imports(req["env"].get("LINKWRAP_TEST_IMPORTS"), known)
    if world._LINK.get("again") and not isinstance(result, (invocation.Exec, invocation.Killed)) and _back(req, done):
        _note_state(req["env"].get("LINKWRAP_TEST_STATE"), before)
        return  # the next link's (spare())
    if world._LINK.get("again"):
        _tell(ANSWERED)  # it said AGAIN: not coming back after all, the server forks another
        _note_state(req["env"].get("LINKWRAP_TEST_STATE"), None, world._LINK.get("why"))
    os._exit(0)


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
        _answer(conn, exited(status), req["fds"], done)

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
                                world._OWN.get("reaps", False))
    output.defer()
    return pipeline.link(inv, answer)


if __name__ == "__main__":
    main()
