"""The server's children: forked ahead, each waiting for a connection, told apart on a pipe.

Owns: the server's loop (serve(): SPARES children kept waiting, forked FORK_AFTER_S after a link's
answer, reaped; the words each child writes on the notify pipe: ANSWERED, CONTROLLED, AGAIN,
READY; the shared page of figures the children answer `status` from), a spare's life (spare(),
_accept(): one connection at a time, through EPOLLEXCLUSIVE; _control(): `linkwrap server
status|stop`), and the answer's moment (_answer(): the client's fds let go, then _tell() the
server). What a spare does with a link it is handed (serve_link: the host's server.child) it does not
know.
May import: reuse, warm, world, tidying, lifetime and protocol (all below it), and linkwrap.faults.
"""
import os
import sys

from linkwrap.server import lifetime, tidying, world
from linkwrap.server.lifetime import CHECK_S, install_id
from linkwrap.server.protocol import _FIVE_S, CONTROL
from linkwrap.server.reuse import LINKS_PER_CHILD, _keep, _links_per_child
from linkwrap.server.warm import _last_request, hand_off, rehearse, touch
from linkwrap.server.world import _own_world

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


_stop = []


def _on_term(sig, frame):
    _stop.append(sig)


def _background_pending() -> bool:
    """The idle exit waits (lifetime.idle_over) while the work hosted here has something to do that
    the machine is idle enough for: a base being built or asked for, a measurement running or queued."""
    from linkwrap.bench import background, incremental_base
    if incremental_base.building():
        return True
    try:
        bases = bool(incremental_base.wanted())
    except OSError:
        bases = False
    return background.work_pending(bases)


def serve(listener, stamp, path, dfd, serve_link) -> None:
    """Keep SPARES children waiting for links; exit when idle, outdated or asked to.

    A fork of this process costs milliseconds (page tables, then copy-on-write faults as the
    child touches objects), so it is paid ahead: each spare accepts one connection itself,
    tells the parent (its pid on the notify pipe) and the parent forks the next. The spares
    watch a pipe whose write end only the parent holds: the parent gone, they exit.
    serve_link(conn, reached, known): what a spare does with each connection that is no control's.
    """
    import gc
    import select
    import signal
    import time
    from linkwrap.bench import background  # hosted here: measures saved links while no link comes
    from linkwrap.bench import incremental_base  # and builds incremental bases from them
    global _server_pid
    _server_pid = os.getpid()
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
    idle = lifetime.idle_s()
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
                    spare(listener, notify_w, life_r, state, serve_link)
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
                incremental_base.link_arrived()  # and a base being built
            last = now
        _reap(state)
        _publish(state)
        # one background job at a time: the measurer starts not while a base is built, nor a base
        # while it measures (each would disturb the other's times)
        background.tick(now, last, bool(state["busy"]) or incremental_base.building())
        incremental_base.tick(now, last, bool(state["busy"]), background.measuring())
        if _stop:
            break
        if now >= next_check:
            next_check = now + CHECK_S
            if state["children"] <= state["idle"] and lifetime.idle_over(now - last, _background_pending, idle):
                break
            if lifetime.outdated(stamp, path, ino):
                break
    lifetime.let_go(path, ino)
    os.close(life_w)  # the spares exit; links in progress finish and answer


def spare(listener, notify_w, life_r, state, serve_link) -> None:
    """A child forked ahead, waiting for one connection: accept it, serve it (serve_link)."""
    import gc
    import select
    import signal
    import time
    gc.disable()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    known = len(sys.modules)  # dicts keep their order: what this link imports comes after
    world._handoff = state.get("handoff")
    if world._handoff is not None:
        st = os.fstat(world._handoff.fileno())
        world._OWN["handoff"] = (st.st_dev, st.st_ino)
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
    world._OWN["env"] = dict(os.environ)  # for settle(), which changes only what differs from it
    world._OWN["env_data"] = dict(getattr(os.environ, "_data", {}))  # for _back(): the same, as os.environ holds it
    if rehearsed:  # not while a link waits: its own page copies are fewer than touch()'s
        touch()
    world._notify = notify_w  # kept to say when the link has answered (_answer)
    world._KEPT.update(listener=listener, life=life_r, handoff=world._handoff, figures=state.get("figures"),
                 per_child=state.get("per_child", LINKS_PER_CHILD))
    _keep()
    while True:
        conn = _accept(world._KEPT["listener"], world._KEPT["life"], rehearsed, state.get("last"))
        reached = time.perf_counter_ns()
        conn.setblocking(True)
        os.write(world._notify, os.getpid().to_bytes(4, "little"))
        if _control(conn, state, world._notify):
            return
        serve_link(conn, reached, known)  # returns only when this process is back as it waited (_back())
        rehearsed = True
        known = len(sys.modules)
        try:
            os.write(world._notify, (os.getpid() | READY).to_bytes(4, "little"))
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


def _answer(conn, reply, fds, done) -> None:
    """Answer the client, then let go of everything of its: the build goes on while we tidy.

    rustc reads the linker's stdout and stderr to their end and make/Cargo count jobserver tokens
    by their pipes: a child that kept them would keep the build waiting for its records. The
    readers of the records wait for links still tidying (TIDYING): a shared lock, taken first."""
    hold = tidying._tidying_lock()
    done.append(hold)  # before the reply: the client's end closing is no longer a SIGTERM
    # The client's fds go first: a build that reads the link's stderr to its end (rustc, a
    # benchmark's pipe) would otherwise wait for them after the answer too.
    from linkwrap import faults
    faults.UNHEARD = True
    null = tidying._null.pop() if tidying._null else os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
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
    again = world._LINK["again"] = bool(world._LINK.get("again")) and reply[:1] == b"X" and _room()
    _tell(AGAIN if again else ANSWERED)
    if again and not world._KEPT.get("renice"):
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
    if world._notify is not None and not world._LINK.get("told", 0) & word:
        world._LINK["told"] = world._LINK.get("told", 0) | word
        try:
            os.write(world._notify, (os.getpid() | word).to_bytes(4, "little"))
        except OSError:
            pass


def _room() -> bool:
    """Fewer children wait (or come back to wait) than SPARES and one per CPU: room for this one."""
    figures = world._KEPT.get("figures")
    if figures is None:
        return True
    return int.from_bytes(figures[20:24], "little") < SPARES + (os.cpu_count() or 1)
