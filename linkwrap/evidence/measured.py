"""MEASURED: the replay results the link path reads, and which of them apply to one link.

`linkwrap bench` writes its results to the store (SQLite, for reports) and to small marshal
files, `<cache>/measurements/NN.marshal`, which are what a link reads: no sqlite3 on the link path
(docs/hot-path.md, "The import budget"). Results apply only to the project they were measured in, so they
are split by project (NN: the crc32 of its directory, modulo SHARDS) and a link reads only its
project's shard: as one file of 2000 results, every link of every project paid 1.6 ms of CPU to read
it. A link with no shard for its project pays two failed open()s (the shard, the one-file cache of
an earlier linkwrap, which migrate() splits up).

A result applies to a link only when it was measured on the same machine (CPU model and usable
CPUs), on the same filesystem type, and with the linker binary that is installed now (same path
and mtime). Among those the closest scope wins, because the ranking is a property of the link,
not only of its size (shared/reference/measurements.md): the same output of the same project,
then the same project's outputs of the same kind. Another project's links are not measurements of
this one: they reach the choice only as a prior (evidence/prior.py), from the machine-wide summary
`<cache>/measurements/machine.marshal` that add_rows() keeps beside the shards (the paired ratios of
every project's fresh results), so a link reads one more small file, not every shard. Results that
would have applied but fail a check are named in `ignored`, so `linkwrap explain` can say why a
measurement did not count.

A measurement the real relinks contradict (learn.note: clearly slower than it said) is marked stale in
`<cache>/measurements/stale.marshal`, {(project, output key): why}; whoever measures again
(`linkwrap bench`, the background measurer) reads stale() and add_rows() clears the mark.

A result taken while the rest of the machine was busy (Row.busy, bench/load.py) counts like any
other, and is measured again by the background measurer once the machine is idle: the new result
replaces it (add_rows), so the mark goes with it.
"""
import os
from linkwrap.records import record

from linkwrap import cache as cache_mod

CACHE = "measurements"            # in the cache dir: one marshal file per shard of projects
LEGACY = "measurements.marshal"   # beside it, the one file before the shards (migrate())
LOCK = "measurements.lock"        # beside it: one writer of the shards at a time
FORMAT = 1
SHARDS = 64
MAX_ROWS = 1000   # newest kept in a shard: a few hundred outputs x candidates of one project
MACHINE = os.path.join(CACHE, "machine.marshal")   # every project's paired fresh results: priors
MACHINE_ROWS = 400   # newest kept there: ~60 KB, read by a link only when nothing of its own applies
STALE = os.path.join(CACHE, "stale.marshal")        # outputs whose measurement the relinks contradict

# One candidate's result on one saved link. Plain tuples in the file (marshal), Row here.
Row = record("Row", [
    "machine",      # str: machine_key()
    "fs",           # str | None: filesystem type the outputs were written to
    "kernel",       # str | None
    "project",      # str: the link's working directory (a Cargo workspace root)
    "output",       # str: output_key() of the link's output
    "kind",         # str: pie | exec | shared | ...
    "input_bytes",  # int | None
    "linker",       # str: mold | wild | lld | rust-lld | bfd | gold | python
    "label",        # str: "mold 1.10.1"
    "path",         # str: the linker binary
    "mtime_ns",     # int: its mtime when measured
    "variant",      # str: fresh | in-place | no-mmap
    "median_ms",    # float
    "ci_low_ms",    # float: 95 % confidence interval of the median
    "ci_high_ms",   # float
    "runs",         # int
    "peak_rss_kb",  # int | None
    "date",         # str: YYYY-MM-DD
    "failed",       # str | None: the linker's first error line
    "vs",           # str | None: the linker the paired ratios are to (the caller's default)
    "ratio",        # float | None: median of this time / vs's time in the same round
    "ratio_low",    # float | None: its 95 % confidence interval
    "ratio_high",   # float | None
    # How busy the rest of the machine was during the rounds (bench/load.py): the CPUs it kept busy
    # on average, and whether that reached the background load limit (taken busy: it counts, and the
    # background measurer takes it again when the machine is idle).
    "others_cpus",  # float | None: in CPUs (None: written before this field, or /proc/stat unreadable)
    "busy",         # bool | None
], defaults=(None,) * 6)
OLD_FIELDS = 19   # rows written before the paired ratios (and, 23, before the load): read with those unset

# What applies to one link: the scope in words, the rows (one per linker and variant, newest),
# and why other results were ignored.
Measured = record("Measured", "scope rows ignored")

SCOPES = ("this output", "this project's {kind} outputs")


def _row(r):
    """A Row from a stored tuple, or None for one that is not."""
    if not isinstance(r, tuple):
        return None
    if OLD_FIELDS <= len(r) < len(Row._fields):
        r = r + (None,) * (len(Row._fields) - len(r))
    return Row(*r) if len(r) == len(Row._fields) else None


def shard(project) -> str:
    """The cache name of the shard that holds a project's results (crc32: the same in every process)."""
    import zlib
    return os.path.join(CACHE, f"{zlib.crc32((project or '').encode('utf-8', 'surrogateescape')) % SHARDS:02x}.marshal")


def _raw(name):
    """A shard's stored tuples, or None when there is no such shard (the legacy file may hold them)."""
    data = cache_mod.load(name, FORMAT)
    return data["rows"] if isinstance(data.get("rows"), list) else None


def load_rows(project=None) -> list:
    """The stored results: all of them, or those of one project's shard (other projects sharing it
    included)."""
    names = [shard(project)] if project is not None else [
        os.path.join(CACHE, f"{i:02x}.marshal") for i in range(SHARDS)]
    rows = [r for name in names for r in (_raw(name) or ())]
    return [row for row in map(_row, rows) if row is not None]


def add_rows(new) -> None:
    """Merge results in: a newer result replaces the one for the same link, linker and variant."""
    by_shard = {}
    for r in new:
        r = Row(*r)
        by_shard.setdefault(shard(r.project), []).append(r)
    lock = _lock()
    try:
        _migrate()
        for name, rows in by_shard.items():
            _merge(name, rows)
        summary = [r for rows in by_shard.values() for r in rows if for_priors(r)]
        if summary:
            _merge(MACHINE, summary, keep=MACHINE_ROWS)
        _clear_stale({(r.project, r.output) for rows in by_shard.values() for r in rows})
    finally:
        os.close(lock)


def for_priors(row) -> bool:
    """A result another project's link may follow: a fresh write, timed, paired with the caller's default."""
    return row.variant == "fresh" and not row.failed and row.ratio is not None and row.vs is not None


def machine_rows() -> list:
    """The machine-wide summary's results (every project's), newest last."""
    return [row for row in map(_row, _raw(MACHINE) or ()) if row is not None]


def stale() -> dict:
    """{(project, output key): {"linker", "measured_ms", "relinks_ms", "utc"}}: the measurements that
    this output's real relinks contradict, for whoever measures again."""
    data = cache_mod.load(STALE, FORMAT).get("outputs")
    return data if isinstance(data, dict) else {}


def is_stale(request) -> bool:
    return (request.cwd, output_key(request.output)) in stale()


def mark_stale(project, output, linker, measured_ms, relinks_ms) -> None:
    """The relinks of output through linker took relinks_ms (median), its measurement said measured_ms."""
    import time
    marks = stale()
    key = (project, output_key(output))
    if key in marks and marks[key].get("linker") == linker:
        return   # marked already: not rewritten at every relink
    marks[key] = {"linker": linker, "measured_ms": measured_ms, "relinks_ms": relinks_ms, "utc": time.time()}
    cache_mod.store(STALE, {"format": FORMAT, "outputs": dict(list(marks.items())[-MAX_ROWS:])})


def _clear_stale(keys) -> None:
    marks = stale()
    if marks and keys.intersection(marks):
        cache_mod.store(STALE, {"format": FORMAT, "outputs": {k: v for k, v in marks.items() if k not in keys}})


def _same(r) -> tuple:
    """What a newer result replaces: the same link, linker and variant."""
    return (r.machine, r.fs, r.project, r.output, r.linker, r.variant)


def _merge(name, rows, newer=True, keep=None) -> bool:
    """rows into shard name: newer, they replace its results of the same link, linker and variant;
    else (the legacy file's) they go under them, only where the shard has no such result."""
    stored = [r for r in map(_row, _raw(name) or ()) if r is not None]
    if newer:
        keys = {_same(r) for r in rows}
        merged = [r for r in stored if _same(r) not in keys] + list(rows)
    else:
        keys = {_same(r) for r in stored}
        merged = [r for r in rows if _same(r) not in keys] + stored
    return cache_mod.store(name, {"format": FORMAT, "rows": [tuple(r) for r in merged[-(keep or MAX_ROWS):]]})


def _lock() -> int:
    """The measurements' lock: `linkwrap bench` and the ingesting commands' migrate() write shards."""
    from linkwrap import paths
    return paths.lock(os.path.join(paths.cache_dir(), LOCK))


def migrate() -> None:
    """The one-file cache of an earlier linkwrap split into shards, then removed (`linkwrap bench`
    and the commands that ingest the spool call this; a link only reads the old file meanwhile)."""
    from linkwrap import paths
    if not os.path.lexists(os.path.join(paths.cache_dir(), LEGACY)):
        return
    lock = _lock()
    try:
        _migrate()
    finally:
        os.close(lock)


def _migrate() -> None:
    from linkwrap import paths
    legacy = os.path.join(paths.cache_dir(), LEGACY)
    if not os.path.lexists(legacy):
        return
    by_shard = {}
    for r in cache_mod.load(LEGACY, FORMAT).get("rows") or []:
        row = _row(r)
        if row is not None and isinstance(row.project, str):
            by_shard.setdefault(shard(row.project), []).append(row)
    # Older than whatever a shard holds already: merged under it, the shard's own results win.
    done = all([_merge(name, old, newer=False) for name, old in by_shard.items()])
    if done:  # else read again next time, and the link path still reads it meanwhile
        os.unlink(legacy)


def machine_key(cpus) -> str:
    """CPU model and the CPUs this process may use: what a ranking of linkers depends on."""
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo", "rb") as f:
            for line in f.read(1 << 16).decode("utf-8", "replace").splitlines():
                if line.startswith("model name"):
                    model = " ".join(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    return f"{model} x{cpus if cpus else '?'}"


def output_key(path) -> str:
    """The output path without Cargo's metadata hash (deps/app-0123456789abcdef -> deps/app),
    which changes with flags and toolchain while the link stays the same kind of link."""
    if not path:
        return ""
    d, name = os.path.split(path)
    stem, dash, tail = name.rpartition("-")
    if dash and len(tail) == 16 and all(c in "0123456789abcdef" for c in tail):
        name = stem
    return os.path.join(d, name)


def applicable(request, facts, found, rows=None):
    """Measured for this link, or None when nothing was ever measured here."""
    if rows is None:
        raw = _raw(shard(request.cwd))
        if raw is None:
            raw = cache_mod.load(LEGACY, FORMAT).get("rows")
        if not raw:
            return None
        # On the link path: look at the raw tuples first, so that only this project's results become
        # Rows (a few hundred results cost ~1 ms, not 10): no other project's applies (scope_of), and
        # other projects that share the shard are not "measured here".
        cwd = request.cwd
        rows = [row for row in (_row(r) for r in raw if isinstance(r, tuple) and len(r) > 6 and r[3] == cwd)
                if row is not None]
    if not rows:
        return None
    return match(request, facts, found, rows, machine_key(getattr(facts, "cpus", None)), stamps(found))


def stamps(found) -> dict:
    """{linker: (its binary, that binary's mtime)}: what a measurement of it stays valid for."""
    out = {}
    for name, info in found.items():
        try:
            out[name] = (info.path, os.stat(info.path).st_mtime_ns)
        except OSError:
            pass
    return out


def scope_of(row, request, output):
    """0 or 1 (SCOPES) when the row is about this link, else None; output: output_key(request.output).
    Only the project it was measured in: another project's link of a like size can rank the linkers
    the other way (a C link is not a Rust one), and explain would show it as "measured here" where
    nothing was."""
    if row.project != request.cwd:
        return None
    if row.output == output:
        return 0
    return 1 if row.kind == request.kind else None


def why_not(row, machine, fs, stamps):
    """Why a result does not hold for a link here now (machine, filesystem, linker binary), or None."""
    if row.machine != machine:
        return f"{row.label} measured on another machine ({row.machine})"
    if row.fs != fs:
        return f"{row.label} measured on {row.fs or 'an unknown filesystem'}, this output is on {fs or 'an unknown one'}"
    if row.linker not in stamps:
        return f"{row.label} measured {row.date} is not installed now"
    if stamps[row.linker][0] != row.path:
        return f"{row.label} measured {row.date} was {row.path}, now {stamps[row.linker][0]}"
    if stamps[row.linker][1] != row.mtime_ns:
        return f"{row.label} measured {row.date}: its binary changed since"
    return None


def match(request, facts, found, rows, machine, stamps) -> Measured:
    """Pure apart from its arguments: the results that apply, in the closest scope that has any."""
    fs = getattr(facts, "fs", None)
    output = output_key(request.output)
    valid = ([], [])
    ignored = ([], [])
    for row in rows:
        scope = scope_of(row, request, output)
        if scope is None:
            continue
        why = why_not(row, machine, fs, stamps)
        if why:
            ignored[scope].append(why)
        else:
            valid[scope].append(row)
    for scope in range(len(SCOPES)):
        if valid[scope]:
            newest = {}
            for row in valid[scope]:
                key = (row.linker, row.variant)
                if key not in newest or row.date >= newest[key].date:
                    newest[key] = row
            why = [w for s in range(scope + 1) for w in ignored[s]]
            return Measured(SCOPES[scope].format(kind=request.kind), tuple(newest.values()),
                            tuple(dict.fromkeys(why)))
    why = [w for s in range(len(SCOPES)) for w in ignored[s]]
    return Measured(None, (), tuple(dict.fromkeys(why)))
