"""Summaries (linkwrap.report.summary dicts) -> rich tables on a console.

One build: its links slowest first, totals, the linking share, per-linker
totals, failures and fall-backs. Several builds: one line per build, then totals.
"""
from rich import box
from rich.console import Console
from rich.table import Table


def fmt_ms(ms) -> str:
    if ms is None:
        return "-"
    if ms >= 60_000:
        return f"{ms / 60_000:.1f} min"
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    return f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms"


def fmt_kb(kb) -> str:
    return "-" if kb is None else fmt_bytes(kb * 1024)


def fmt_bytes(n) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):  # binary units, as /usr/bin/time's kB are KiB
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def fmt_pct(x) -> str:
    return "-" if x is None else f"{100 * x:.0f} %"


def status(link) -> str:
    if link["failed"]:
        return f"[red]failed ({link['exit_status']})[/]"
    if link["fell_back"]:
        return f"[yellow]fell back ({link['first_exit_status']})[/]"
    if link["fault"]:
        return "[yellow]as asked (fault)[/]"
    return "ok"


def what(link) -> str:
    return link["crate_name"] or "?"


def build_title(b) -> str:
    cmd = b["command"] or ""
    if len(cmd) > 70:
        cmd = cmd[:67] + "..."
    when = (b["started_utc"] or "")[:19].replace("T", " ")
    return f"build #{b['id']}  {b['tool'] or ''}  {cmd}  [dim]{when} UTC  {b['cwd'] or ''}[/]"


def linking_line(b) -> str | None:
    share = b["linking"]
    if not share:
        return None
    src = share["source"] if share["source"] == "linkwrap run" else f".ninja_log v{share['version']}"
    guessed = " (link steps guessed by name)" if share.get("links_guessed") else ""
    return (f"Linking: {fmt_ms(share['link_busy_ms'])} with a link running, of {fmt_ms(share['wall_ms'])} "
            f"build wall time = [bold]{fmt_pct(share['link_share'])}[/]  "
            f"[dim](sum of link times {fmt_ms(share['link_sum_ms'])}; from {src}{guessed})[/]")


def render_build(b, console: Console) -> None:
    t = b["totals"]
    table = Table(title=build_title(b), title_justify="left", box=box.SIMPLE_HEAD, show_footer=True,
                  pad_edge=False, collapse_padding=True)
    # Numbers never wrap; the names give way (with an ellipsis) on a narrow terminal,
    # and the kind column goes when there is no room for it.
    wide = console.width >= 100
    fixed = 62 + (13 if wide else 0) + 15
    table.add_column("what", footer=f"{t['links']} links", no_wrap=True, overflow="ellipsis",
                     max_width=max(8, console.width - fixed))
    if wide:
        table.add_column("kind", style="dim", no_wrap=True, overflow="ellipsis", max_width=12)
    table.add_column("linker", no_wrap=True, overflow="ellipsis", max_width=14)
    for name, footer in (("mode", ""), ("wall", fmt_ms(t["wall_ms"])), ("cpu", fmt_ms(t["cpu_ms"])),
                         ("peak RSS", fmt_kb(t["peak_rss_kb"]) if t["links"] else "-"),
                         ("output", fmt_bytes(t["output_bytes"]))):
        table.add_column(name, justify="left" if name == "mode" else "right", footer=footer, no_wrap=True)
    table.add_column("status", no_wrap=True)
    for l in b["links"]:
        cells = [what(l)] + ([l["crate_kind"] or ""] if wide else []) + [
            l["linker_version"] or l["linker"] or "?", l["write_mode"] or "-",
            fmt_ms(l["wall_ms"]), fmt_ms(l["cpu_ms"]), fmt_kb(l["peak_rss_kb"]), fmt_bytes(l["output_bytes"]),
            status(l)]
        table.add_row(*cells)
    console.print(table)
    line = linking_line(b)
    if line:
        console.print(line)
    if b["wall_ms"] is not None and b["exit_status"] is not None:
        console.print(f"Build: {fmt_ms(b['wall_ms'])}, exit status {b['exit_status']}")
    if len(b["by_linker"]) > 1:
        parts = [f"{g['linker']}: {g['links']} × {fmt_ms(g['wall_ms'])}" for g in b["by_linker"]]
        console.print("By linker: " + ";  ".join(parts))
    console.print(f"linkwrap's own time: {fmt_ms(t['overhead_ms'])} over {t['links']} links", style="dim")
    for l in b["failures"]:
        console.print(f"[red]failed[/]: {l['crate_name']} ({l['output_path']}) exit {l['exit_status']}")
    for l in b["fell_back"]:
        why = next((r for r in reversed(l["reasons"]) if "failed" in r), "")
        console.print(f"[yellow]fell back[/]: {l['crate_name']}: {why or 'linked as asked after a failure'}")


def render_many(summary, console: Console) -> None:
    table = Table(title="builds", title_justify="left", box=box.SIMPLE_HEAD, show_footer=True,
                  pad_edge=False, collapse_padding=True)
    t = summary["totals"]
    wide = console.width >= 110  # else the tool column goes and the command gives way
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("when (UTC)", no_wrap=True)
    if wide:
        table.add_column("tool", no_wrap=True, overflow="ellipsis", max_width=10)
    table.add_column("command", no_wrap=True, overflow="ellipsis",
                     max_width=max(8, console.width - (92 if wide else 72)))
    table.add_column("links", justify="right", footer=str(t["links"]), no_wrap=True)
    table.add_column("link wall", justify="right", footer=fmt_ms(t["wall_ms"]), no_wrap=True)
    table.add_column("linking", justify="right", no_wrap=True)
    table.add_column("peak RSS", justify="right", footer=fmt_kb(t["peak_rss_kb"]), no_wrap=True)
    table.add_column("failed/fb", justify="right", footer=f"{t['failures']}/{t['fell_back']}",
                     no_wrap=True)
    for b in summary["builds"]:
        bt = b["totals"]
        share = b["linking"]["link_share"] if b["linking"] else None
        table.add_row(f"{b['id']}", (b["started_utc"] or "")[5:16].replace("T", " "),
                      *([b["tool"] or ""] if wide else []), b["command"] or "", str(bt["links"]),
                      fmt_ms(bt["wall_ms"]), fmt_pct(share), fmt_kb(bt["peak_rss_kb"]),
                      f"{bt['failures']}/{bt['fell_back']}")
    console.print(table)
    if summary["by_linker"]:
        parts = [f"{g['linker']}: {g['links']} × {fmt_ms(g['wall_ms'])}" for g in summary["by_linker"]]
        console.print("By linker: " + ";  ".join(parts))


def render(summary, console: Console | None = None) -> None:
    console = console or Console()
    if not summary["builds"]:
        console.print("No link records yet. Links through linkwrap are recorded in "
                      "`linkwrap log path` (see `linkwrap log status`).")
    elif len(summary["builds"]) == 1:
        render_build(summary["builds"][0], console)
    else:
        render_many(summary, console)
