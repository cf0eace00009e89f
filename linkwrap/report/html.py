"""Summaries -> one self-contained HTML page (inline CSS and SVG, no script, no network).

In the spirit of `cargo build --timings`, it answers "where did my link time go":
- a header with the context: machine, CPUs, memory, kernels, filesystems, linkers
  and drivers the links ran with (context());
- per output, its link time and peak RSS across builds: the same output compared
  with itself, the only comparison the records make honestly (trends());
- per build, a concurrency line (how many links ran at once) over a timeline with
  one bar per link (x = start within the build, length = wall time, colour = linker,
  failed red, fall-backs hatched; a wait for memory, waited_ms from admission, is a
  grey bar before the link's, which ran after it), and its table of links with
  linkwrap's own time;
- EXTRA_SECTIONS: functions (summary) -> HTML added after the trends, e.g. the
  results of `linkwrap bench`, the same link on each linker.
Colours are fixed per linker (LINKER_COLOURS), so mold is the same blue in every report.
"""
import html
import zlib

from linkwrap.report.render import (build_name, build_number, fmt_bytes, fmt_kb, fmt_ms, fmt_peak, fmt_pct,
                                    history_line, name_builds, plural, saved_line, short_command)
from linkwrap.report.summary import fell_back, parse_utc

# Fixed per linker name (not per version, not per report); Tableau 10, colour-blind aware.
LINKER_COLOURS = {
    "mold": "#4e79a7", "wild": "#59a14f", "lld": "#f28e2b", "rust-lld": "#edc948", "bfd": "#76b7b2",
    "gold": "#b07aa1", "python": "#ff9da7", "as asked": "#9c755f",
}
OTHER_COLOURS = ("#bab0ac", "#86bcb6", "#d4a6c8", "#8cd17d", "#a0cbe8")
FAILED = "#c0392b"
# Functions (summary dict) -> HTML, appended after the per-output trends.
EXTRA_SECTIONS = []

CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05em; margin-top: 1.5em; }
.saved-build { font-size: 1.2em; margin: .3em 0; } .saved-history { margin: .3em 0 1em; }
table { border-collapse: collapse; margin: .5em 0 1.5em; font-size: 13px; }
th, td { padding: 2px 10px; text-align: left; border-bottom: 1px solid #eee; vertical-align: middle; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
table.context th { font-weight: normal; color: #555; }
.dim { color: #777; } .bad { color: #c0392b; } .warn { color: #b9770e; } .compiles { color: #b9770e; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
.legend span { display: inline-block; margin-right: 1.2em; }
.legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -1px; }
"""


def e(x) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def colour(linker) -> str:
    """The colour of a linker by name: fixed for the known ones, stable for others."""
    linker = linker or "?"
    if linker in LINKER_COLOURS:
        return LINKER_COLOURS[linker]
    return OTHER_COLOURS[zlib.crc32(linker.encode()) % len(OTHER_COLOURS)]


def linker_name(link) -> str:
    return link["linker_version"] or link["linker"] or "?"


def own_ms(link):
    """linkwrap's own time in one link: start-up plus inside Python, where known."""
    parts = [link.get("startup_ms"), link.get("overhead_ms")]
    return None if all(p is None for p in parts) else sum(p or 0.0 for p in parts)


def bar_chart(rows, css_class, width=900, label_w=260, bar_h=18) -> str:
    """rows: [(label, value_ms, fill, tooltip)] -> horizontal bar chart SVG. fill is a colour, or a list
    of (ms, colour, name) parts laid end to end in the bar (a build's time per linker), each its own
    `rect.bar-part`; the row's `rect.bar` then carries the outline and the tooltip over them."""
    top = max((v for _, v, _, _ in rows), default=0) or 1.0
    h = bar_h * len(rows) + 4
    out = [f'<svg class="chart {css_class}" width="{width}" height="{h}" viewBox="0 0 {width} {h}" '
           f'xmlns="http://www.w3.org/2000/svg" role="img">']
    span = width - label_w - 90
    for i, (label, value, fill, tip) in enumerate(rows):
        y = i * bar_h + 2
        w = max(1.0, span * value / top)
        out.append(f'<text x="{label_w - 6}" y="{y + bar_h - 6}" text-anchor="end">{e(label[:42])}</text>')
        if isinstance(fill, list):
            x = float(label_w)
            for part_ms, part_fill, name in fill:
                pw = w * part_ms / (value or 1.0)
                out.append(f'<rect class="bar-part" data-linker="{e(name)}" x="{x:.1f}" y="{y}" width="{pw:.1f}" '
                           f'height="{bar_h - 4}" fill="{part_fill}"/>')
                x += pw
            fill = 'none" pointer-events="all'  # the parts show; this rect holds the tooltip
        out.append(f'<rect class="bar" x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h - 4}" fill="{fill}">'
                   f'<title>{e(tip)}</title></rect>')
        out.append(f'<text x="{label_w + w + 4:.1f}" y="{y + bar_h - 6}">{e(fmt_ms(value))}</text>')
    out.append("</svg>")
    return "".join(out)


def ran(link) -> bool:
    """A link that ran a linker. A configuration error fails the link before any linker starts: its
    wall time of ~0 ms is no link time, so it stays out of the time plots and is counted apart."""
    return not (link.get("fault") or "").startswith("configuration error")


def config_errors(links) -> int:
    return sum(1 for l in links if not ran(l))


def _span_of(build):
    links = sorted((l for l in build["links"] if ran(l)), key=lambda l: l["started_utc"])
    # x = 0 is the build's start when `linkwrap run` timed it, else its first link (or its wait).
    t0 = parse_utc(links[0]["started_utc"]) * 1000
    if build["wall_ms"] and build["started_utc"]:
        t0 = min(t0, parse_utc(build["started_utc"]) * 1000)
    ends = [parse_utc(l["started_utc"]) * 1000 - t0 + (l.get("waited_ms") or 0) + (l["wall_ms"] or 0)
            for l in links]
    return links, t0, max(ends + [build["wall_ms"] or 0]) or 1.0


def concurrency(build, width=900, label_w=260, h=60) -> str:
    """How many of the build's links ran at once, over the build (a step line)."""
    links, t0, total = _span_of(build)
    events = []
    for l in links:
        s = parse_utc(l["started_utc"]) * 1000 - t0 + (l.get("waited_ms") or 0)  # it ran after its wait
        events += [(s, 1), (s + (l["wall_ms"] or 0), -1)]
    events.sort(key=lambda ev: (ev[0], ev[1]))  # an end before a start at the same instant
    top, n, points = 1, 0, [(0.0, 0)]
    for t, d in events:
        points.append((t, n))
        n += d
        points.append((t, n))
        top = max(top, n)
    points.append((total, 0))
    span = width - label_w - 80
    xy = " ".join(f"{label_w + span * t / total:.1f},{h - 4 - (h - 12) * c / top:.1f}" for t, c in points)
    return (f'<svg class="concurrency" data-max="{top}" width="{width}" height="{h}" viewBox="0 0 {width} {h}" '
            f'xmlns="http://www.w3.org/2000/svg" role="img">'
            f'<text x="{label_w - 6}" y="{h / 2:.0f}" text-anchor="end">links at once (max {top})</text>'
            f'<line x1="{label_w}" y1="{h - 4}" x2="{label_w + span}" y2="{h - 4}" stroke="#ccc"/>'
            f'<polyline fill="none" stroke="#333" stroke-width="1.5" points="{xy}"/></svg>')


def timeline(build, width=900, label_w=260, bar_h=16) -> str:
    """One bar per link of the build, placed by start time (cargo --timings' unit graph)."""
    if not build["links"]:
        return '<p class="dim">No links in this build.</p>'
    if not any(ran(l) for l in build["links"]):
        return (f'<p class="dim">No linker ran in this build: '
                f'{plural(config_errors(build["links"]), "configuration error")}.</p>')
    links, t0, total = _span_of(build)
    span = width - label_w - 80
    h = bar_h * len(links) + 22
    out = [f'<svg class="timeline" width="{width}" height="{h}" viewBox="0 0 {width} {h}" '
           f'xmlns="http://www.w3.org/2000/svg" role="img">',
           '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
           'patternTransform="rotate(45)"><rect width="3" height="6" fill="#fff" opacity=".5"/></pattern></defs>']
    for tick in range(5):
        x = label_w + span * tick / 4
        out.append(f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{h - 18}" stroke="#eee"/>'
                   f'<text x="{x:.1f}" y="{h - 4}" text-anchor="middle" class="dim">{e(fmt_ms(total * tick / 4))}</text>')
    for i, l in enumerate(links):
        y = i * bar_h + 2
        start = parse_utc(l["started_utc"]) * 1000 - t0
        wait = l.get("waited_ms") or 0
        if wait:
            # Held back for memory (admission): the link itself started after the wait.
            wx = label_w + span * start / total
            ww = max(1.5, span * wait / total)
            note = f"; {l['wait_note']}" if l.get("wait_note") else ""
            out.append(f'<rect class="memory-wait" x="{wx:.1f}" y="{y + 3}" width="{ww:.1f}" height="{bar_h - 10}" '
                       f'fill="#bbb"><title>{e(l["crate_name"])} waited {e(fmt_ms(wait))} for memory '
                       f'(predicted {e(fmt_kb(l.get("predicted_peak_kb")))}){e(note)}</title></rect>')
            start += wait
        x = label_w + span * start / total
        w = max(1.5, span * (l["wall_ms"] or 0) / total)
        fill = FAILED if l["failed"] else colour(l["linker"])
        how = "linked as asked" if linker_name(l) == "as asked" else f"with {linker_name(l)}"
        tip = (f"{l['crate_name']} ({l['crate_kind']}): {fmt_ms(l['wall_ms'])} {how}, "
               f"cpu {fmt_ms(l['cpu_ms'])}, peak RSS {fmt_peak(l)}"
               + (" (at most: linkwrap's own size is counted in it)" if l.get("peak_rss_bound") else "")
               + f", output {fmt_bytes(l['output_bytes'])}, "
               f"linkwrap's own {fmt_ms(own_ms(l))}"
               + (", compile+link: the driver compiled sources too" if l.get("compiles") else "")
               + (", FAILED" if l["failed"] else "")
               + (f", fell back: {l.get('first_linker') or '?'} said {l.get('first_error') or 'nothing'}"
                  if l["fell_back"] else ""))
        out.append(f'<text x="{label_w - 6}" y="{y + bar_h - 5}" text-anchor="end">'
                   f'{e((l["crate_name"] or "?")[:30])} <tspan class="dim">{e(l["crate_kind"])}</tspan></text>')
        out.append(f'<rect class="link-bar" data-link-id="{l["id"]}" data-linker="{e(l["linker"])}" '
                   f'x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h - 4}" fill="{fill}"><title>{e(tip)}</title></rect>')
        if l["fell_back"]:
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h - 4}" fill="url(#hatch)"/>')
        out.append(f'<text x="{x + w + 4:.1f}" y="{y + bar_h - 5}">{e(fmt_ms(l["wall_ms"]))}</text>')
    out.append("</svg>")
    return "".join(out)


def links_table(build) -> str:
    return ("<table class=links><tr><th>what</th>" + _LINK_HEAD + "</tr>"
            + "".join(_link_row(l, "") for l in build["links"]) + "</table>")


_LINK_HEAD = ("<th>linker</th><th>mode</th><th class=n>wall</th><th class=n>cpu</th><th class=n>peak RSS</th>"
              "<th class=n>output</th><th class=n>linkwrap</th><th>status</th>")


def lone_link(build) -> bool:
    """A build of one plain link (it ran, did not fail or fall back, waited for nothing): its own section
    with a concurrency chart and a timeline of one bar would say nothing its table row does not."""
    if len(build["links"]) != 1:
        return False
    l = build["links"][0]
    return ran(l) and not l["failed"] and not l["fell_back"] and not l.get("waited_ms")


def lone_links_table(builds, host) -> str:
    """One table for consecutive builds of one plain link each, a row a build (newest first)."""
    rows = []
    for b in builds:
        lead = (f'<td id="build-{e(host)}-{b["id"]}">{e(build_name(b))} <span class=dim>{e((b["started_utc"] or "")[:16].replace("T", " "))}'
                f' · {e(short_command(b["command"]))}</span></td>')
        rows += [_link_row(l, lead) for l in b["links"]]
    return (f"<h2>{plural(len(builds), 'build')} of one link each</h2>"
            "<table class=links><tr><th>build</th><th>what</th>" + _LINK_HEAD + "</tr>" + "".join(rows) + "</table>")


def _link_row(l, lead) -> str:
    """One link's row of a links table, after the cells of lead (a build's, where rows are builds)."""
    cls = ' class="bad"' if l["failed"] else (' class="warn"' if fell_back(l) else "")
    state = ("configuration error (no linker ran)" if not ran(l) else "failed" if l["failed"]
             else "fell back" if l["fell_back"]
             else "as asked (fault)" if l["fault"] else "ok")
    if l["fell_back"]:
        # Which linker failed first, and why: the same words as `linkwrap summary`.
        state += f' <span class=dim>({e(l.get("first_linker") or "?")}: {e(l.get("first_error") or "-")})</span>'
    else:
        state = e(state)
    # Its wall time is the driver's compile too: said where the figure is.
    both = " <span class=compiles>compile+link</span>" if l.get("compiles") else ""
    return (f"<tr{cls}>{lead}<td>{e(l['crate_name'])} <span class=dim>{e(l['crate_kind'])}</span>{both}</td>"
            f'<td><i style="color:{colour(l["linker"])}">■</i> {e(linker_name(l))}</td><td>{e(l["write_mode"])}</td>'
            f"<td class=n>{e(fmt_ms(l['wall_ms']) if ran(l) else '-')}</td><td class=n>{e(fmt_ms(l['cpu_ms']))}</td>"
            f"<td class=n>{e(fmt_peak(l))}</td><td class=n>{e(fmt_bytes(l['output_bytes']))}</td>"
            f"<td class=n>{e(fmt_ms(own_ms(l)))}</td><td>{state}</td></tr>")


# --- per output, across builds --------------------------------------------------

def outputs(summary) -> list:
    """[(output key, [(build, link)...] oldest first)] for every output linked, most links first."""
    seen = {}
    for b in summary["builds"]:
        for l in b["links"]:
            if not ran(l):
                continue
            key = l["output_path"] or f"{l['crate_name']} ({l['crate_kind']})"
            seen.setdefault(key, []).append((b, l))
    for runs in seen.values():
        runs.sort(key=lambda bl: bl[1]["started_utc"])
    return sorted(seen.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def sparkline(values, css_class, point_class, labels, width=220, h=34) -> str:
    """Values (None skipped) as a line with a dot each, on a scale from 0 to their maximum."""
    known = [(i, v) for i, v in enumerate(values) if v is not None]
    top = max((v for _, v in known), default=0) or 1.0
    step = (width - 12) / max(1, len(values) - 1)
    pts = [(6 + i * step if len(values) > 1 else width / 2, h - 4 - (h - 10) * v / top, i, v) for i, v in known]
    out = [f'<svg class="{css_class}" width="{width}" height="{h}" viewBox="0 0 {width} {h}" '
           'xmlns="http://www.w3.org/2000/svg" role="img">']
    if len(pts) > 1:
        out.append('<polyline fill="none" stroke="#888" points="'
                   + " ".join(f"{x:.1f},{y:.1f}" for x, y, _, _ in pts) + '"/>')
    for x, y, i, v in pts:
        out.append(f'<circle class="{point_class}" cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{labels[i][1]}">'
                   f"<title>{e(labels[i][0])}</title></circle>")
    out.append("</svg>")
    return "".join(out)


def trends(summary, limit=40) -> str:
    """Per output: link time and peak RSS in each build that linked it."""
    rows = []
    for key, runs in outputs(summary)[:limit]:
        last = runs[-1][1]
        tips = [(f"{build_name(b)}: {fmt_ms(l['wall_ms'])}, peak RSS {fmt_peak(l)} with "
                 f"{linker_name(l)}", FAILED if l["failed"] else colour(l["linker"])) for b, l in runs]
        walls = [l["wall_ms"] for _, l in runs]
        rss = [l["peak_rss_kb"] for _, l in runs]
        first = walls[0]
        change = (f"{(last['wall_ms'] - first) / first:+.0%}" if len(runs) > 1 and first and last["wall_ms"] is not None
                  else "")
        rows.append(f'<tr class="trend" data-output="{e(key)}"><td>{e(last["crate_name"])} '
                    f'<span class=dim>{e(last["crate_kind"])}</span><br><span class=dim>{e(key)}</span></td>'
                    f"<td class=n>{len(runs)}</td>"
                    f"<td>{sparkline(walls, 'trend-wall', 'wall-point', tips)}</td>"
                    f"<td class=n>{e(fmt_ms(last['wall_ms']))}<br><span class=dim>{e(change)}</span></td>"
                    f"<td>{sparkline(rss, 'trend-rss', 'rss-point', tips)}</td>"
                    f"<td class=n>{e(fmt_peak(last))}</td></tr>")
    if not rows:
        return ""
    more = len(outputs(summary)) - limit
    return ("<h2>Each output across builds</h2>"
            '<p class="dim">The same output compared with itself, oldest build on the left; dots take the colour '
            "of the linker that linked it (red: failed). Different outputs are not compared: their links differ.</p>"
            "<table class=trends><tr><th>output</th><th class=n>links</th><th>link time</th><th class=n>last</th>"
            "<th>peak RSS</th><th class=n>last</th></tr>" + "".join(rows) + "</table>"
            + (f'<p class="dim">…and {plural(more, "more output")}.</p>' if more > 0 else ""))


# --- context and page -------------------------------------------------------------

def _distinct(links, key) -> str:
    counts = {}
    for l in links:
        v = l.get(key)
        if v:
            counts[v] = counts.get(v, 0) + 1
    return ", ".join(f"{v} ({n})" for v, n in sorted(counts.items(), key=lambda kv: -kv[1])) or "-"


def context(summary, machine) -> str:
    """machine: {"host", "cpus", "mem_total_mb", "note"} of the machine the links ran on."""
    links = [l for b in summary["builds"] for l in b["links"]]
    rows = [("machine", f"{machine.get('host') or '?'}: {machine.get('cpus') or '?'} CPUs, "
                        f"{fmt_kb((machine.get('mem_total_mb') or 0) * 1024) if machine.get('mem_total_mb') else '? memory'}"
                        + (f" <span class=dim>({e(machine['note'])})</span>" if machine.get("note") else "")),
            ("kernels", e(_distinct(links, "kernel_release"))),
            ("filesystems", e(_distinct(links, "fs_type"))),
            ("linkers", e(_distinct(links, "linker_version"))),
            ("drivers", e(_distinct(links, "driver")))]
    return ("<table class=context>" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>")


def by_linker(build) -> list:
    """[(ms, colour, linker)] of a build's link time, the most first: a failed link's time in the
    colour of failure, as on the timeline."""
    parts = {}
    for l in build["links"]:
        if ran(l):
            name = "failed" if l["failed"] else (l["linker"] or "?")
            parts[name] = parts.get(name, 0.0) + (l["wall_ms"] or 0.0)
    return [(ms, FAILED if name == "failed" else colour(name), name)
            for name, ms in sorted(parts.items(), key=lambda kv: (-kv[1], kv[0]))]


def legend(summary) -> str:
    """The linkers' colours, each with how many links it made: which linker did the linking is half
    of the page's answer, and a colour key alone does not say it."""
    counts = {}
    for b in summary["builds"]:
        for l in b["links"]:
            if ran(l):
                name = l["linker"] or "?"
                counts[name] = counts.get(name, 0) + 1
    names = sorted({l["linker"] or "?" for b in summary["builds"] for l in b["links"]},
                   key=lambda n: (-counts.get(n, 0), n))
    return ('<p class="legend">' + "".join(
        f'<span data-linker="{e(n)}"><i style="background:{colour(n)}"></i>{e(n)}'
        + (f' <span class="dim">{plural(counts[n], "link")}</span>' if counts.get(n) else "") + "</span>"
        for n in names) + f'<span><i style="background:{FAILED}"></i>failed</span></p>')


def saved_lead(summary) -> str:
    """The first thing on the page: the last build's time against the caller's default's, and the
    project's history of it (render.saved_line, history_line)."""
    builds = [b for b in summary["builds"] if b.get("saved") and b["saved"]["links"]]
    lines = []
    if builds:
        last = builds[-1]
        lines.append(f'<p class="saved-build"><b>{e(build_name(last).capitalize())}:</b> {e(saved_line(last["saved"]))}</p>')
    history = summary.get("history")
    if history and history["links"]:
        lines.append(f'<p class="saved-history">{e(history_line(history))}</p>')
    return "".join(lines)


PER_BUILD_BARS = 15  # the per-build chart's bars: the latest builds, ~270 px


def body(summary, machine) -> list:
    """The sections for one machine's builds."""
    t = summary["totals"]
    builds = summary["builds"]
    own = [own_ms(l) for b in builds for l in b["links"] if own_ms(l) is not None]
    per_build = [(f"{b.get('number') or build_number(b)} {b['tool'] or ''} {(b['started_utc'] or '')[:16].replace('T', ' ')}",
                  b["totals"]["wall_ms"], by_linker(b),
                  f"{build_name(b)}: {plural(b['totals']['links'] - config_errors(b['links']), 'link')}, "
                  f"{fmt_ms(b['totals']['wall_ms'])}: " + ", ".join(
                      f"{name} {fmt_ms(ms)}" for ms, _, name in by_linker(b)))
                 for b in builds if any(ran(l) for l in b["links"])]
    errors = config_errors(l for b in builds for l in b["links"])
    # The first screen is the answer: what was saved, what linking cost, which linker, each output's
    # trend. The per-build chart shows the latest builds only (one bar a build made a page of 40
    # builds a screen of bars); every build keeps its own row or section below, and the machine's
    # context (kernels, filesystems, versions) is detail, after the charts.
    shown = per_build[-PER_BUILD_BARS:]
    parts = [
        saved_lead(summary),
        f'<p class="totals">{plural(len(builds), "build")}, {plural(t["links"], "link")}, '
        f'{e(fmt_ms(t["wall_ms"]))} linking in total, peak RSS {e(fmt_peak(t))}, '
        f'{t["failures"]} failed'
        + (f' (<span class="config-errors">{plural(errors, "configuration error")}</span>: no linker ran, '
           "not in the time plots)" if errors else "")
        + f', {t["fell_back"]} fell back. linkwrap\'s own time: '
        f'<span class="own-time">{e(fmt_ms(sum(own)))}</span>'
        + (f", {e(fmt_ms(sum(own) / len(own)))} per link" if own else "") + "</p>",
        legend(summary),
        trends(summary),
        "<h2>Link time per build</h2>"
        + (f'<p class="dim">The latest {len(shown)} of {len(per_build)} builds; each build is in its own row or '
           "section below.</p>" if len(shown) < len(per_build) else ""),
        bar_chart(shown, "per-build"),
        context(summary, machine),
    ]
    parts += [section(summary) for section in EXTRA_SECTIONS]
    lone = []  # consecutive builds of one plain link, shown as one table
    for b in reversed(builds):
        if lone_link(b):
            lone.append(b)
            continue
        if lone:
            parts.append(lone_links_table(lone, machine.get("host") or ""))
            lone = []
        share = b["linking"]
        share_text = (f", linking {fmt_pct(share['link_share'])} of {fmt_ms(share['wall_ms'])} build wall time"
                      if share and share.get("link_share") is not None else "")
        if share and share.get("compile_links"):
            share_text += (f", {plural(share['compile_links'], 'link')} compiled sources too "
                           f"({fmt_ms(share['compile_sum_ms'])}, not in linking)")
        bown = [own_ms(l) for l in b["links"] if own_ms(l) is not None]
        berrors = config_errors(b["links"])
        parts += [f'<h2 id="build-{e(machine.get("host") or "")}-{b["id"]}">{e(build_name(b).capitalize())} · '
                  f'{e(b["tool"])} · {e(short_command(b["command"]))}</h2>',
                  f'<p class="saved">{e(saved_line(b["saved"]))}</p>' if b.get("saved") else "",
                  f'<p class="dim">{e(b["cwd"] or "")} · {e(b["started_utc"] or "")} · '
                  f'{plural(b["totals"]["links"] - berrors, "link")}, {e(fmt_ms(b["totals"]["wall_ms"]))}{e(share_text)}'
                  + (f" · {plural(berrors, 'configuration error')} (no linker ran)" if berrors else "")
                  + (f" · linkwrap's own {e(fmt_ms(sum(bown)))}" if bown else "") + "</p>"]
        if any(ran(l) for l in b["links"]):
            parts += [concurrency(b), timeline(b), links_table(b)]
        elif b["links"]:
            parts += [timeline(b), links_table(b)]
        else:
            parts.append(timeline(b))
    if lone:
        parts.append(lone_links_table(lone, machine.get("host") or ""))
    return parts


def bench_section(rows) -> str:
    """The latest `linkwrap bench` results per output: each candidate's median, CI and ratio to the fastest."""
    if not rows:
        return ""
    parts = ["<h2>Bench results</h2>",
             '<p class="dim">Saved links replayed on every linker (`linkwrap bench`); later links of these outputs '
             "follow the fastest whose confidence interval is clear of the rest.</p>"]
    by_output = {}
    for r in rows:
        by_output.setdefault(r["output_path"], []).append(r)
    for output, cands in by_output.items():
        ok = [c["median_ms"] for c in cands if not c["failed"] and c["median_ms"]]
        best = min(ok) if ok else None
        first = cands[0]
        body = []
        for c in sorted(cands, key=lambda c: (c["failed"] is not None, c["median_ms"] or 0)):
            if c["failed"]:
                body.append(f'<tr class="bad"><td>{e(c["linker_label"])}</td><td>{e(c["variant"])}</td>'
                            f'<td colspan=4>failed: {e(c["failed"])}</td></tr>')
                continue
            body.append(f'<tr><td>{e(c["linker_label"])}</td><td>{e(c["variant"])}</td>'
                        f'<td class=n>{e(fmt_ms(c["median_ms"]))}</td>'
                        f'<td class=n>{e(fmt_ms(c["ci_low_ms"]))}–{e(fmt_ms(c["ci_high_ms"]))}</td>'
                        f'<td class=n>{e(fmt_kb(c["peak_rss_kb"]))}</td>'
                        f'<td class=n>{c["median_ms"] / best:.2f}×</td></tr>')
        parts += [f'<h3>{e(output)}</h3>',
                  f'<p class="dim">{e(first["measured_utc"])} · {e(first["fs_type"] or "?")} · {e(first["machine_key"])} · '
                  f'{first["runs"]} runs · load {first["load_avg_1m"]:.2f}</p>',
                  "<table><tr><th>linker</th><th>variant</th><th class=n>median</th><th class=n>95 % CI</th>"
                  "<th class=n>peak RSS</th><th class=n>× fastest</th></tr>" + "".join(body) + "</table>"]
    return "\n".join(parts)


def page(summary, *, generated_utc: str, machine=None, scope=None, bench=None) -> str:
    """One machine's builds: the `linkwrap report` page (and this machine's `linkwrap bench` results)."""
    text = _page([(machine or {}, summary)], generated_utc=generated_utc, scope=scope)
    section = bench_section(bench)
    return text.replace("</body></html>", section + "\n</body></html>") if section else text


def fleet_page(machines, *, generated_utc: str) -> str:
    """[(machine, summary)]: several machines' exports (`linkwrap report --from`), one section each."""
    return _page(machines, generated_utc=generated_utc, scope="exports of " + plural(len(machines), "machine"),
                 grouped=True)


def _page(machines, *, generated_utc, scope=None, grouped=False) -> str:
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        "<title>linkwrap: link report</title>", f"<style>{CSS}</style></head><body>",
        "<h1>Link report</h1>",
        f'<p class="dim">{e(scope or "")}{" · " if scope else ""}generated {e(generated_utc)} by linkwrap.</p>',
    ]
    for machine, summary in machines:
        name_builds(summary)
        if grouped:
            parts.append(f'<h1 class="machine" id="machine-{e(machine.get("host"))}">{e(machine.get("host"))}</h1>')
        parts += body(summary, machine)
    parts.append("</body></html>")
    return "\n".join(parts)
