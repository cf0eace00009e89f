"""Summaries -> one self-contained HTML page (inline CSS and SVG, no script, no network).

In the spirit of `cargo build --timings`: bar charts of link time per build
and per linker, then per build a timeline with one bar per link (x = when it
started within the build, length = its wall time; colour = linker; failed links
red, fall-backs hatched; a wait for memory is a grey bar before the link's), and its table of links,
slowest first.
"""
import html

from linkwrap.report.render import fmt_bytes, fmt_kb, fmt_ms, fmt_pct, plural, short_command
from linkwrap.report.summary import fell_back, parse_utc

PALETTE = ("#4e79a7", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#bab0ac", "#ff9da7")
CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5em 0 1.5em; font-size: 13px; }
th, td { padding: 2px 10px; text-align: left; border-bottom: 1px solid #eee; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
.dim { color: #777; } .bad { color: #c0392b; } .warn { color: #b9770e; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
.legend span { display: inline-block; margin-right: 1.2em; }
.legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -1px; }
"""


def e(x) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def colours(summary) -> dict:
    names = [g["linker"] for g in summary["by_linker"]]
    return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(sorted(names))}


def linker_name(link) -> str:
    return link["linker_version"] or link["linker"] or "?"


def bar_chart(rows, css_class, width=900, label_w=260, bar_h=18) -> str:
    """rows: [(label, value_ms, colour, tooltip)] -> horizontal bar chart SVG."""
    top = max((v for _, v, _, _ in rows), default=0) or 1.0
    h = bar_h * len(rows) + 4
    out = [f'<svg class="chart {css_class}" width="{width}" height="{h}" viewBox="0 0 {width} {h}" '
           f'xmlns="http://www.w3.org/2000/svg" role="img">']
    span = width - label_w - 90
    for i, (label, value, colour, tip) in enumerate(rows):
        y = i * bar_h + 2
        w = max(1.0, span * value / top)
        out.append(f'<text x="{label_w - 6}" y="{y + bar_h - 6}" text-anchor="end">{e(label[:42])}</text>')
        out.append(f'<rect class="bar" x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h - 4}" fill="{colour}">'
                   f'<title>{e(tip)}</title></rect>')
        out.append(f'<text x="{label_w + w + 4:.1f}" y="{y + bar_h - 6}">{e(fmt_ms(value))}</text>')
    out.append("</svg>")
    return "".join(out)


def timeline(build, colour_of, width=900, label_w=260, bar_h=16) -> str:
    """One bar per link of the build, placed by start time (cargo --timings' unit graph)."""
    links = sorted(build["links"], key=lambda l: l["started_utc"])
    if not links:
        return '<p class="dim">No links in this build.</p>'
    # x = 0 is the build's start when `linkwrap run` timed it, else its first link.
    t0 = parse_utc(links[0]["started_utc"]) * 1000
    if build["wall_ms"] and build["started_utc"]:
        t0 = min(t0, parse_utc(build["started_utc"]) * 1000)
    ends = [parse_utc(l["started_utc"]) * 1000 - t0 + (l.get("waited_ms") or 0) + (l["wall_ms"] or 0) for l in links]
    total = max(ends + [build["wall_ms"] or 0]) or 1.0
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
        fill = "#c0392b" if l["failed"] else colour_of.get(linker_name(l), PALETTE[0])
        how = "linked as asked" if linker_name(l) == "as asked" else f"with {linker_name(l)}"
        tip = (f"{l['crate_name']} ({l['crate_kind']}): {fmt_ms(l['wall_ms'])} {how}, "
               f"cpu {fmt_ms(l['cpu_ms'])}, peak RSS {fmt_kb(l['peak_rss_kb'])}, output {fmt_bytes(l['output_bytes'])}"
               + (", FAILED" if l["failed"] else "")
               + (f", fell back: {l.get('first_linker') or '?'} said {l.get('first_error') or 'nothing'}"
                  if l["fell_back"] else ""))
        out.append(f'<text x="{label_w - 6}" y="{y + bar_h - 5}" text-anchor="end">'
                   f'{e((l["crate_name"] or "?")[:30])} <tspan class="dim">{e(l["crate_kind"])}</tspan></text>')
        out.append(f'<rect class="link-bar" data-link-id="{l["id"]}" x="{x:.1f}" y="{y}" width="{w:.1f}" '
                   f'height="{bar_h - 4}" fill="{fill}"><title>{e(tip)}</title></rect>')
        if l["fell_back"]:
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h - 4}" fill="url(#hatch)"/>')
        out.append(f'<text x="{x + w + 4:.1f}" y="{y + bar_h - 5}">{e(fmt_ms(l["wall_ms"]))}</text>')
    out.append("</svg>")
    return "".join(out)


def links_table(build) -> str:
    rows = []
    for l in build["links"]:
        cls = ' class="bad"' if l["failed"] else (' class="warn"' if fell_back(l) else "")
        state = ("failed" if l["failed"] else "fell back" if l["fell_back"]
                 else "as asked (fault)" if l["fault"] else "ok")
        if l["fell_back"]:
            # Which linker failed first, and why: the same words as `linkwrap summary`.
            state += f' <span class=dim>({e(l.get("first_linker") or "?")}: {e(l.get("first_error") or "-")})</span>'
        else:
            state = e(state)
        rows.append(f"<tr{cls}><td>{e(l['crate_name'])} <span class=dim>{e(l['crate_kind'])}</span></td>"
                    f"<td>{e(linker_name(l))}</td><td>{e(l['write_mode'])}</td>"
                    f"<td class=n>{e(fmt_ms(l['wall_ms']))}</td><td class=n>{e(fmt_ms(l['cpu_ms']))}</td>"
                    f"<td class=n>{e(fmt_kb(l['peak_rss_kb']))}</td><td class=n>{e(fmt_bytes(l['output_bytes']))}</td>"
                    f"<td>{state}</td></tr>")
    return ("<table><tr><th>what</th><th>linker</th><th>mode</th><th class=n>wall</th><th class=n>cpu</th>"
            "<th class=n>peak RSS</th><th class=n>output</th><th>status</th></tr>" + "".join(rows) + "</table>")


def page(summary, *, generated_utc: str) -> str:
    colour_of = colours(summary)
    t = summary["totals"]
    builds = summary["builds"]
    per_build = [(f"#{b['id']} {b['tool'] or ''} {(b['started_utc'] or '')[:16].replace('T', ' ')}",
                  b["totals"]["wall_ms"], "#4e79a7",
                  f"build #{b['id']}: {plural(b['totals']['links'], 'link')}, {fmt_ms(b['totals']['wall_ms'])}")
                 for b in builds]
    per_linker = [(f"{g['linker']} ({g['links']})", g["wall_ms"], colour_of[g["linker"]],
                   f"{g['linker']}: {plural(g['links'], 'link')}, {fmt_ms(g['wall_ms'])}, peak RSS {fmt_kb(g['peak_rss_kb'])}")
                  for g in summary["by_linker"]]
    legend = "".join(f'<span><i style="background:{c}"></i>{e(n)}</span>' for n, c in colour_of.items())
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        "<title>linkwrap: link times</title>", f"<style>{CSS}</style></head><body>",
        "<h1>Link times</h1>",
        f'<p>{plural(len(builds), "build")}, {plural(t["links"], "link")}, {e(fmt_ms(t["wall_ms"]))} linking in total, '
        f'peak RSS {e(fmt_kb(t["peak_rss_kb"]))}, {t["failures"]} failed, {t["fell_back"]} fell back. '
        f'<span class="dim">Generated {e(generated_utc)} by linkwrap.</span></p>',
        "<h2>Link time per build</h2>", bar_chart(per_build, "per-build"),
        "<h2>Link time per linker</h2>", bar_chart(per_linker, "per-linker"),
        f'<p class="legend">{legend}</p>',
    ]
    for b in reversed(builds):
        share = b["linking"]
        share_text = (f", linking {fmt_pct(share['link_share'])} of {fmt_ms(share['wall_ms'])} build wall time"
                      if share and share.get("link_share") is not None else "")
        parts += [f'<h2 id="build-{b["id"]}">Build #{b["id"]} · {e(b["tool"])} · {e(short_command(b["command"]))}</h2>',
                  f'<p class="dim">{e(b["cwd"] or "")} · {e(b["started_utc"] or "")} · '
                  f'{plural(b["totals"]["links"], "link")}, {e(fmt_ms(b["totals"]["wall_ms"]))}{e(share_text)}</p>',
                  timeline(b, colour_of), links_table(b)]
    parts.append("</body></html>")
    return "\n".join(parts)
