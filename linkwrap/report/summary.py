"""Per-build summaries of the link records -> plain dicts (what --json prints).

Input: builds and links rows from links.db (linkwrap.store.queries), and
optionally a .ninja_log. Output: {"builds": [BuildSummary...], "totals": {...}}
where each BuildSummary holds its links slowest first, totals, per-linker
totals, failures, fall-backs and, when known, the share of the build's wall
time spent linking: from `linkwrap run`'s own timing, else from a .ninja_log
whose last run is this ninja build's (ninja_share). Each build's "saved" (and the
totals') is report/saved.py's: its links' time against what the caller's default linker
would have taken, where bench measured it; history() is the same over a project's builds.
"notes" says what the time figures measure.
"""
import os
import time

from linkwrap.store import queries

LINK_FIELDS = (
    "id", "started_utc", "crate_name", "crate_kind", "package_name", "output_path", "output_kind",
    "output_bytes", "linker", "linker_version", "write_mode", "wall_ms", "user_ms", "sys_ms",
    "peak_rss_kb", "exit_status", "fell_back", "first_exit_status", "fault", "overhead_ms",
    "input_bytes", "input_count", "fs_type", "kernel_release", "nlink_before", "cwd", "project_dir",
    "first_linker", "first_error", "startup_ms", "driver",
    "predicted_peak_kb", "prediction_source", "charge_kb", "waited_ms", "wait_note", "entry_point",
    "compiles", "spawner_rss_kb", "linker_path", "first_wall_ms",
)

# Printed with every summary's JSON: what the time figures measure.
NOTES = {
    "overhead_ms": "linkwrap's own time inside Python, per link: from the start of linkwrap's link code "
                   "to the record, less the linker runs. It excludes the interpreter's start-up and imports "
                   "(see startup_ms) and its shutdown.",
    "startup_ms": "the interpreter's start-up and imports, per link: from the process's start (the kernel's "
                  "start time, 10 ms ticks, so each figure is good to +-5 ms; a build's sum is unbiased) "
                  "to the start of linkwrap's link code. null where it was not measured (older records).",
    "fell_back": "links whose first attempt (with the linker linkwrap chose) failed and were linked again "
                 "as asked, and links where a fault of linkwrap's own made it link as asked; "
                 "first_linker and first_error say what failed and why. A link whose first attempt "
                 "failed and that then failed as asked too is counted in both (a fault that failed the "
                 "link, a configuration error, in failures only).",
    "peak_rss_bound": "true where the linker's own peak RSS is at most peak_rss_kb, not known to be it: "
                      "peak_rss_kb is at or below spawner_rss_kb, the peak RSS of linkwrap's process that "
                      "started the linker, which the kernel folds into the linker's figure at its exec "
                      "(small links). total.peak_rss_bound: the highest peak is such a bound.",
    "compiles": "links whose driver compiled sources too (make's one-step `$(CXX) -o $@ $<`): their "
                "wall_ms is the compile's and the link's, so the linking share leaves them out "
                "(linking.compile_links) and no linker is judged by them. null: recorded before linkwrap knew.",
    "failures": "links whose final exit status was not 0 (a configuration error fails a link: fault says it).",
    "forced_missing": "linkers LINKWRAP_LINKER forced that were not installed, so those links chose as "
                      "usual: per forced linker, how many links and what they used instead.",
    "waited_ms": "time a link waited for memory before it ran (its wall_ms does not include it); "
                 "null where waiting for memory was off. predicted_peak_kb is the memory it was expected "
                 "to need, charge_kb what it took, estimated from its peak RSS.",
    "saved": "the links' time against what the caller's default linker (rustc's rust-lld, else the "
             "compiler's own ld) would have taken on them: measured_links of links have an estimate, "
             "from `linkwrap bench` runs of both linkers on that output on this machine (default_ms: "
             "wall_ms over the paired ratio), or exact for links linked as asked; the others have none "
             "and no saving is claimed for them. measured_ms counts a fall-back's failed first attempt. "
             "history: the same over every build of the project.",
}


def parse_utc(text: str) -> float:
    """'2026-11-30T07:53:01.870Z' -> seconds since the epoch."""
    import calendar
    return calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")) + float("0" + text[19:23])


def link_dict(row) -> dict:
    d = {k: row[k] for k in LINK_FIELDS}
    d["cpu_ms"] = (row["user_ms"] or 0.0) + (row["sys_ms"] or 0.0)
    d["fell_back"] = bool(row["fell_back"])
    d["peak_rss_bound"] = peak_is_bound(d)
    d["compiles"] = None if row["compiles"] is None else bool(row["compiles"])
    d["flags_added"] = queries.json_list(row["flags_added"])
    d["reasons"] = queries.json_list(row["reasons"])
    d["failed"] = row["exit_status"] not in (0, None)
    return d


def peak_is_bound(link) -> bool:
    """The link's peak RSS is only an upper bound: at or below the spawning process's own peak."""
    peak, spawner = link.get("peak_rss_kb"), link.get("spawner_rss_kb")
    return bool(peak and spawner and peak <= spawner)


def totals(links) -> dict:
    top = max(links, key=lambda l: l["peak_rss_kb"] or 0, default=None)
    return {
        "peak_rss_bound": bool(top) and peak_is_bound(top),
        "links": len(links),
        "wall_ms": sum(l["wall_ms"] or 0.0 for l in links),
        "cpu_ms": sum(l["cpu_ms"] for l in links),
        "overhead_ms": sum(l["overhead_ms"] or 0.0 for l in links),
        "peak_rss_kb": max((l["peak_rss_kb"] or 0 for l in links), default=0),
        "output_bytes": sum(l["output_bytes"] or 0 for l in links),
        "startup_ms": sum(l.get("startup_ms") or 0.0 for l in links),
        "startup_links": sum(1 for l in links if l.get("startup_ms") is not None),
        # Links the warm server did not take (it was not running yet): they carry the one-time costs.
        "script_links": sum(1 for l in links if l.get("entry_point") == "script"),
        "script_own_ms": sum((l["overhead_ms"] or 0.0) + (l.get("startup_ms") or 0.0)
                             for l in links if l.get("entry_point") == "script"),
        "failures": sum(1 for l in links if l["failed"]),
        "fell_back": sum(1 for l in links if fell_back(l)),
        "faults": sum(1 for l in links if l["fault"]),
        "memory_waits": sum(1 for l in links if waited(l)),
        "memory_wait_ms": sum(l.get("waited_ms") or 0.0 for l in links if waited(l)),
    }


def waited(link) -> bool:
    """Held back for memory (admission.py): a link admitted at once has waited_ms 0."""
    return bool(link.get("waited_ms"))


def forced_missing(links) -> list:
    """Links whose LINKWRAP_LINKER named a linker that is not installed: they chose as usual, which
    only a reason in the record says. -> [{"linker", "links", "used": {what linked: count}}]."""
    import re
    found = {}
    for l in links:
        for reason in l["reasons"]:
            m = re.match(r"LINKWRAP_LINKER=(\S+), but (\S+) is not installed", reason)
            if m and m.group(1) == m.group(2):
                used = found.setdefault(m.group(1), {})
                name = l["linker_version"] or l["linker"] or "as asked"
                used[name] = used.get(name, 0) + 1
                break
    return [{"linker": name, "links": sum(used.values()), "used": used} for name, used in sorted(found.items())]


def forced_missing_text(item) -> str:
    """'forced linker wild is not installed (LINKWRAP_LINKER=wild; 3 links used mold 1.10.1)'."""
    used = sorted(item["used"].items(), key=lambda kv: -kv[1])
    words = [f"{n} link{'s' if n != 1 else ''} used {name}" if i == 0 else f"{n} used {name}"
             for i, (name, n) in enumerate(used)]
    return (f"forced linker {item['linker']} is not installed "
            f"(LINKWRAP_LINKER={item['linker']}; {', '.join(words)})")


def fell_back(link) -> bool:
    """Linked again as asked after linkwrap's own choice failed, whatever the second attempt did (as
    the record's fell_back says), or linked as asked after a fault of linkwrap's and succeeded: a link
    failed by a configuration error (by design) is a failure only."""
    return bool(link["fell_back"] or (link["fault"] and not link["failed"]))


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


def build_summary(db, build, *, since_utc=None, ninja_log=None, on_ninja_mismatch=None, measured=None) -> dict:
    """measured: saved.index() of the bench results, for what the caller's default would have taken."""
    from linkwrap.report import saved
    rows = queries.links_since(db, build["id"], since_utc) if since_utc else queries.links_of(db, build["id"])
    links = [link_dict(r) for r in rows]
    share = None
    # A driver that compiles as it links (make's one-step rule) is not linking time: apart.
    linked = [l for l in links if not l["compiles"]]
    compiled = [l for l in links if l["compiles"]]
    if build["wall_ms"]:
        busy = busy_ms(linked)
        share = {"source": "linkwrap run", "wall_ms": build["wall_ms"], "link_busy_ms": busy,
                 "link_sum_ms": sum(l["wall_ms"] or 0.0 for l in linked),
                 "link_share": busy / build["wall_ms"] if build["wall_ms"] > 0 and (linked or not compiled)
                 else None}
    elif ninja_log and linked:
        share = ninja_share(build, linked, ninja_log, on_mismatch=on_ninja_mismatch,
                            name=queries.build_label(db, build))  # as the summary names it
    if share is not None:
        share.update(compile_links=len(compiled), compile_sum_ms=sum(l["wall_ms"] or 0.0 for l in compiled))
    return {
        "id": build["id"],
        # Its number among its project's builds: the id counts every project's.
        "project_build": queries.project_build_number(db, build),
        "key": build["build_key"],
        "tool": build["tool"],
        "command": build["command"],
        "cwd": build["cwd"],
        "project_dir": (build["project_dir"] or None) if "project_dir" in build.keys() else None,
        "started_utc": build["started_utc"],
        "finished_utc": build["finished_utc"],
        "wall_ms": build["wall_ms"],
        "exit_status": build["exit_status"],
        "totals": totals(links),
        "saved": saved.saving(links, measured or {}),
        "by_linker": by_linker(links),
        "linking": share,
        "failures": [l for l in links if l["failed"]],
        "fell_back": [l for l in links if fell_back(l)],
        "forced_missing": forced_missing(links),
        "links": links,
    }


def summarize(db, builds, *, since_utc=None, ninja_log=None, on_ninja_mismatch=None) -> dict:
    """on_ninja_mismatch(sentence): told why ninja_log was not used (None: nothing is said)."""
    from linkwrap.report import saved
    measured = saved.index(queries.latest_bench_by_output(db))
    summaries = [build_summary(db, b, since_utc=since_utc, ninja_log=ninja_log,
                               on_ninja_mismatch=on_ninja_mismatch, measured=measured) for b in builds]
    if since_utc:
        summaries = [s for s in summaries if s["links"] or s["wall_ms"]]
    every = [l for s in summaries for l in s["links"]]
    return {"builds": summaries, "totals": totals(every), "saved": saved.saving(every, measured),
            "by_linker": by_linker(every), "forced_missing": forced_missing(every), "notes": NOTES}


def history(db, project) -> dict:
    """saved.saving() over every link of the project's builds (every project's when None), with how
    many builds: what linkwrap saved over the project's history."""
    from linkwrap.report import saved
    rows = queries.project_links(db, project)
    links = [{**dict(r), "failed": r["exit_status"] not in (0, None)} for r in rows]  # link_dict's, cheaper
    out = saved.saving(links, saved.index(queries.latest_bench_by_output(db)))
    out.update(builds=len({r["build_id"] for r in rows}), project_dir=project)
    return out


# A .ninja_log's times and a link record's come from different clocks and moments
# (ninja notes an edge after its command exits; mtimes may be coarse): this much slack.
NINJA_SLACK_S = 2.0


def ninja_share(build, links, path, *, on_mismatch=None, name=None):
    """The linking share from a .ninja_log, only when its last run is this build; else None.

    A .ninja_log says nothing of which build wrote it, and the one in a directory
    may be from an earlier ninja run than the links being summarised. So it is
    used only when all of these hold:
    - the build's tool is ninja (its links ran under a ninja process);
    - the log's last run spans the build's links: the log's mtime is when the
      run wrote its last line, and its largest end_ms is how long after ninja's
      start that was, so the run lasted from mtime - end_ms to mtime; every link
      must lie inside that, give or take NINJA_SLACK_S;
    - the counts are plausible: ninja logs only the edges that succeeded, so at
      least half (and at least one) of the build's successful links must be
      outputs in that run.
    A log that cannot be read still raises NinjaLogError (the caller decides). name: the build as
    the summary names it, for what on_mismatch is told.
    """
    name = name or f"build #{build['id']}"

    def mismatch(why):
        if on_mismatch:
            on_mismatch(f"{path} is not used for {name}: {why}")
        return None

    if build["tool"] != "ninja":
        return mismatch(f"that build was not run by ninja (it was run by {build['tool'] or 'an unknown tool'})")
    from linkwrap.report import ninja_log as nl
    share = nl.link_share(path, [l["output_path"] for l in links])
    try:
        mtime = os.stat(path).st_mtime
    except OSError as e:
        return mismatch(e.strerror or str(e))
    timed = [l for l in links if l["started_utc"]]
    if timed:
        first = min(parse_utc(l["started_utc"]) for l in timed)
        last_end = max(parse_utc(l["started_utc"]) + (l["wall_ms"] or 0.0) / 1000 for l in timed)
        run_start = mtime - share["last_end_ms"] / 1000
        if first < run_start - NINJA_SLACK_S or last_end > mtime + NINJA_SLACK_S:
            return mismatch("its last run (ending " + _utc(mtime) + ") is not the run of that build's links "
                            f"({_utc(first)} to {_utc(last_end)})")
    succeeded = {os.path.normpath(l["output_path"]) for l in links if l["output_path"] and not l["failed"]}
    needed = max(1, (len(succeeded) + 1) // 2)
    if share["links_matched"] < needed:
        return mismatch(f"its last run has {share['links_matched']} of that build's {len(succeeded)} "
                        "linked outputs")
    return share


def _utc(unix: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(unix))


def ninja_log_for(build, explicit=None, cwd=None):
    """The .ninja_log to try: the one given, else ./.ninja_log when the build ran here.

    Whether it is this build's is ninja_share's question.
    """
    if explicit:
        return explicit
    if build["tool"] != "ninja":
        return None
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
