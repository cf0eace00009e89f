"""MEASURED: the replay results the link path reads, and which of them apply to one link.

`linkwrap bench` writes its results to the store (SQLite, for reports) and to a small marshal
file, `<cache>/measurements.marshal`, which is what a link reads: no sqlite3 on the link path
(docs/design.md, "The hot path"). A link with no such file pays one failed open().

A result applies to a link only when it was measured on the same machine (CPU model and usable
CPUs), on the same filesystem type, and with the linker binary that is installed now (same path
and mtime). Among those the closest scope wins, because the ranking is a property of the link,
not only of its size (shared/reference/measurements.md): the same output of the same project,
then the same project's outputs of the same kind; never another project's links. Results that would have applied but fail a check are named in
`ignored`, so `linkwrap explain` can say why a measurement did not count.
"""
import os
from linkwrap.records import record

from linkwrap import cache as cache_mod

CACHE = "measurements.marshal"
FORMAT = 1
MAX_ROWS = 2000   # newest kept: a few hundred outputs x candidates

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
], defaults=(None, None, None, None))
OLD_FIELDS = 19   # rows written before the paired ratios: read with those unset

# What applies to one link: the scope in words, the rows (one per linker and variant, newest),
# and why other results were ignored.
Measured = record("Measured", "scope rows ignored")

SCOPES = ("this output", "this project's {kind} outputs", "{kind} links of {size}")


def _row(r):
    """A Row from a stored tuple, or None for one that is not."""
    if not isinstance(r, tuple):
        return None
    if len(r) == OLD_FIELDS:
        r = r + (None,) * (len(Row._fields) - OLD_FIELDS)
    return Row(*r) if len(r) == len(Row._fields) else None


def load_rows() -> list:
    rows = cache_mod.load(CACHE, FORMAT).get("rows") or []
    return [row for row in map(_row, rows) if row is not None]


def add_rows(new) -> None:
    """Merge results in: a newer result replaces the one for the same link, linker and variant."""
    new = [Row(*r) for r in new]
    keys = {(r.machine, r.fs, r.project, r.output, r.linker, r.variant) for r in new}
    kept = [r for r in load_rows() if (r.machine, r.fs, r.project, r.output, r.linker, r.variant) not in keys]
    rows = (kept + new)[-MAX_ROWS:]
    cache_mod.store(CACHE, {"format": FORMAT, "rows": [tuple(r) for r in rows]})


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
        raw = cache_mod.load(CACHE, FORMAT).get("rows") or []
        if not raw:
            return None
        # On the link path: look at the raw tuples first, so that only this project's results and
        # other links of this kind and size become Rows (a few hundred results cost ~1 ms, not 10).
        cwd, kind = request.cwd, request.kind
        if facts is not None and facts.input_bytes is None:  # left for later (probe.LATER): needed now
            from linkwrap.wrap import probe
            facts = facts._replace(input_bytes=probe._try(probe.input_bytes, request))
        size = getattr(facts, "input_bytes", None) or 0
        rows = [row for row in (_row(r) for r in raw if isinstance(r, tuple) and len(r) > 6 and
                                (r[3] == cwd or (r[5] == kind and r[6] and size / 2 <= r[6] <= size * 2)))
                if row is not None]
        if not rows:
            return Measured(None, (), ())
    if not rows:
        return None
    return match(request, facts, found, rows, machine_key(getattr(facts, "cpus", None)), _stamps(found))


def _stamps(found) -> dict:
    stamps = {}
    for name, info in found.items():
        try:
            stamps[name] = (info.path, os.stat(info.path).st_mtime_ns)
        except OSError:
            pass
    return stamps


def scope_of(row, request, input_bytes):
    """0 or 1 (SCOPES) when the row is about this link, else None. Only the project it was measured
    in: another project's link of a like size can rank the linkers the other way (a C link is not a
    Rust one), and explain would show it as "measured here" where nothing was."""
    if row.project != request.cwd:
        return None
    if row.project == request.cwd and row.output == output_key(request.output):
        return 0
    if row.kind != request.kind:
        return None
    if row.project == request.cwd:
        return 1
    if input_bytes and row.input_bytes and input_bytes / 2 <= row.input_bytes <= input_bytes * 2:
        return 2
    return None


def match(request, facts, found, rows, machine, stamps) -> Measured:
    """Pure apart from its arguments: the results that apply, in the closest scope that has any."""
    fs = getattr(facts, "fs", None)
    input_bytes = getattr(facts, "input_bytes", None)
    valid = ([], [], [])
    ignored = ([], [], [])
    for row in rows:
        scope = scope_of(row, request, input_bytes)
        if scope is None:
            continue
        why = None
        if row.machine != machine:
            why = f"{row.label} measured on another machine ({row.machine})"
        elif row.fs != fs:
            why = f"{row.label} measured on {row.fs or 'an unknown filesystem'}, this output is on {fs or 'an unknown one'}"
        elif row.linker not in stamps:
            why = f"{row.label} measured {row.date} is not installed now"
        elif stamps[row.linker][0] != row.path:
            why = f"{row.label} measured {row.date} was {row.path}, now {stamps[row.linker][0]}"
        elif stamps[row.linker][1] != row.mtime_ns:
            why = f"{row.label} measured {row.date}: its binary changed since"
        if why:
            ignored[scope].append(why)
        else:
            valid[scope].append(row)
    for scope in range(3):
        if valid[scope]:
            newest = {}
            for row in valid[scope]:
                key = (row.linker, row.variant)
                if key not in newest or row.date >= newest[key].date:
                    newest[key] = row
            why = [w for s in range(scope + 1) for w in ignored[s]]
            return Measured(_scope_text(scope, request, valid[scope]), tuple(newest.values()),
                            tuple(dict.fromkeys(why)))
    why = [w for s in range(3) for w in ignored[s]]
    return Measured(None, (), tuple(dict.fromkeys(why)))


def _scope_text(scope, request, rows) -> str:
    if scope == 2:
        sizes = [r.input_bytes for r in rows if r.input_bytes]
        size = f"{min(sizes) / 1e6:.0f}-{max(sizes) / 1e6:.0f} MB of inputs" if sizes else "similar size"
        return SCOPES[2].format(kind=request.kind, size=size)
    return SCOPES[scope].format(kind=request.kind)
