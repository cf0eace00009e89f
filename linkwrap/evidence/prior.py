"""PRIOR: what was measured on this machine for other links, before this output is measured.

The policy follows a measurement of this output, else of its project's outputs of the same kind
(measured.py). Before either exists (a project's first build), this is the next best evidence:
another project's links of the same kind within a factor of SIZE_FACTOR of this link's input size,
measured here (same machine key and filesystem, the linker binaries installed now), as their paired
ratios to the caller's default (`linkwrap bench`, the background measurer). It comes from the
machine-wide summary measured.add_rows() keeps (one small file, read only by a link that has no
measurement of its own). With nothing measured on this machine for links like this one, `measured`
has no rows and the policy falls back on its machine default order (policy.MACHINE_ORDER,
docs/policy.md 1.4). The policy chooses; this only gathers (no ranking here: it stays pure there).
"""
from linkwrap.records import record

SIZE_FACTOR = 2   # a link of 130 MB of inputs follows links of 65-260 MB

# rows: the results that apply (measured.Row, other projects', closest in size first; none: nothing
# measured here for links like this one); input_bytes: this link's; ignored: why others did not apply.
Prior = record("Prior", "scope rows input_bytes ignored")

SCOPE = "other projects' {kind} links of a like size here"


def applicable(request, facts, found, rows=None):
    """Prior for this link (its rows empty when nothing like it was measured here)."""
    from linkwrap.evidence import measured
    if rows is None:
        rows = measured.machine_rows()
    if not rows:
        return Prior(SCOPE.format(kind=request.kind), (), getattr(facts, "input_bytes", None), ())
    size = getattr(facts, "input_bytes", None)
    if size is None:   # the link path leaves it for later: a stat per input, only here
        from linkwrap.facts.probe import input_bytes
        size = input_bytes(request)
    machine = measured.machine_key(getattr(facts, "cpus", None))
    stamps = measured.stamps(found)
    fs = getattr(facts, "fs", None)
    near, ignored = [], []
    for row in rows:
        if row.project == request.cwd or row.kind != request.kind or not like_size(row.input_bytes, size):
            continue
        why = measured.why_not(row, machine, fs, stamps)
        if why:
            ignored.append(f"{why} ({row.project})")
        else:
            near.append(row)
    near.sort(key=lambda r: abs(r.input_bytes - size))
    return Prior(SCOPE.format(kind=request.kind), tuple(near), size, tuple(dict.fromkeys(ignored)))


def like_size(theirs, mine) -> bool:
    if not theirs or not mine:
        return False
    return mine / SIZE_FACTOR <= theirs <= mine * SIZE_FACTOR


# The policy's reasons start "<linker label>: " and then one of these when the prior chose the linker.
BY_MEASUREMENT = "prior from "
BY_MACHINE_ORDER = "the machine default order"


def as_dict(prior, decision) -> dict | None:
    """For `linkwrap explain --json`: {"used": null | "measurement" | "machine default order",
    "scope", "input_bytes", "decided_by": null | the row that decided, "rows": [{project, output,
    linker, label, input_bytes, ratio_vs, ratio, ratio_ci_low, ratio_ci_high, date}], "ignored"};
    None when no prior was read (a measurement of this project applied)."""
    if prior is None:
        return None
    label = decision.linker.label if decision.linker else None
    used = None
    for reason in decision.reasons:
        if label and reason.startswith(f"{label}: {BY_MEASUREMENT}"):
            used = "measurement"
        elif label and reason.startswith(f"{label}: {BY_MACHINE_ORDER}"):
            used = "machine default order"
    rows = [{"project": r.project, "output": r.output, "linker": r.linker, "label": r.label,
             "input_bytes": r.input_bytes, "ratio_vs": r.vs, "ratio": r.ratio, "ratio_ci_low": r.ratio_low,
             "ratio_ci_high": r.ratio_high, "date": r.date} for r in prior.rows]
    decided = None
    if used == "measurement":   # the policy cites the closest like link of the chosen linker (rows' order)
        decided = next((row for row in rows if row["linker"] == decision.linker.name
                        and row["ratio_ci_high"] is not None and row["ratio_ci_high"] < 1), None)
    return {"used": used, "scope": prior.scope, "input_bytes": prior.input_bytes, "decided_by": decided,
            "rows": rows, "ignored": list(prior.ignored)}
