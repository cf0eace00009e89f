"""ADMISSION: a link whose predicted memory does not fit waits until running links end -> Memory.

Between choose() and run in pipeline.py: enter() before the link, leave() after it. Build tools
start links as soon as a job slot is free and know nothing of memory; under a memory limit the
kernel's OOM killer then ends one (exit 137). linkwrap sees every link of the user, so:

- a per-user ledger, <state>/memory.ledger (marshal, under a POSIX lock, mode 0600, never through a
  symlink, never another user's file), lists the running links with their predicted charge and the
  waiting ones in arrival order; entries whose process is gone (pid and start time no longer match)
  are dropped by whoever reads the ledger next;
- a link runs at once when it fits: predicted <= room, where room is the group's free memory (limit
  less what reclaim cannot take back, or MemAvailable) less the headroom and less what each running
  link is predicted to still need (its prediction less the anonymous memory its processes hold now);
- otherwise it waits, polling every POLL_S; the oldest waiting link goes first (the others wait
  behind it even if they would fit, so a large link is not starved by small ones);
- it runs anyway when no other link is running (never a deadlock, even for a link larger than the
  limit) and when it has waited max_wait_s; the record says so (`wait_note`);
- while it waits it gives its build's jobserver slot back (one token written to the jobserver) and
  takes one again before it runs, so the build can run another job meanwhile (see _Jobserver).

verdict() and room_kb() are pure; the rest reads /proc, the cgroup and the ledger.
"""
import os
import time

from linkwrap.records import record
# The record of a link's memory, and whether admission is on: in predict.py, so that a link with
# admission off never imports this module.
from linkwrap.evidence.predict import Memory, admission_enabled as enabled  # noqa: F401

LEDGER = "memory.ledger"
FORMAT = 1
POLL_S = 0.05
RUN, WAIT = "run", "wait"
DEFAULT_HEADROOM_MB = 64
DEFAULT_MAX_WAIT_S = 300.0


# --- pure rules -----------------------------------------------------------------

def room_kb(limit_kb, used_kb, available_kb, headroom_kb, still_needed_kb):
    """Memory a new link may take: the tighter of the group's free memory and MemAvailable, less
    the headroom and what the running links are predicted to still need. None when unknown."""
    free = []
    if limit_kb is not None and used_kb is not None:
        free.append(limit_kb - used_kb)
    if available_kb is not None:
        free.append(available_kb)
    if not free:
        return None
    return min(free) - headroom_kb - sum(still_needed_kb)


def verdict(me, predicted_kb, running, waiting, room, waited_s, max_wait_s):
    """(RUN | WAIT, note) for the link `me` (a pid). running: pids of running links; waiting: pids
    of waiting links, oldest first (me among them). note says why it runs without fitting."""
    head = waiting[0] if waiting else me
    fits = room is not None and predicted_kb <= room
    if not running and head == me:
        return RUN, None if fits else (
            f"ran alone: predicted {_mib(predicted_kb)} above the room of {_mib(room)}" if room is not None
            else "ran alone: the room is unknown")
    if head == me and fits:
        return RUN, None
    if waited_s >= max_wait_s:
        return RUN, f"waited the {max_wait_s:g} s bound for memory; ran anyway"
    return WAIT, None


def _mib(kb) -> str:
    return f"{kb / 1024:.0f} MiB"


# --- the ledger -------------------------------------------------------------------

class Ledger:
    """The ledger file, locked for as long as the `with` block lasts."""

    def __init__(self, state):
        self.path = os.path.join(state, LEDGER)
        self.state = state
        self.fd = None

    def __enter__(self):
        from linkwrap import paths
        self.fd = paths.lock(self.path)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)  # closing releases the lock
        return False

    def load(self) -> dict:
        import marshal
        os.lseek(self.fd, 0, os.SEEK_SET)
        chunks = []
        while True:
            b = os.read(self.fd, 1 << 16)
            if not b:
                break
            chunks.append(b)
        try:
            data = marshal.loads(b"".join(chunks))
        except (EOFError, ValueError, TypeError):
            data = None  # empty, or torn by a crash mid-write: start again
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            data = {"format": FORMAT, "running": {}, "waiting": []}
        return data

    def save(self, data) -> None:
        import marshal
        body = marshal.dumps(data, 4)
        os.lseek(self.fd, 0, os.SEEK_SET)
        view = memoryview(body)
        while view:
            view = view[os.write(self.fd, view):]
        os.ftruncate(self.fd, len(body))


def prune(data) -> bool:
    """Drop the entries of processes that are gone; -> whether anything was dropped."""
    running, waiting = data["running"], data["waiting"]
    dead = [pid for pid, entry in running.items() if not alive(pid, entry[0])]
    for pid in dead:
        del running[pid]
    kept = [w for w in waiting if alive(w[0], w[1])]
    changed = bool(dead) or len(kept) != len(waiting)
    data["waiting"] = kept
    return changed


def start_ticks(pid):
    """The process's start time (clock ticks since boot): with the pid, its identity."""
    from linkwrap.facts.build import read_stat
    stat = read_stat(pid)
    return stat[2] if stat else None


def alive(pid, ticks) -> bool:
    return ticks is not None and start_ticks(pid) == ticks


# --- what the running links hold now ------------------------------------------------

def tree_anon_kb(pid, limit=64) -> int:
    """Anonymous memory (RssAnon) of pid's descendants: the driver, collect2, the linker."""
    total, todo, seen = 0, [pid], 0
    while todo and seen < limit:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/task/{p}/children", "rb") as f:
                kids = [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            kids = []
        for kid in kids:
            seen += 1
            todo.append(kid)
            total += _rss_anon_kb(kid)
    return total


def _rss_anon_kb(pid) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            text = f.read()
    except OSError:
        return 0
    at = text.find(b"RssAnon:")
    if at < 0:
        return 0
    return int(text[at + 8:text.index(b"kB", at)])


def measure_room(facts, running, me, headroom_kb):
    """room_kb() with the group's usage, MemAvailable and each running link's present hold, now."""
    from linkwrap.facts import probe
    limit_kb = used_kb = None
    if facts is not None and facts.mem_group and facts.mem_limit_mb is not None:
        limit_kb = facts.mem_limit_mb << 10
        used_kb = probe._try(probe.group_used_kb, facts.mem_group)
    still = [max(0, entry[1] - tree_anon_kb(pid)) for pid, entry in running.items() if pid != me]
    return room_kb(limit_kb, used_kb, probe._try(probe.mem_available_kb), headroom_kb, still)


# --- enter and leave ----------------------------------------------------------------

class Ticket:
    """A link that entered the ledger: leave() takes it out."""
    __slots__ = ("state", "pid", "ticks", "prediction", "waited_ms", "note", "room", "jobserver")

    def __init__(self, state, pid, ticks, prediction):
        self.state, self.pid, self.ticks, self.prediction = state, pid, ticks, prediction
        self.waited_ms, self.note, self.room, self.jobserver = 0.0, None, None, None


def settings_of(settings):
    memory = getattr(settings, "memory", None) or {}
    return (int(memory.get("headroom_mb", DEFAULT_HEADROOM_MB)) << 10,
            float(memory.get("max_wait_s", DEFAULT_MAX_WAIT_S)))


def enter(choice, environ, *, sleep=time.sleep):
    """Wait until this link's predicted memory fits; -> a Ticket, or None when admission is off."""
    if choice.memory is None or not enabled(choice.settings, choice.facts):
        return None
    from linkwrap import paths
    headroom_kb, max_wait_s = settings_of(choice.settings)
    pid = os.getpid()
    ticket = Ticket(paths.state_dir(), pid, start_ticks(pid), choice.memory)
    predicted = choice.memory.kb
    started = time.monotonic()
    try:
        return _wait(ticket, choice, predicted, headroom_kb, max_wait_s, started, environ, sleep)
    except KeyboardInterrupt:
        # Ctrl-C while waiting: stop as an interrupted command does (the build is stopping), no traceback.
        import _signal
        _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
        os.kill(os.getpid(), _signal.SIGINT)
        os._exit(130)
    except Exception:
        # A fault of ours (the link then runs unadmitted): never stay in the queue ahead of others.
        try:
            with Ledger(ticket.state) as ledger:
                data = ledger.load()
                data["waiting"] = [w for w in data["waiting"] if w[0] != pid]
                data["running"].pop(pid, None)
                ledger.save(data)
        except Exception:
            pass
        raise


def _wait(ticket, choice, predicted, headroom_kb, max_wait_s, started, environ, sleep):
    pid = ticket.pid
    jobserver = None
    while True:
        with Ledger(ticket.state) as ledger:
            data = ledger.load()
            prune(data)
            waiting = data["waiting"]
            if not any(w[0] == pid for w in waiting):
                waiting.append([pid, ticket.ticks, predicted, time.time()])
            room = measure_room(choice.facts, data["running"], pid, headroom_kb)
            waited_s = time.monotonic() - started
            action, note = verdict(pid, predicted, [p for p in data["running"] if p != pid],
                                   [w[0] for w in waiting], room, waited_s, max_wait_s)
            if action == RUN:
                data["waiting"] = [w for w in waiting if w[0] != pid]
                data["running"][pid] = [ticket.ticks, predicted, time.time()]
            ledger.save(data)
        if action == RUN:
            break
        if jobserver is None:
            jobserver = _Jobserver.open(environ)
            jobserver.give()
        sleep(POLL_S)
    # Admitted at the first look: no wait at all (summary counts the links that waited).
    ticket.waited_ms = (time.monotonic() - started) * 1000 if jobserver is not None else 0.0
    ticket.note, ticket.room = note, room
    if jobserver is not None:
        ticket.jobserver = jobserver.take(max(1.0, max_wait_s - ticket.waited_ms / 1000))
    return ticket


def leave(ticket, prediction, linker, output, outcome, input_bytes) -> Memory:
    """Take the link out of the ledger (the next link may be waiting on it), then keep its charge for
    the next prediction (predict.after). Never raises."""
    from linkwrap.evidence import predict
    if ticket:
        try:
            with Ledger(ticket.state) as ledger:
                data = ledger.load()
                data["running"].pop(ticket.pid, None)
                ledger.save(data)
        except Exception as e:
            from linkwrap import faults
            faults.note("leaving the memory ledger", e)
    charge_kb, how = predict.after(prediction, linker, output, outcome, input_bytes,
                                   state=ticket.state if ticket else None, small_too=bool(ticket))
    return Memory(getattr(prediction, "kb", None), getattr(prediction, "source", None), charge_kb, how,
                  ticket.waited_ms if ticket else None, ticket.note if ticket else None,
                  ticket.room if ticket else None, ticket.jobserver if ticket else None)


# --- the build's jobserver --------------------------------------------------------------

class _Jobserver:
    """GNU make's jobserver as Cargo and make hand it down (MAKEFLAGS / CARGO_MAKEFLAGS).

    Every job holds one implicit slot, which the protocol has no way to return; what a waiting link
    can do is write one token more (the build may start another job meanwhile) and read one back
    before it runs, which restores the count. A fifo (`--jobserver-auth=fifo:PATH`, make >= 4.4) is
    opened non-blocking on our own file description; inherited pipe fds (`R,W`) share theirs with
    the build, so they stay blocking and the read is bounded by an interval timer instead. Only
    this user's fifo is opened, never through a symlink. None of it when the fds were not passed
    down (rustc gives the linker a jobserver only when it was asked to).
    """

    def __init__(self, read_fd=None, write_fd=None, own=False, what=None):
        self.read_fd, self.write_fd, self.own, self.what = read_fd, write_fd, own, what
        self.given = False

    @classmethod
    def open(cls, environ):
        try:
            return cls._open(environ)
        except (OSError, ValueError):
            return cls(what="no jobserver reachable")

    @classmethod
    def _open(cls, environ):
        for name in ("CARGO_MAKEFLAGS", "MAKEFLAGS"):
            flags = environ.get(name, "")
            for word in flags.split():
                for prefix in ("--jobserver-auth=", "--jobserver-fds="):
                    if not word.startswith(prefix):
                        continue
                    value = word[len(prefix):]
                    if value.startswith("fifo:"):
                        fd = os.open(value[5:], os.O_RDWR | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
                        st = os.fstat(fd)
                        if st.st_uid != os.geteuid() or st.st_mode & 0o170000 != 0o010000:
                            os.close(fd)
                            return cls(what="the jobserver fifo is not this user's: left alone")
                        return cls(fd, fd, True, "fifo")
                    r, _, w = value.partition(",")
                    r, w = int(r), int(w)
                    for fd in (r, w):
                        if os.fstat(fd).st_mode & 0o170000 != 0o010000:
                            return cls(what="the jobserver fds are not pipes here")
                    return cls(r, w, False, "pipe")
        return cls(what="no jobserver")

    def give(self):
        if self.write_fd is not None:
            try:
                self.given = os.write(self.write_fd, b"+") == 1
            except OSError:
                self.given = False

    def take(self, timeout_s) -> str:
        """Read one token back (bounded); -> what was done, for the record."""
        if not self.given:
            return self.what or "no token given back"
        try:
            got = self._read(timeout_s)
        finally:
            if self.own:
                os.close(self.read_fd)
        return ("slot given back while waiting, taken again" if got
                else f"slot given back while waiting; none free again within {timeout_s:.0f} s: ran without it")

    def _read(self, timeout_s) -> bool:
        deadline = time.monotonic() + timeout_s
        if self.own:
            while True:
                try:
                    if os.read(self.read_fd, 1):
                        return True
                except BlockingIOError:
                    pass
                if time.monotonic() >= deadline:
                    return False
                time.sleep(POLL_S)
        import _signal

        class _Late(Exception):
            pass

        def late(*_):
            raise _Late()

        previous = _signal.signal(_signal.SIGALRM, late)
        try:
            _signal.setitimer(_signal.ITIMER_REAL, max(0.01, deadline - time.monotonic()))
            try:
                return bool(os.read(self.read_fd, 1))
            except _Late:
                return False
        finally:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
            _signal.signal(_signal.SIGALRM, previous)
