"""What linkwrap saved: the time links took against what the caller's default linker would have taken.

The caller's default (rustc's rust-lld, else the driver's own ld) is what `linkwrap bench` replayed
each candidate against (bench_results.ratio_vs). For one link its estimate is

    default_ms ~ wall_ms / ratio             (bench's paired per-round ratio chosen/default), else
    default_ms ~ wall_ms * median(default) / median(chosen)

only when bench measured both linkers on that output (same project and output, Cargo's hash left
out), on this machine's CPU model and filesystem type, with the binary that linked it. A link linked
as asked ran the caller's own command: its default's time is its own, exactly (less a fall-back's
failed first attempt, which linkwrap cost). Every other link has no estimate: nothing is claimed
for it ("not measured yet").
"""
from linkwrap.evidence.measured import machine_key, output_key

AS_ASKED = "as asked"


def _model(key) -> str:
    """A machine key without its CPU count: the build's and the report's processes may differ in it."""
    return (key or "").rsplit(" x", 1)[0]


def index(bench_rows) -> dict:
    """{(project, output key): {(linker, variant): row}} of this machine's successful measurements."""
    here = _model(machine_key(None))
    out = {}
    for r in bench_rows:
        if r.get("failed") or not r.get("median_ms") or _model(r.get("machine_key")) != here:
            continue
        out.setdefault((r["project_dir"], r["output_key"]), {})[(r["linker"], r["variant"])] = r
    return out


def estimate(link, measured) -> dict | None:
    """{"default", "default_ms", "linkwrap_ms", "exact"} for one link, or None when not measured.

    linkwrap_ms is the time the link cost with linkwrap: its wall time, a failed first attempt's added."""
    wall = link.get("wall_ms")
    if wall is None or link.get("failed"):
        return None
    cost = wall + (link.get("first_wall_ms") or 0.0)
    if link.get("linker") == AS_ASKED:
        return {"default": None, "default_ms": wall, "linkwrap_ms": cost, "exact": True}
    if link.get("compiles"):
        return None  # its time is the compile's too: no linker ratio applies to it
    rows = measured.get((link.get("cwd"), output_key(link.get("output_path"))))
    if not rows:
        return None
    chosen = rows.get((link["linker"], link.get("write_mode") or "fresh")) or rows.get((link["linker"], "fresh"))
    if chosen is None or chosen.get("fs_type") != link.get("fs_type") or \
            (link.get("linker_path") and chosen.get("linker_path") != link["linker_path"]):
        return None
    default = chosen.get("ratio_vs")
    base = rows.get((default, "fresh")) if default else None
    if base is None:
        return None
    name = base.get("linker_label") or default
    if default == link["linker"]:
        return {"default": name, "default_ms": wall, "linkwrap_ms": cost, "exact": False}
    ratio = chosen.get("ratio_median") or chosen["median_ms"] / base["median_ms"]
    return {"default": name, "default_ms": wall / ratio, "linkwrap_ms": cost, "exact": False}


def saving(links, measured) -> dict:
    """Over these links: how many, how many have an estimate, their time with linkwrap, the default's
    estimated time, what was saved (negative: lost), and the defaults' names."""
    est = [x for x in (estimate(l, measured) for l in links) if x is not None]
    took = sum(x["linkwrap_ms"] for x in est)
    would = sum(x["default_ms"] for x in est)
    return {"links": len(links), "measured_links": len(est),
            # What the links took with linkwrap: a fall-back's failed first attempt counted in.
            "wall_ms": sum((l.get("wall_ms") or 0.0) + (l.get("first_wall_ms") or 0.0) for l in links),
            "measured_ms": took, "default_ms": would, "saved_ms": would - took,
            "defaults": sorted({x["default"] for x in est if x["default"]}),
            "exact": all(x["exact"] for x in est)}
