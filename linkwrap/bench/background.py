"""BACKGROUND: saved links measured while the machine is idle, by a scheduler over save and replay.

A saved link needs measuring when no result in the measurement cache (evidence/measured.py) applies
to it for every linker installed now: none measured on this machine key, filesystem and project for
this output, or one whose linker binary changed since (its path and mtime are part of the key), or
an output whose real relinks were clearly slower than its measurement (stale_outputs()). The warm
server hosts the measurer (server.py calls tick() about once a second and link_arrived() as a link
reaches it); everything else is here.

  * The policy is pure: off_reason() (CI=true, on battery, `[bench] background = false`; `true`
    measures in CI and on battery too), may_start() (no link for background_quiet_s, the 1-minute
    load average below background_load of the usable CPUs), must_yield().
  * The measurer is a forked child of the server that execs a fresh interpreter
    (cli/bench.py's measure_in_background, which lends the store's writer): its own process group,
    SCHED_IDLE, nice 19 and the idle I/O class, all inherited by the linkers it replays, so a
    build's processes always run first; it dies with the server (PR_SET_PDEATHSIG).
  * A link arriving, or the load rising, stops it at once: SIGTERM to its process group (the
    linker being timed too). It notes in the state file that it yielded, with the rounds it had
    done; the next measurer resumes from them (replay.bench's checkpoint and resume), it does
    not restart.
  * A budget of background_budget_s CPU seconds (its own and its linkers') per output per day.
  * A measurement records how busy the rest of the machine was over its rounds (bench/load.py, summed
    over the parts of one that was resumed); one taken busy (at least background_load x the usable
    CPUs used by others) counts, and is queued again (needs_measuring) to be taken when idle.

State: <state>/bench-background.marshal (0600, under its lock): what is queued, running, done,
deferred, the progress of each measurement cut short, and the CPU spent per output today.
`linkwrap status` and `linkwrap bench --wait` read it.
"""
import os
import time

from linkwrap.bench import child
from linkwrap.bench.child import IOPRIO_CLASS_IDLE, die_with, lower_priority, own_priority  # noqa: F401 (the measurer's, and the tests')

STATE = "bench-background.marshal"
LOCK = "bench-background.lock"
FORMAT = 1
RECHECK_S = 600       # with no link meanwhile, the saved links are looked at again this often
DONE_KEPT = 20        # finished measurements remembered for status and bench --wait
_BOOT = ("import os; os.closerange(3, 1 << 16); import sys; sys.path.insert(0, {parent!r}); "
         "from linkwrap.cli.bench import measure_in_background; measure_in_background()")


# --- the policy (pure) ----------------------------------------------------------

def off_reason(environ, setting, on_battery) -> str | None:
    """Why nothing is measured in the background, or None. setting: [bench] background."""
    if setting is False:
        return "[bench] background = false"
    if setting is True:
        return None
    if environ.get("CI", "").lower() in ("true", "1", "yes"):
        return "CI"
    if on_battery:
        return "on battery"
    return None


def may_start(now, last_link, quiet_s, load, cpus, fraction) -> bool:
    """No link for quiet_s seconds, and the machine less busy than fraction of its CPUs."""
    return now - last_link >= quiet_s and load < fraction * cpus


def must_yield(load, cpus, fraction) -> bool:
    """While measuring: the load rose. The measurer's own running linker counts one in it."""
    return load - 1 >= fraction * cpus


def needs_measuring(scope, measured_linkers, installed, link, stale, busy=False) -> bool:
    """scope, measured_linkers: what measured.match() found for this output; installed: linker names;
    link: (project, output key); stale: such pairs whose measurement the relinks contradict; busy: a
    result of this output was taken busy (bench/load.py): it counts, but is taken again when idle."""
    from linkwrap.evidence.measured import SCOPES
    return link in stale or scope != SCOPES[0] or busy or bool(set(installed) - set(measured_linkers))


def stale_outputs() -> set:
    """(project, output key) pairs whose real relinks were clearly slower than their measurement
    (learn.against_measured marks them, measured.stale() keeps them): measured again whatever the
    cache holds; the new results clear the mark (measured.add_rows)."""
    from linkwrap.evidence import measured
    return set(measured.stale())


# --- the state file --------------------------------------------------------------

def _state_path() -> str:
    from linkwrap import paths
    return os.path.join(paths.state_dir(), STATE)


def read_state() -> dict:
    """The state, or {} when there is none (or it is not this user's own file)."""
    import marshal
    from linkwrap import paths
    try:
        fd = os.open(_state_path(), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        if paths.others_can_write(os.fstat(fd)):
            return {}
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    finally:
        os.close(fd)
    return data if isinstance(data, dict) and data.get("format") == FORMAT else {}


def update_state(change) -> dict:
    """change(state) applied under the lock, the file rewritten 0600. -> the new state."""
    import marshal
    from linkwrap import paths
    state_dir = paths.state_dir()
    paths.make_private_dir(state_dir)
    lock = paths.lock(os.path.join(state_dir, LOCK))
    try:
        state = read_state() or {"format": FORMAT}
        change(state)
        tmp = f"{_state_path()}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as f:
            marshal.dump(state, f)
        os.replace(tmp, _state_path())
        return state
    finally:
        os.close(lock)


def running_pid(state) -> int | None:
    """The measurer's pid while it runs (the state names a pid only while one does)."""
    pid = state.get("pid")
    if not pid:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return pid


def pending(state) -> bool:
    """Something queued or being measured: what `linkwrap bench --wait` waits for."""
    return bool(state.get("queued")) or bool(state.get("running") and running_pid(state))


# --- the host: in the server ---------------------------------------------------

_host = {"pid": None, "pidfd": None, "told": None, "dirty": True, "ended": None, "off": "unset"}


def measuring() -> bool:
    """A measurer of this server's runs (the base builder waits for it: bench/incremental_base.py)."""
    return _host["pid"] is not None


def link_arrived() -> None:
    """A link reached the server: the measurer stops at once (and what was saved may be new)."""
    _host["dirty"] = True
    if _host["pid"] is not None and _host["told"] is None:
        _tell_to_stop()


def tick(now, last_link, busy) -> None:
    """The server's loop, about once a second: start, stop or reap the measurer.
    now, last_link: monotonic times; busy: a link is being served. Never raises: the server serves on."""
    try:
        _tick(now, last_link, busy)
    except Exception as e:
        from linkwrap import faults
        faults.note("scheduling background measurements", e)
        _host["ended"], _host["dirty"] = now, False   # not again every second


def _tick(now, last_link, busy) -> None:
    if _host["pid"] is not None:
        _watch(now, busy)
        return
    if busy or not (_host["dirty"] or _host["ended"] is None or now - _host["ended"] > RECHECK_S):
        return
    settings = _settings()
    reason = off_reason(os.environ, settings["background"], on_battery())
    if reason != _host["off"]:
        _host["off"] = reason
        _note_off(reason)
    if reason:
        return
    if not _anything_saved():
        _host["ended"], _host["dirty"] = now, False
        return
    cpus = len(os.sched_getaffinity(0))
    if may_start(now, last_link, settings["background_quiet_s"], os.getloadavg()[0], cpus,
                 settings["background_load"]):
        _start()


def _watch(now, busy) -> None:
    if child.ended(_host)[0]:   # (the server's own reaping may have reaped it)
        _host["ended"] = now
        return
    if _host["told"] is None:
        settings = _settings()
        if busy or must_yield(os.getloadavg()[0], len(os.sched_getaffinity(0)), settings["background_load"]):
            _host["dirty"] = True
            _tell_to_stop()
    else:
        child.kill_if_overdue(_host)


def _tell_to_stop() -> None:
    child.stop(_host)   # the linker it is timing too, at once


def _settings() -> dict:
    """[bench] background* of the user's own file (a project's own is read per saved link)."""
    from linkwrap.errors import LinkwrapError
    from linkwrap.request import config
    try:
        return config.load(_Nowhere(), os.environ).background
    except LinkwrapError:
        return dict(config.BACKGROUND_DEFAULTS)


class _Nowhere:
    cwd, output = "/", None


def on_battery() -> bool:
    """A battery discharging (/sys/class/power_supply): then nothing is measured unless asked."""
    base = "/sys/class/power_supply"
    try:
        names = os.listdir(base)
    except OSError:
        return False
    for name in names:
        try:
            with open(os.path.join(base, name, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(base, name, "status")) as f:
                status = f.read().strip()
        except OSError:
            continue
        if kind == "Battery" and status == "Discharging":
            return True
    return False


def _anything_saved() -> bool:
    """A saved link exists: else no measurer is started only to find nothing (one listdir)."""
    from linkwrap.record.save import saved_dir
    try:
        return any(n.endswith(".marshal") for n in os.listdir(os.path.join(saved_dir(), "links")))
    except OSError:
        return False


def _note_off(reason) -> None:
    # Only while no measurer runs (tick()): its lock, held at SCHED_IDLE behind a busy build, could
    # otherwise keep the server (and the next link's spare) waiting.
    def change(state):
        state["off"] = reason
    try:
        update_state(change)
    except OSError:
        pass


def _start() -> None:
    child.start(_host, _BOOT)
    _host["dirty"] = False


# --- the measurer: a process of its own ------------------------------------------

class Preempted(BaseException):
    """Told to stop (a link arrived, the load rose, the server exits): not an error."""


_guard = {"depth": 0, "pending": False}


def _on_term(sig, frame):
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.killpg(0, signal.SIGTERM)   # the linker being timed, when only this process was told
    except OSError:
        pass
    if _guard["depth"]:   # inside a write of the state or the results: right after it
        _guard["pending"] = True
        return
    raise Preempted()


class _whole:
    """A section a stop does not cut (a state or results write): the stop is taken at its end."""
    def __enter__(self):
        _guard["depth"] += 1

    def __exit__(self, *exc):
        _guard["depth"] -= 1
        if not _guard["depth"] and _guard["pending"] and not exc[0]:
            raise Preempted()


def work(to_store=None, environ=None) -> None:
    """Measure what is queued, one saved link after another, until done, deferred or stopped."""
    import signal
    environ = os.environ if environ is None else environ
    signal.signal(signal.SIGTERM, _on_term)
    me = own_priority()
    try:
        with _whole():
            queue, deferred = queued(environ)
            names = {os.path.basename(m["path"]) for m, *_ in queue}

            def begin(st):
                st.update(queued=[m["output"] for m, *_ in queue], deferred=deferred, running=None,
                          pid=os.getpid(), priority=me, off=None)
                # the progress of links no longer queued (measured, deleted, saved again) goes
                st["progress"] = {k: v for k, v in st.get("progress", {}).items() if k in names}
            update_state(begin)
        for i, item in enumerate(queue):
            _measure(item, to_store, me)
            with _whole():
                update_state(lambda st: st.update(queued=[m["output"] for m, *_ in queue[i + 1:]]))
    except Preempted:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        update_state(lambda st: st.update(running=None, pid=None))


def queued(environ) -> tuple:
    """([(manifest, replay args, linkers found, [bench] settings)] to measure, [outputs deferred:
    their budget for today is spent])."""
    from linkwrap.bench import replay
    from linkwrap.errors import LinkwrapError
    from linkwrap.evidence import measured
    from linkwrap.facts import linkers, probe
    from linkwrap.record import save
    from linkwrap.request import config
    from linkwrap.request.args import compiles
    spent = read_state().get("cpu", {})
    today = time.strftime("%Y-%m-%d", time.gmtime())
    stale = stale_outputs()
    queue, deferred = [], []
    for m in save.all_saved():
        try:
            args = save.replay_args(m)
        except save.SaveError:
            continue   # its inputs are gone: `linkwrap bench` says so when asked
        if compiles(m["args"]):
            continue
        req = replay.request_for(m, args, m["output"])
        try:
            settings = config.load(req, environ).background
        except LinkwrapError:
            continue
        if settings["background"] is False:
            continue
        found = linkers.discover(req, environ)
        facts = probe.snapshot(req, environ)
        match = measured.match(req, facts, found, measured.load_rows(m["cwd"]),
                               measured.machine_key(facts.cpus), measured.stamps(found))
        key = measured.output_key(m["output"])
        busy = match.scope == measured.SCOPES[0] and any(r.busy for r in match.rows)
        if not needs_measuring(match.scope, {r.linker for r in match.rows}, found, (m["cwd"], key), stale, busy):
            continue
        day, used = spent.get(key, (today, 0.0))
        if day == today and used >= settings["background_budget_s"]:
            deferred.append(m["output"])
            continue
        queue.append((m, args, found, settings))
    return queue, deferred


def _cpu() -> float:
    import resource
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def _measure(item, to_store, priority) -> None:
    """One saved link: resumed where a stop left it, kept when done; deferred when its budget runs out."""
    from linkwrap.bench import keep, load, replay
    from linkwrap.evidence import measured
    manifest, args, found, settings = item
    name = os.path.basename(manifest["path"])
    key = measured.output_key(manifest["output"])
    stamps = measured.stamps(found)
    today = time.strftime("%Y-%m-%d", time.gmtime())
    budget = settings["background_budget_s"]
    was = read_state().get("progress", {}).get(name)
    if not was or was.get("stamps") != stamps or was.get("saved_utc") != manifest.get("saved_utc"):
        was = {"stamps": stamps, "saved_utc": manifest.get("saved_utc"), "yielded": 0, "resumed_at": [],
               "snapshot": None}
    # The rest of the machine's CPU over every part of this measurement (a resumed one continues the sums).
    before_cpu_s, before_wall_s = was.get("others", (0.0, 0.0))
    since = load.sample()

    def others():
        cpu_s, wall_s = load.others(since, load.sample())
        return (None if cpu_s is None or before_cpu_s is None else before_cpu_s + cpu_s), before_wall_s + wall_s
    if was["snapshot"]:
        was["resumed_at"].append(was["snapshot"]["rounds"])
    day, used = read_state().get("cpu", {}).get(key, (today, 0.0))
    used = used if day == today else 0.0
    started = _cpu()

    def note(state):
        was["others"] = others()
        state.setdefault("progress", {})[name] = was
        state.setdefault("cpu", {})[key] = (today, used + _cpu() - started)
        state["running"] = manifest["output"]

    def checkpoint(snapshot):
        was["snapshot"] = snapshot
        with _whole():
            update_state(note)
        return used + _cpu() - started < budget

    with _whole():
        update_state(note)
    try:
        # A quarter of the day's CPU budget in wall time per measurement: one whose linker changes
        # later the same day is measured again within what is left.
        results, facts, rounds = replay.bench(manifest, args, found, budget_s=budget / 4,
                                              base=replay.callers_default(manifest, found),
                                              resume=was["snapshot"], checkpoint=checkpoint)
    except Preempted:
        was["yielded"] += 1
        update_state(note)
        raise
    if rounds < replay.MIN_TIMED_ROUNDS:   # the budget ran out first: the rest tomorrow
        with _whole():
            update_state(lambda st: (note(st), st.setdefault("deferred", []).append(manifest["output"])))
        return
    with _whole():
        taken = load.summary(*others(), settings["background_load"], len(os.sched_getaffinity(0)))
        keep.keep(manifest, results, facts, rounds, to_store, load=taken)
        record = {"output": manifest["output"], "cwd": manifest["cwd"], "finished_utc": time.time(),
                  "rounds": rounds, "yielded": was["yielded"], "resumed_at": was["resumed_at"],
                  "priority": priority, "results": [tuple(r) for r in results], "fs": getattr(facts, "fs", None),
                  "budget_s": budget, "default": replay.callers_default(manifest, found),
                  "load_avg": os.getloadavg()[0], "load": taken}

        def finish(state):
            note(state)
            state["progress"].pop(name, None)
            state["done"] = state.get("done", 0) + 1
            state["last_done_utc"] = record["finished_utc"]
            state["finished"] = (state.get("finished", []) + [record])[-DONE_KEPT:]
        update_state(finish)


# --- for the server's idle exit ---------------------------------------------------

def work_pending(bases_wanted=False) -> bool:
    """Whether background work keeps the idle server up (server/workers.py, lifetime.idle_over): a
    measurer of this server's runs; or background work is on, the load is below the limit, and there
    is work: bases_wanted (the base builder's queue), measurements left queued (a measurer stopped
    part way), or links saved since the measurer last looked. Never raises: the server exits as before."""
    try:
        if measuring():
            return True
        settings = _settings()
        if off_reason(os.environ, settings["background"], on_battery()):
            return False
        if os.getloadavg()[0] >= settings["background_load"] * len(os.sched_getaffinity(0)):
            return False
        if bases_wanted:
            return True
        if not _anything_saved():
            return False
        return bool(_host["dirty"] or _host["ended"] is None or read_state().get("queued"))
    except Exception:
        return False
