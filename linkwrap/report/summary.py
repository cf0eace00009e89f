"""Per-build summaries of the link records -> plain dicts (what --json prints).

Input: builds and links rows from links.db (linkwrap.store.queries), and
optionally a .ninja_log. Output: {"builds": [BuildSummary...], "totals": {...}}
where each BuildSummary holds its links slowest first, totals, per-linker
totals, failures, fall-backs and, when known, the share of the build's wall
time spent linking: from `linkwrap run`'s own timing, else from .ninja_log.
"""
import os
import time

from linkwrap.store import queries

LINK_FIELDS = (
    "id", "started_utc", "crate_name", "crate_kind", "package_name", "output_path", "output_kind",
    "output_bytes", "linker", "linker_version", "write_mode", "wall_ms", "user_ms", "sys_ms",
    "peak_rss_kb", "exit_status", "fell_back", "first_exit_status", "fault", "overhead_ms",
    "input_bytes", "input_count", "fs_type", "kernel_release", "nlink_before", "cwd", "project_dir",
)


def parse_utc(text: str) -> float:
    """'2026-11-30T07:53:01.870Z' -> seconds since the epoch."""
    import calendar
    return calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")) + float("0" + text[19:23])


def link_dict(row) -> dict:
    d = {k: row[k] for k in LINK_FIELDS}
    d["cpu_ms"] = (row["user_ms"] or 0.0) + (row["sys_ms"] or 0.0)
    d["fell_back"] = bool(row["fell_back"])
    d["flags_added"] = queries.json_list(row["flags_added"])
    d["reasons"] = queries.json_list(row["reasons"])
    d["failed"] = row["exit_status"] not in (0, None)
    return d


def totals(links) -> dict:
    return {
        "links": len(links),
        "wall_ms": sum(l["wall_ms"] or 0.0 for l in links),
        "cpu_ms": sum(l["cpu_ms"] for l in links),
        "overhead_ms": sum(l["overhead_ms"] or 0.0 for l in links),
        "peak_rss_kb": max((l["peak_rss_kb"] or 0 for l in links), default=0),
        "output_bytes": sum(l["output_bytes"] or 0 for l in links),
        "failures": sum(1 for l in links if l["failed"]),
        "fell_back": sum(1 for l in links if l["fell_back"]),
        "faults": sum(1 for l in links if l["fault"]),
    }


def by_linker(links) -> list:
    groups = {}
    for l in links:
        name = l["linker_version"] or l["linker"] or "?"
        groups.setdefault(name, []).append(l)
    out = [{"linker": name, **totals(ls)} for name, ls in groups.items()]
    return sorted(out, key=lambda g: -g["wall_ms"])


def busy_ms(links) -> float:
    """Wall time during which at least one of these links was running."""
    from linkwrap.report.ninja_log import busy_ms as union
    spans = []
    for l in links:
        start = parse_utc(l["started_utc"]) * 1000
        spans.append((start, start + (l["wall_ms"] or 0.0)))
    return union(spans)


def build_summary(db, build, *, since_utc=None, ninja_log=None) -> dict:
    rows = queries.links_since(db, build["id"], since_utc) if since_utc else queries.links_of(db, build["id"])
    links = [link_dict(r) for r in rows]
    share = None
    if build["wall_ms"]:
        busy = busy_ms(links)
        share = {"source": "linkwrap run", "wall_ms": build["wall_ms"], "link_busy_ms": busy,
                 "link_sum_ms": sum(l["wall_ms"] or 0.0 for l in links),
                 "link_share": busy / build["wall_ms"] if build["wall_ms"] > 0 else None}
    elif ninja_log:
        from linkwrap.report import ninja_log as nl
        share = nl.link_share(ninja_log, [l["output_path"] for l in links])
    return {
        "id": build["id"],
        "key": build["build_key"],
        "tool": build["tool"],
        "command": build["command"],
        "cwd": build["cwd"],
        "started_utc": build["started_utc"],
        "finished_utc": build["finished_utc"],
        "wall_ms": build["wall_ms"],
        "exit_status": build["exit_status"],
        "totals": totals(links),
        "by_linker": by_linker(links),
        "linking": share,
        "failures": [l for l in links if l["failed"]],
        "fell_back": [l for l in links if l["fell_back"]],
        "links": links,
    }


def summarize(db, builds, *, since_utc=None, ninja_log=None) -> dict:
    summaries = [build_summary(db, b, since_utc=since_utc, ninja_log=ninja_log) for b in builds]
    if since_utc:
        summaries = [s for s in summaries if s["links"] or s["wall_ms"]]
    every = [l for s in summaries for l in s["links"]]
    return {"builds": summaries, "totals": totals(every), "by_linker": by_linker(every)}


def ninja_log_for(build, explicit=None, cwd=None):
    """The .ninja_log to read: the one given, else ./.ninja_log when it is this build's."""
    if explicit:
        return explicit
    cwd = cwd or os.getcwd()
    candidate = os.path.join(cwd, ".ninja_log")
    if not os.path.exists(candidate):
        return None
    # ninja runs in its build directory (also after -C), where its .ninja_log is.
    if build["cwd"] and os.path.realpath(build["cwd"]) == os.path.realpath(cwd):
        return candidate
    return None


def parse_since(text: str, now=None) -> str:
    """'30m', '2h', '3d', '1w' ago, or an ISO date/time in UTC -> an ISO UTC string."""
    from linkwrap.errors import UsageError
    from linkwrap.store.spool import utc_iso
    import calendar
    now = time.time() if now is None else now
    text = text.strip()
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
    if text[:-1].replace(".", "", 1).isdigit() and text[-1:] in units:
        return utc_iso(now - float(text[:-1]) * units[text[-1]])
    for fmt in ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return utc_iso(calendar.timegm(time.strptime(text.rstrip("Z"), fmt)))
        except ValueError:
            continue
    raise UsageError(f"--since {text!r}: give a duration such as 30m, 2h, 3d, 1w, or a UTC date like 2026-05-01")
