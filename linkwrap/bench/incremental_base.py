"""INCREMENTAL BASE: a base for linkwrap's own linker to patch, built off the build's path.

linkwrap ld's full link of a large output costs many times the fastest linker's (issue 36 item 4),
so the base an incremental relink patches is never made on the user's critical path unasked: the
fastest linker serves the link, the link is saved (record/save.py: hard links of its inputs), and
the warm server builds the base from the saved link while the machine is idle, at the lowest CPU
and I/O priority, as the background measurer replays (background.py's rules and priorities). Once
a base is ready beside the output (ld/incremental/where.ready), the next relink of that output
tries a patch (choice/incremental.py): where the patch can be made, the output is patched from the
base; where it cannot, linkwrap ld writes nothing and the full linker links, and a new base is
asked for from that link.

How the switch keeps the user's binary the one the last build asked for: the base is linked from
the saved inputs of a link (the same inodes, hard-linked) but the state records them by their real
names (LINKWRAP_LD_NAMES), and a relink compares every input of the new link with those records
(identity, then section hashes) and patches whatever differs, so the patched output is what the
new link's inputs make, whatever the base was made from. The user's output itself is never written
here: the base lives in the state directory (`base-only`).

  want(cwd, output)  on the link path, after a saved link a full linker made: one file touched,
                     <state>/incremental-bases/<manifest id> (its mtime says when; record/base_queue.py).
  tick(), link_arrived()  hosted by the server (server/workers.py), beside background.tick: one
                     builder at a time, never while the measurer runs or a link is served; a link
                     arriving stops it at once (SIGTERM to its process group). A base build is all
                     or nothing (the state is renamed into place last), so one cut short is started
                     again later, from the latest saved link.
  build(id)          the builder's process: the saved link, linkwrap ld base-only, its exit.
A build that fails is not retried for the same saved link (the marker keeps its failure); the next
saved link asks again.
"""
import os
import time

_BOOT = ("import os; os.closerange(3, 1 << 16); import sys; sys.path.insert(0, {parent!r}); "
         "from linkwrap.bench.incremental_base import build_in_background; build_in_background({ident!r})")


from linkwrap.record.base_queue import queue_dir, done, wanted  # noqa: F401 (the queue: the link path writes it)


# --- the host: in the server ---------------------------------------------------

_host = {"pid": None, "pidfd": None, "told": None, "ident": None, "asked": None}


def building() -> bool:
    return _host["pid"] is not None


def link_arrived() -> None:
    """A link reached the server: a base being built stops at once (a link first, always)."""
    if _host["pid"] is not None and _host["told"] is None:
        _tell_to_stop()


def tick(now, last_link, busy, measuring) -> None:
    """The server's loop, about once a second; measuring: the background measurer runs. Never raises."""
    try:
        _tick(now, last_link, busy, measuring)
    except Exception as e:
        from linkwrap import faults
        faults.note("building an incremental base in the background", e)


def _tick(now, last_link, busy, measuring) -> None:
    from linkwrap.bench import background
    if _host["pid"] is not None:
        _watch(busy)
        return
    if busy or measuring:
        return
    queue = wanted()
    if not queue:
        return
    settings = background._settings()
    if background.off_reason(os.environ, settings["background"], background.on_battery()):
        return
    if background.may_start(now, last_link, settings["background_quiet_s"], os.getloadavg()[0],
                            len(os.sched_getaffinity(0)), settings["background_load"]):
        _start(*queue[0])


def _watch(busy) -> None:
    from linkwrap.bench import background, child
    told = _host["told"]
    over, code = child.ended(_host)
    if over:
        if told is None:
            # not stopped by us: built, or failed (its reason in the result the builder left; code
            # None: the server's own reaping took it)
            done(_host["ident"], _host["asked"], _result(_host["ident"], code))
        _host.update(ident=None, asked=None)
        return
    if told is None:
        settings = background._settings()
        if busy or background.must_yield(os.getloadavg()[0], len(os.sched_getaffinity(0)),
                                         settings["background_load"]):
            _tell_to_stop()
    else:
        child.kill_if_overdue(_host)


def _tell_to_stop() -> None:
    from linkwrap.bench import child
    child.stop(_host)   # linkwrap ld with it


def _result_path(ident) -> str:
    return os.path.join(queue_dir(), f"{ident}.result")


def _result(ident, code):
    """None when the builder said it built the base, else its one line (or its exit status)."""
    try:
        fd = os.open(_result_path(ident), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd) as f:
            text = f.read().strip()
        os.unlink(_result_path(ident))
    except OSError:
        text = ""
    if text.startswith("built"):
        _note_built(ident, text[len("built"):].strip())
        return None
    return text or f"the builder exited with status {code}"


LAST = "last-built.json"


def _note_built(ident, priority) -> None:
    """<queue>/last-built.json: the last base built, when, at which priority (`linkwrap status`)."""
    import json
    try:
        prio = json.loads(priority)
    except ValueError:
        prio = None
    path = os.path.join(queue_dir(), LAST)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"manifest": ident, "built_utc": time.time(), "priority": prio}, f)
    os.replace(tmp, path)


def last_built(state=None):
    """What _note_built kept, or None."""
    import json
    try:
        fd = os.open(os.path.join(queue_dir(state), LAST), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def background_priority() -> dict:
    from linkwrap.bench import child
    return child.own_priority()


def _start(ident, asked_ns) -> None:
    from linkwrap.bench import child
    try:
        os.unlink(_result_path(ident))
    except FileNotFoundError:
        pass
    child.start(_host, _BOOT, ident=ident)
    _host.update(ident=ident, asked=asked_ns)


# --- the builder's process ------------------------------------------------------

def build_in_background(ident) -> None:
    """The builder (started by _start): builds, leaves "built" or its one line in <id>.result."""
    try:
        why = build(ident)
    except Exception as e:
        from linkwrap.faults import describe
        why = describe("building the incremental base", e)
    try:
        fd = os.open(_result_path(ident), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as f:
            if why is None:     # with its own priority as the kernel reports it (status, the tests)
                import json
                f.write("built " + json.dumps(background_priority()) + "\n")
            else:
                f.write(why.replace("\n", " ") + "\n")
    except OSError:
        pass
    os._exit(0)


def build(ident, state=None):
    """Link the saved link `ident` base-only with linkwrap's own linker; -> None, or why not."""
    import shutil
    import tempfile
    from linkwrap.bench import replay
    from linkwrap.facts import linkers
    from linkwrap.ld.incremental import where
    from linkwrap.record import save
    from linkwrap.run import run
    from linkwrap.evidence.saved import saved_dir
    try:
        manifest = save.load(os.path.join(saved_dir(state), "links", ident + ".marshal"))
        args = save.replay_args(manifest)
    except (OSError, save.SaveError) as e:
        return str(e)
    found = linkers.discover(replay.request_for(manifest, args, manifest["output"]), os.environ)
    if "python" not in found:
        return "linkwrap's own linker (linkwrap-ld) is not installed"
    output = os.path.join(manifest["cwd"], manifest["output"])
    # on the output's filesystem, so the base can be a hard link beside it
    work = tempfile.mkdtemp(prefix=".linkwrap-base.", dir=os.path.dirname(output))
    try:
        cands, _facts = replay.candidates(manifest, args, {"python": found["python"]}, work, only=("python",))
        cand = next(c for c in cands if c.variant == "fresh")
        names = os.path.join(work, "names")
        fd = os.open(names, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            for saved_as, real in _real_names(manifest):   # (ld/incremental/where.NAMES_ENV's pairs)
                f.write(os.fsencode(saved_as) + b"\0" + os.fsencode(real) + b"\0")
        # the linker writes its -o beside the work dir's names; the state goes beside the output
        out = os.path.join(work, os.path.basename(output))
        argv = _with_output(cand.argv, cand.out, out)
        env = run.linker_environment(os.environ)
        env.update({where.ENV: where.BASE_ONLY, where.NAMES_ENV: names, "LINKWRAP_LD_OUTPUT": output})
        code, _wall, _u, _s, _rss, _out, err, _own = run.spawn(argv, env)
        if code != 0:
            from linkwrap.record import record
            return record.first_error(err) or f"linkwrap ld exited with status {code}"
        if not where.ready(output):
            return "linkwrap ld left no base beside the output"
        return None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _real_names(manifest):
    """(saved copy's path, the path as the link's own command line gives it): the real relink's
    inputs are matched by the names its command line uses, relative or not (state.input_key)."""
    from linkwrap.record.save import file_refs
    files, cwd = manifest["files"], manifest["cwd"]
    for arg in manifest["args"]:
        for _pre, path, _suf in file_refs(arg):
            got = files.get(os.path.join(cwd, path))
            if got is not None and got[1] != path:
                yield got[1], path
                break


def _with_output(argv, old, new) -> list:
    """argv with the -o value `old` (alone or joined) replaced by `new`."""
    out = []
    for a in argv:
        if a == old:
            out.append(new)
        elif a.startswith("-o") and a[2:] == old:
            out.append("-o" + new)
        else:
            out.append(a)
    return out
