"""LEARN: every relink of an output is a measurement; keep the evidence, small and per output.

An edit-build loop relinks the same output again and again. Each relink through a fast linker
(mold, wild, lld, rust-lld) adds its time to that output's evidence, and policy.learned_pick
(pure) uses it: while a candidate has fewer than NEED samples it is tried on every other link
at most (never two tries in a row); once every candidate has NEED samples the one with the
lowest median keeps the output, and every EXPLORE_EVERY-th link re-tries the runner-up so a
change (a new linker, a bigger program) is noticed. A candidate that failed on this output is
never tried on it again.

An incremental link by linkwrap's own linker (policy Decision.incremental) adds its time to the
output's `incremental` samples instead, whoever asked for it: they are what choice/incremental.py
compares with the full linkers' medians (docs/policy.md 1.5).

Times are corrected for how busy the machine was: wall time x min(1, usable CPUs / 1-minute
load average). Crude, but a link measured while a build saturated the machine then does not
count as the linker's fault.

One marshal file per output in `<cache>/learned/` (crc of the project directory and the output
without Cargo's hash): a link reads and rewrites only its own, so the concurrent links of one
build do not overwrite each other's evidence. Times are read and written only when `[choice] learn`
is on (the default) and linkwrap chose the linker itself; a failure is kept whoever chose. A link
whose driver compiles sources too (args.compiles) times the compile as well: it neither adds nor
uses times, so its linker is the usual choice.

Bounded like the records (`[records]` in linkwrap.toml): one output's file holds at most KEEP
samples per fast linker and the linkers that failed on it (kept even where learning is off: every
choice but a forced one consults them); the directory holds the evidence of at
most `max_learned` outputs and none older than `keep_days` (a file's mtime is its output's last
link), the least recently relinked going first. The commands that ingest the spool prune it
(store.db.open_store); a link that starts a new file prunes it too once it is over the default
bound, so a machine where no command ever runs stays bounded.
"""
import marshal
import os

from linkwrap.records import record

FORMAT = 1
KEEP = 5             # samples kept per candidate (the newest)
NEED = 3             # samples before a candidate is judged by its median
EXPLORE_EVERY = 20   # once learnt, the runner-up is re-tried on one link in this many

# What the policy gets: per candidate (samples, median corrected ms); candidates that failed here;
# links and exploring links so far; whether the previous link explored; (samples, median corrected
# ms) of this output's incremental links by linkwrap's own linker, or None (policy.incremental).
Learned = record("Learned", "key stats failed links explored last_explored incremental", (None,))


def _path(request) -> str:
    import zlib
    from linkwrap import paths
    from linkwrap.evidence.measured import output_key
    key = "\0".join((request.cwd or "", output_key(request.output))).encode("utf-8", "surrogateescape")
    return os.path.join(paths.cache_dir(), "learned", f"{zlib.crc32(key):08x}.marshal")


def _read(path, request) -> dict:
    from linkwrap.evidence.measured import output_key
    from linkwrap import paths
    try:
        # Evidence another user could have written is not evidence: the directory is opened without
        # following a link and must be private, the file this user's.
        dfd = paths.open_private_dir(os.path.dirname(path))
        try:
            fd = os.open(os.path.basename(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
        finally:
            os.close(dfd)
        with open(fd, "rb") as f:
            if paths.others_can_write(os.fstat(fd)):
                raise ValueError("not ours")
            data = marshal.loads(f.read())  # not load(f): it reads a few bytes at a time
        if isinstance(data, dict) and data.get("format") == FORMAT and \
                data.get("key") == (request.cwd, output_key(request.output)):
            return data
    except (OSError, EOFError, ValueError, TypeError):
        pass
    return {"format": FORMAT, "key": (request.cwd, output_key(request.output)), "samples": {},
            "failed": [], "links": 0, "explored": 0, "last": False}


def evidence(request):
    """Learned for this output (empty when it was never linked here before), or None without an output."""
    if not request.output:
        return None
    data = _read(_path(request), request)
    # A link whose driver compiles too (make's one-step `c++ -o app main.cpp`) is timed with its
    # compile: no linker is judged, nor explored for, by such times, only its failures are kept.
    compiles = _compiles(request)
    stats = {} if compiles else {name: (len(s), _median(s)) for name, s in data["samples"].items() if s}
    inc = data.get("incremental")   # a file written before incremental links were timed has none
    incremental = (len(inc), _median(inc)) if inc and not compiles else None
    return Learned(data["key"], stats, frozenset(data["failed"]), data["links"], data["explored"], data["last"],
                   incremental)


def _compiles(request) -> bool:
    from linkwrap.request.args import compiles
    return compiles(request.args)


def _median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def corrected_ms(wall_ms, cpus, load=None) -> float:
    """wall_ms scaled down by how oversubscribed the machine was (1-minute load average)."""
    if load is None:
        try:
            load = os.getloadavg()[0]
        except OSError:
            return wall_ms
    if not cpus or load <= cpus:
        return wall_ms
    return wall_ms * cpus / load


def note(request, decision, outcome, cpus, first_attempt=None, learning=True, measured=None, refused=False) -> None:
    """Add this link to its output's evidence (after the link; the link path catches any fault).
    refused: an incremental link whose patch linkwrap's own linker refused, linked by the full linker.

    learning=False (`learn = false`, a configured `prefer`, LINKWRAP_LINKER): only a linker's failure
    is kept, as every choice but a forced one consults it; nothing is written otherwise.
    measured: what applied to this link (measured.Measured); the relinks of this output clearly
    slower than its measurement of the chosen linker mark that measurement stale (against_measured)."""
    from linkwrap.facts.linkers import FAST
    if not request.output:
        return
    name = decision.linker.name if decision.linker is not None else None
    # Evidence only when the caller's own command then passed: a link that fails as asked too
    # (the caller's own undefined symbol) says nothing against the linker.
    failed = first_attempt is not None and name and outcome.returncode == 0
    # An incremental link's time is kept whoever asked for it (LINKWRAP_LINKER=python too): the
    # forced ones are how the first samples arise (docs/policy.md 1.5). The pipeline does not ask
    # for it under `[choice] learn = false`.
    incremental = getattr(decision, "incremental", False) and first_attempt is None and \
        outcome.returncode == 0 and not _compiles(request)
    if not learning and not failed and not incremental:
        return
    path = _path(request)
    data = _read(path, request)
    seen = inputs_seen(request)
    if not learning:
        if name in data["failed"] and not incremental:
            return
    else:
        data["links"] += 1
        # (a full linker's try that an incremental link replaced tried nothing)
        explored = not incremental and any(EXPLORING in r for r in decision.reasons)
        data["last"] = explored
        data["explored"] += explored
    if first_attempt is not None and name:
        if failed and name not in data["failed"]:
            data["failed"].append(name)
    elif incremental:
        # Patches and the full incremental links a change forces alike: the median is what an edit
        # loop of this output pays, its first (full) link included while it is among the last KEEP.
        # Not a relink of the very inputs the last link of this output read: a patch that finds
        # nothing changed costs a fraction of one that has an edit to place, where a full linker's
        # time does not depend on the edit, so it would make patching look faster than it is in an
        # edit loop (what its median is compared with). Such relinks come from a build that relinks
        # without an edit (a touched source, `cargo build` after a failed one, the benchmarks).
        # (A refused patch and the full link after it cost what they cost with or without an edit.)
        if refused or seen is None or data.get("inputs_seen") != seen:
            samples = data.setdefault("incremental", [])
            samples.append(round(corrected_ms(outcome.wall_ms, cpus), 3))
            del samples[:-KEEP]
    elif learning and name in FAST and outcome.returncode == 0 and not _compiles(request):
        samples = data["samples"].setdefault(name, [])
        samples.append(round(corrected_ms(outcome.wall_ms, cpus), 3))
        del samples[:-KEEP]
        against_measured(request, name, decision.write_mode, samples, measured)
    if seen is not None:
        data["inputs_seen"] = seen
    else:
        data.pop("inputs_seen", None)
    from linkwrap import paths
    from linkwrap import libc
    where, name = os.path.split(path)
    paths.make_private_dir(os.path.dirname(where))
    dfd = paths.open_private_dir(where, create=True)  # never written through a planted link
    try:
        try:
            os.stat(name, dir_fd=dfd, follow_symlinks=False)
            new = False
        except FileNotFoundError:
            new = True
        tmp = f"{name}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
        with os.fdopen(fd, "wb") as f:
            marshal.dump(data, f)
        libc.replace_file(tmp, name, dir_fd=dfd)
    finally:
        os.close(dfd)
    if new:
        _bound(os.path.dirname(path), request)


def inputs_seen(request):
    """What names this link's inputs' contents without reading them: a crc32 of their identities
    (device, inode, size, mtime), as the link stat()ed them (request/inputs.py), in order of identity
    (Cargo hard-links a codegen unit rustc took from its cache under a new name: the name and the
    link count change, the file does not). rustc's temporary directory is left out: rustc writes it
    anew for every link, from the crate the other inputs are. None when an input could not be stat()ed."""
    import zlib
    from linkwrap.request import inputs
    from linkwrap.request.args import rustc_temp_dir
    tmp = rustc_temp_dir(request.args)
    cwd = request.cwd or ""
    ids = []
    for name in request.inputs:
        if tmp and name.startswith(tmp):
            continue
        st = inputs.stat(os.path.join(cwd, name))
        if st is None:
            return None
        ids.append(f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}")
    ids.sort()
    return zlib.crc32("\0".join(ids).encode())


# "Clearly slower": the median of the last NEED relinks above this many times the measured median,
# and by more than STALE_MARGIN_MS (a real link carries the driver and linkwrap's own few ms, which a
# replay's median does not).
STALE_FACTOR = 1.5
STALE_MARGIN_MS = 20.0


def against_measured(request, linker, write_mode, samples, measured) -> None:
    """Mark this output's measurement stale (measured.mark_stale) when its relinks through the measured
    linker are clearly slower than it: the output changed since, or the replay did not see what the
    real link meets (a busier disk, a colder cache). Only a measurement of this very output."""
    from linkwrap.evidence import measured as measured_mod
    if measured is None or measured.scope != measured_mod.SCOPES[0] or len(samples) < NEED:
        return
    rows = {r.variant: r for r in measured.rows if r.linker == linker and not r.failed}
    row = rows.get(write_mode) or rows.get("fresh")
    if row is None:
        return
    relinks = _median(samples[-NEED:])
    if relinks > row.median_ms * STALE_FACTOR and relinks - row.median_ms > STALE_MARGIN_MS:
        measured_mod.mark_stale(request.cwd, request.output, linker, row.median_ms, relinks)


def _bound(where, request) -> None:
    """On the link path, for a new output only: prune once the directory is over the default bound
    (one listdir; the configuration is read only then, so a larger `max_learned` is honoured)."""
    from linkwrap.request.config import RETENTION
    if len(os.listdir(where)) <= RETENTION["max_learned"]:
        return
    from linkwrap.request import config
    try:
        limits = config.load(request, os.environ).retention
    except Exception:   # a configuration error is the link's to say; the defaults bound meanwhile
        limits = RETENTION
    prune(limits, where)


def learned_dir() -> str:
    from linkwrap import paths
    return os.path.join(paths.cache_dir(), "learned")


STALE_TMP_S = 3600   # a writer's temporary file this old was left by a link that died


def prune(limits, where=None, now=None) -> int:
    """Delete the evidence of outputs not relinked for `keep_days`, then of the least recently
    relinked ones beyond `max_learned` (0: no such limit); -> files deleted. Never follows a
    symlink: names are unlinked relative to the directory's descriptor."""
    import time
    where = where or learned_dir()
    now = time.time() if now is None else now
    try:
        dfd = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return 0
    deleted = 0
    try:
        files = []
        with os.scandir(dfd) as it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if e.name.endswith(".tmp"):
                    if now - st.st_mtime > STALE_TMP_S:
                        deleted += _unlink(e.name, dfd)
                elif e.name.endswith(".marshal"):
                    files.append((st.st_mtime, e.name))
        files.sort()
        days = limits.get("keep_days") or 0
        cut = 0
        if days:
            while cut < len(files) and files[cut][0] < now - days * 86400:
                cut += 1
        most = int(limits.get("max_learned") or 0)
        if most and len(files) - cut > most:
            cut = len(files) - most
        for _, name in files[:cut]:
            deleted += _unlink(name, dfd)
    finally:
        os.close(dfd)
    return deleted


def _unlink(name, dfd) -> int:
    try:
        os.unlink(name, dir_fd=dfd)
        return 1
    except OSError:
        return 0


EXPLORING = ": exploring"   # in the reason of a link that tries a candidate to learn its speed
