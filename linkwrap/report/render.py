"""Summaries (linkwrap.report.summary dicts) -> rich tables on a console.

One build: its links slowest first, totals, the linking share, per-linker
totals, failures and fall-backs. Several builds: one line per build, then totals.
"""
from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text


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


def bound_line(who, size) -> str:
    """What a ≤ before a peak RSS means (summary's table, bench's): said under the table; size as the
    table shows sizes."""
    return (f"≤: the linker's peak RSS is at most that; {who} ({size}) started it, and the kernel "
            "counts that size in the linker's figure")


def fmt_peak(d) -> str:
    """A link's (or the totals') peak RSS, "≤" where it is only an upper bound (summary.peak_is_bound)."""
    return ("≤" if d.get("peak_rss_bound") else "") + fmt_kb(d.get("peak_rss_kb"))


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


def try_reason(link):
    """The policy's reason when this link was a try (another linker timed on a real link, to learn
    which links that output fastest); else None."""
    from linkwrap.evidence.learn import EXPLORING
    return next((r for r in link.get("reasons") or () if EXPLORING in r), None)


def status(link) -> str:
    if link["failed"]:
        # Failed as asked too: the fall-back is shown, as the JSON and the count of fall-backs have it.
        after = " [yellow]after fall-back[/]" if link["fell_back"] else ""
        return f"[red]failed ({link['exit_status']})[/]{after}"
    if link["fell_back"]:
        return f"[yellow]fell back ({link['first_exit_status']})[/]"
    if link["fault"]:
        return "[yellow]as asked (config error)[/]" if _config_error(link) else "[yellow]as asked (fault)[/]"
    return "ok, a try" if try_reason(link) else "ok"


# Shown after the name, so that `app` the build script, `app` the binary and
# `app` the test can be told apart. A binary or a C executable is just its name.
KIND_LABELS = {"build-script": "build script", "proc-macro": "proc-macro", "test": "test",
               "example": "example", "cdylib": "cdylib", "dylib": "dylib", "shared": "shared"}


def what(link) -> str:
    name = link["crate_name"] or "?"
    label = KIND_LABELS.get(link["crate_kind"] or "")
    if link.get("compiles"):  # its wall time is the driver's compile too: never read as the linker's
        label = f"{label}, compile+link" if label else "compile+link"
    return f"{name} ({label})" if label else name


def wide_console(**kw):
    """A rich Console; into a file or pipe it is 80 columns wide, as on a terminal (COLUMNS
    wins), and its lines carry no padding: rich pads table cells to the table's width."""
    import os
    import sys
    stream = sys.stderr if kw.get("stderr") else sys.stdout
    if not stream.isatty():
        if "COLUMNS" not in os.environ:
            kw.setdefault("width", 80)
        kw.setdefault("file", Unpadded(stream))
    return Console(**kw)


class Unpadded:
    """A text stream that drops the spaces at the end of each line written to it."""

    def __init__(self, stream):
        self.stream, self.pending = stream, ""

    def write(self, text) -> int:
        lines = (self.pending + text).split("\n")
        self.pending = lines.pop()
        if lines:
            self.stream.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        # rich ends every print with a newline: what is pending is a line still being written.
        self.stream.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.stream.fileno()


def short_command(command) -> str:
    """`/root/.rustup/toolchains/…/bin/cargo build` reads as `cargo build`: the path is in --json."""
    if not command:
        return ""
    first, _, rest = command.partition(" ")
    return (first.rsplit("/", 1)[-1] + (" " + rest if rest else "")) if first else command


def plural(n, word) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def build_name(b, across=False) -> str:
    """The build as the summary names it (store.queries.named: 'build 3' in its project); the
    "name" name_builds() gave it for its scope when it has one."""
    from linkwrap.store.queries import named
    return b.get("name") or named(b.get("project_build"), b["id"], b.get("project_dir"), across)


def build_number(b, across=False) -> str:
    """The build's number as a listing's "#" column has it: 3 in a project, #45 across projects."""
    n = b.get("project_build")
    return str(n) if n and not across else f"#{b['id']}"


def name_builds(summary) -> dict:
    """Each build's "name" and "number" for the summary's scope: per project when it shows one
    project's builds, across every project's records otherwise (summary["scope"]); -> summary."""
    across = not (summary.get("scope") or {}).get("project_dir")
    for b in summary.get("builds") or ():
        b.setdefault("name", build_name(b, across))
        b.setdefault("number", build_number(b, across))
    return summary


def build_title(b) -> str:
    """The build in one line of plain text: number, tool, links, command."""
    parts = [build_name(b), b["tool"] or "?", plural(b["totals"]["links"], "link")]
    if b["command"]:
        parts.append(short_command(b["command"]))
    return "  ".join(parts)


def build_subtitle(b) -> str:
    when = (b["started_utc"] or "")[:19].replace("T", " ")
    return "  ".join(p for p in (f"{when} UTC" if when else "", b["cwd"] or "") if p)


def print_line(console: Console, text, style=None) -> None:
    """One line that never wraps: what does not fit ends in an ellipsis."""
    console.print(Text(text, style=style or ""), no_wrap=True, overflow="ellipsis", crop=True)


def print_hanging(console: Console, text: str, style=None, markup=False) -> None:
    """One sentence whose wrapped lines stay under its text, not at column 0: under what follows its
    label ("Linking: ", "linkwrap's own time: ") or its indent."""
    from rich.table import Table
    body = text.lstrip(" ")
    lead = text[:len(text) - len(body)]
    colon = body.find(": ")
    if 0 < colon < 24 and "[" not in body[:colon]:
        lead, body = lead + body[:colon + 2], body[colon + 2:]
    text_of = (lambda t: Text.from_markup(t, style=style or "")) if markup else (lambda t: Text(t, style=style or ""))
    if not lead:  # an empty first column would still take a cell
        console.print(text_of(body))
        return
    grid = Table.grid()
    grid.add_column(no_wrap=True)
    grid.add_column()
    grid.add_row(text_of(lead), text_of(body))
    console.print(grid)


def fit(console: Console, make_table, flexible: str, optional=(), least: int = 24):
    """The table that fits the console: make_table(dropped) -> (Table, {column: natural width}).

    The flexible column (the names) has priority: the optional columns go, in
    order, while it would get fewer than `least` cells (or its natural width,
    when that is less); then it gets all the room that is left, so rich folds or
    ellipsizes it only when the terminal is narrower than the whole table.
    """
    dropped = []
    for step in range(len(optional) + 1):
        table, natural = make_table(tuple(dropped))
        full = Measurement.get(console, console.options.update_width(100_000), table).maximum
        excess = full - console.width
        want = natural[flexible]
        if excess <= 0:
            return _with_dropped(table, dropped)
        if want - excess >= min(want, least) or step == len(optional):
            col = next(c for c in table.columns if c.header == flexible)
            col.max_width = max(8, want - excess)
            return _with_dropped(table, dropped)
        dropped.append(optional[step])
    return table  # not reached


def _with_dropped(table, dropped):
    """The table, and under it one dim line naming the columns the width left out: a column that is
    there in a wide terminal and gone in a narrow one, unexplained, reads as a value that went missing."""
    if not dropped:
        return table
    from rich.console import Group
    names = ", ".join(dropped)
    # One line, cut rather than folded: a folded note would start a line at column 0, under nothing.
    return Group(table, Text(f"({names}: left out at this width; --json shows all)",
                             style="dim", no_wrap=True, overflow="ellipsis"))


def linking_line(b) -> str | None:
    share = b["linking"]
    if not share:
        return None
    if share.get("compile_links") and len(b["links"]) == share["compile_links"]:
        return None  # every link compiled too: compile_line says it, there is no linking time apart
    src = share["source"] if share["source"] == "linkwrap run" else f".ninja_log v{share['version']}"
    guessed = " (link steps guessed by name)" if share.get("links_guessed") else ""
    return (f"Linking: {fmt_ms(share['link_busy_ms'])} with a link running, of {fmt_ms(share['wall_ms'])} "
            f"build wall time = [bold]{fmt_pct(share['link_share'])}[/]  "
            + (f"[dim](the links' own times add up to {fmt_ms(share['link_sum_ms'])}; from {src})[/]"
               if share["source"] == "linkwrap run" else
               f"[dim](ninja timed the link steps, driver and linkwrap included, at {fmt_ms(share['link_sum_ms'])} "
               f"in all; from {src}{guessed})[/]"))


def compile_line(b) -> str | None:
    """Links whose driver compiled sources too, said apart from the linking share."""
    n = (b["linking"] or {}).get("compile_links") or sum(1 for l in b["links"] if l.get("compiles"))
    if not n:
        return None
    ms = sum(l["wall_ms"] or 0.0 for l in b["links"] if l.get("compiles"))
    share = f", {fmt_pct(ms / b['wall_ms'])} of the build" if b.get("wall_ms") else ""
    return (f"Compile+link: {plural(n, 'link')} whose driver compiled sources too, {fmt_ms(ms)}{share}  "
            "[dim](the compile's time and the link's, not in Linking)[/]")


def saved_lines(console, saved, history=None) -> None:
    """What a user installed linkwrap for, first: this time against the caller's default's."""
    if saved and saved["links"]:
        print_indented(console, saved_line(saved), style="bold")
    if history and history["links"]:
        print_indented(console, history_line(history))


def print_indented(console: Console, text: str, style=None) -> None:
    """A sentence whose wrapped lines are indented two cells, so it reads as one item."""
    import textwrap
    for line in textwrap.wrap(text, max(20, console.width), subsequent_indent="  ", break_on_hyphens=False):
        print_line(console, line, style)


def render_build(b, console: Console, history=None) -> None:
    t = b["totals"]
    if not b["links"]:
        # One line, not an empty table; what it is about comes after, where an ellipsis may cut it.
        ran = (f" ({fmt_ms(b['wall_ms'])}, exit status {b['exit_status']})"
               if b["wall_ms"] is not None and b["exit_status"] is not None else "")
        print_line(console, f"no links recorded for this {build_name(b)}{ran}: {b['command'] or b['tool'] or '?'}")
        return
    print_line(console, build_title(b), "bold")
    sub = build_subtitle(b)
    if sub:
        print_line(console, sub, "dim")
    saved_lines(console, b.get("saved"), history)
    rows = [{"what": what(l), "linker": l["linker_version"] or l["linker"] or "?", "mode": l["write_mode"] or "-",
             "wall": fmt_ms(l["wall_ms"]), "cpu": fmt_ms(l["cpu_ms"]), "peak RSS": fmt_peak(l),
             "output": fmt_bytes(l["output_bytes"]), "status": status(l)} for l in b["links"]]
    footers = {"what": plural(t["links"], "link"), "linker": "", "mode": "", "wall": fmt_ms(t["wall_ms"]),
               "cpu": fmt_ms(t["cpu_ms"]), "peak RSS": fmt_peak(t),
               "output": fmt_bytes(t["output_bytes"]), "status": ""}
    columns = ("what", "linker", "mode", "wall", "cpu", "peak RSS", "output", "status")

    def make(dropped):
        table = Table(box=box.SIMPLE_HEAD, show_footer=True, pad_edge=False, collapse_padding=True)
        shown = [c for c in columns if c not in dropped]
        for c in shown:
            if c == "what":
                # Names wrap (folding a long one) rather than vanish; everything else stays on one line.
                table.add_column(c, footer=footers[c], overflow="fold")
            else:
                table.add_column(c, footer=footers[c], no_wrap=True, overflow="ellipsis",
                                 justify="right" if c in ("wall", "cpu", "peak RSS", "output") else "left")
        for r in rows:
            table.add_row(*[Text(r[c]) if c == "what" else r[c] for c in shown])
        natural = {"what": max(cell_len(x) for x in [c for c in (r["what"] for r in rows)] + [footers["what"]])}
        return table, natural

    console.print(fit(console, make, "what", optional=("mode", "cpu", "output")))
    bound = [l["spawner_rss_kb"] for l in b["links"] if l.get("peak_rss_bound")]
    if bound:  # said where the sign is: a newcomer reads the table, not the design notes
        print_hanging(console, bound_line("linkwrap's own process", fmt_kb(max(bound))), style="dim")
    for line in (linking_line(b), compile_line(b)):
        if line:
            print_hanging(console, line, markup=True)
    tries = [(l, try_reason(l)) for l in b["links"] if not l["failed"] and try_reason(l)]
    if tries:  # a try costs the user when the tried linker is slower: said, with why
        print_hanging(console, f"A try: {plural(len(tries), 'link')} ran a linker that linkwrap is timing on that "
                               "output, to learn which links it fastest (`linkwrap explain OUTPUT`): "
                      + "; ".join(f"{what(l)}: {why}" for l, why in tries))
    if b["wall_ms"] is not None and b["exit_status"] is not None:
        console.print(f"Build: {fmt_ms(b['wall_ms'])}, exit status {b['exit_status']}")
    if len(b["by_linker"]) > 1:
        print_hanging(console, by_linker_line(b["by_linker"]))
    line = memory_line(t)
    if line:
        console.print(line)
    for text in own_time_lines(t):
        print_hanging(console, text, style="dim")
    forced_lines(b, console)
    for l in b["failures"]:
        console.print(Text.assemble(("failed", "red"), f": {what(l)} ({l['output_path'] or '-'}) "
                                                       f"exit {l['exit_status']}"))
        if _config_error(l):
            console.print(Padding(Text(l["fault"], style="dim"), (0, 0, 0, 2), expand=False))
    if b["fell_back"]:
        console.print(Text(f"linked as asked instead ({len(b['fell_back'])}):", style="yellow"))
        for l in b["fell_back"]:
            what_failed, why = fall_back_reason(l)
            console.print(Padding(Text(f"{what(l)}: {what_failed}"), (0, 0, 0, 2), expand=False))
            if why:
                console.print(Padding(Text(why, style="dim"), (0, 0, 0, 4), expand=False))


def by_linker_line(groups) -> str:
    """Each linker's links and their summed wall time ("9 × 528 ms" read as a time per link)."""
    return "By linker: " + ";  ".join(f"{g['linker']}: {plural(g['links'], 'link')}, {fmt_ms(g['wall_ms'])} in all"
                                      for g in groups)


def memory_line(t) -> str | None:
    """'3 links waited 4.1 s for memory', when any did."""
    n = t.get("memory_waits")
    if not n:
        return None
    return f"{plural(n, 'link')} waited {fmt_ms(t['memory_wait_ms'])} for memory"


def fall_back_reason(link):
    """-> (which linker failed, why), as far as the record says."""
    if link["fell_back"]:
        who = link.get("first_linker") or "the linker linkwrap chose"
        return (f"{who} failed (exit {link['first_exit_status']})",
                link.get("first_error") or "(it printed nothing on stderr)")
    if _config_error(link):
        return "a configuration error (fix it, and linkwrap chooses again)", link["fault"]
    return "a fault of linkwrap's own", link["fault"]


def _config_error(link) -> bool:
    return (link["fault"] or "").startswith("configuration error")


def own_time_lines(t) -> list:
    """linkwrap's own time, with what each part measures (overhead_ms alone misses start-up)."""
    n = t["links"]
    inside = t["overhead_ms"]
    if not t.get("startup_links"):
        return ["linkwrap's own time (choosing and recording; starting Python not measured):",
                f"  {fmt_ms(inside)} over {plural(n, 'link')}, {fmt_ms(inside / n if n else 0)} per link"]
    known = t["startup_links"]
    start = t["startup_ms"] * n / known  # the links without a start-up figure, at the average of the others
    measured = "" if known == n else f" ({known} of {n} measured)"
    cold = _one_time_lines(t, start + inside)
    return [f"linkwrap's own time: {fmt_ms(start + inside)} over {plural(n, 'link')}, "
            f"{fmt_ms((start + inside) / n)} per link" + (f", {fmt_ms(t['script_own_ms'])} of it one-time" if cold else ""),
            f"  starting Python and loading linkwrap: {fmt_ms(start)}{measured} (timed in 10 ms steps: "
            "rough for one link, right in total)",
            f"  choosing a linker and recording the link: {fmt_ms(inside)}"] + cold


def _one_time_lines(t, own_ms) -> list:
    """The share of the links the warm server did not take: a newcomer's first build is mostly that."""
    cold = t.get("script_links") or 0
    if not cold or cold == t["links"]:
        return []  # all through the server, or none (no native client): one figure says it
    warm = t["links"] - cold
    return [f"  one-time: {fmt_ms(t['script_own_ms'])} on {plural(cold, 'link')} before linkwrap's background "
            "server was running (starting Python and the server; on a new install also finding the linkers "
            "and asking the compiler how it links)",
            f"  once the server was running: {fmt_ms(max(0.0, own_ms - t['script_own_ms']) / warm)} per link"]


# --- what linkwrap saved (report/saved.py's figures) in words ---------------------------

def _default_who(s) -> str:
    names = s["defaults"]
    if not names:
        return "the caller's own command"
    if len(names) > 1:
        return f"the defaults ({', '.join(names)})"
    return "rustc's default (rust-lld)" if names[0].startswith("rust-lld") else f"the default linker ({names[0]})"


def _saved_result(s) -> str:
    gain, tilde = s["saved_ms"], "" if s["exact"] else "~"
    if abs(gain) < 0.05:
        return "no time saved"
    return f"saved {tilde}{fmt_ms(gain)}" if gain > 0 else f"{tilde}{fmt_ms(-gain)} slower"


def saved_cell(s) -> str:
    """A build's saving in the builds table: '~800 ms', '-' where no link of it was measured."""
    if not s or not s["measured_links"]:
        return "-"
    gain, tilde = s["saved_ms"], "" if s["exact"] else "~"
    return f"{tilde}{fmt_ms(gain)}" if gain >= 0 else f"{tilde}-{fmt_ms(-gain)}"


def saved_line(s) -> str:
    """A build's leading line: 'Linked in 1.30 s; rustc's default (rust-lld) would take ~2.10 s
    (measured): saved ~800 ms'. No saving is said for a link whose default was not measured."""
    lead = f"Linked in {fmt_ms(s['wall_ms'])}"
    n, m = s["links"], s["measured_links"]
    if not m:
        return (f"{lead}; what the default linker would take on {'this link' if n == 1 else 'these links'} "
                "is not measured yet (linkwrap measures it while the machine is idle: `linkwrap status`)")
    tilde, how = ("", "") if s["exact"] else ("~", " (measured)")
    if m == n:
        return f"{lead}; {_default_who(s)} would take {tilde}{fmt_ms(s['default_ms'])}{how}: {_saved_result(s)}"
    return (f"{lead}; on the {m} of {plural(n, 'link')} measured, {fmt_ms(s['measured_ms'])} against "
            f"{tilde}{fmt_ms(s['default_ms'])} with {_default_who(s)}{how}: {_saved_result(s)}; "
            f"the other {n - m} not measured yet")


def history_line(h) -> str:
    """'This project, 12 builds (340 links): saved ~14.2 s against rustc's default (rust-lld) (measured)
    on the 120 links measured; the other 220 not measured yet'."""
    whose = "This project" if h.get("project_dir") else "Every project"
    lead = f"{whose}, {plural(h['builds'], 'build')} ({plural(h['links'], 'link')})"
    m, n = h["measured_links"], h["links"]
    if not m:
        return f"{lead}: what the default linker would have taken is not measured yet"
    how = "" if h["exact"] else " (measured)"
    on = "on every link" if m == n else f"on the {plural(m, 'link')} measured; the other {n - m} not measured yet"
    return f"{lead}: {_saved_result(h)} against {_default_who(h)}{how} {on}"


def render_many(summary, console: Console) -> None:
    t = summary["totals"]
    builds = summary["builds"]
    # Two-line header: the column holds "1/2", its name need not widen it.
    columns = ("#", "when (UTC)", "tool", "command", "links", "link wall", "saved", "linking", "peak RSS",
               "failed/\nfell back")
    footers = {"links": str(t["links"]), "link wall": fmt_ms(t["wall_ms"]), "peak RSS": fmt_peak(t),
               "saved": saved_cell(summary.get("saved")), "failed/\nfell back": f"{t['failures']}/{t['fell_back']}"}
    rows = []
    for b in builds:
        bt = b["totals"]
        share = b["linking"]["link_share"] if b["linking"] else None
        # What --build takes in the same scope: the project's count, or #id across every project's.
        rows.append({"#": b.get("number") or build_number(b), "when (UTC)": (b["started_utc"] or "")[5:16].replace("T", " "),
                     "tool": b["tool"] or "", "command": short_command(b["command"]), "links": str(bt["links"]),
                     "link wall": fmt_ms(bt["wall_ms"]), "saved": saved_cell(b.get("saved")),
                     "linking": fmt_pct(share),
                     "peak RSS": fmt_peak(bt),
                     "failed/\nfell back": f"{bt['failures']}/{bt['fell_back']}"})

    def make(dropped):
        # The "Builds of …" line above names them; a lone "builds" under it would say it twice.
        table = Table(title=None if summary.get("scope") else "builds", title_justify="left",
                      box=box.SIMPLE_HEAD, show_footer=True,
                      pad_edge=False, collapse_padding=True)
        shown = [c for c in columns if c not in dropped]
        for c in shown:
            table.add_column(c, footer=footers.get(c, ""), no_wrap=True, overflow="ellipsis",
                             justify="left" if c in ("when (UTC)", "tool", "command") else "right")
        for r in rows:
            table.add_row(*[Text(r[c]) if c in ("tool", "command") else r[c] for c in shown])
        return table, {"command": max([cell_len(r["command"]) for r in rows] + [len("command")])}

    if summary.get("scope"):
        print_line(console, f"Builds of {summary['scope']['shows']}", "dim")
    saved_lines(console, summary.get("saved"), summary.get("history"))
    console.print(fit(console, make, "command", optional=("tool", "peak RSS"), least=20))
    if summary["by_linker"]:
        print_hanging(console, by_linker_line(summary["by_linker"]))
    line = memory_line(t)
    if line:
        console.print(line)
    for text in own_time_lines(t):
        print_hanging(console, text, style="dim")
    forced_lines(summary, console)


def dropped_line(summary, console) -> None:
    """Records lost before they reached the store (damaged or malformed in the spool): said, as
    nothing else would show they are missing."""
    n = summary.get("dropped_records")
    if n:
        print_hanging(console, f"{plural(n, 'link record')} {'was' if n == 1 else 'were'} unreadable and dropped "
                               "(see `linkwrap log status`)", style="yellow")


def forced_lines(summary, console) -> None:
    """A forced linker that is not installed: the links chose as usual, and a successful link says
    nothing, so the summary does."""
    from linkwrap.report.summary import forced_missing_text
    for item in summary.get("forced_missing") or ():
        print_hanging(console, forced_missing_text(item), style="yellow")


def render(summary, console: Console | None = None) -> None:
    from linkwrap.errors import printable_data
    summary = name_builds(printable_data(summary))  # names and commands come from anyone: no terminal escapes
    console = console or wide_console()
    scope = summary.get("scope") or {}
    if not summary["builds"]:
        if scope.get("project_dir"):
            # Not wrapped: a path is never broken over lines.
            console.print(f"No builds recorded for {scope['shows']} (`--all-projects` shows every project's).",
                          soft_wrap=True, highlight=False)
        else:
            console.print("No link records yet. Links through linkwrap are recorded in "
                          "`linkwrap log path` (see `linkwrap log status`).")
    elif len(summary["builds"]) == 1:
        b = summary["builds"][0]
        if scope.get("shows", "").startswith("every project (") and b.get("project_dir"):
            # The last build of any project: which one it is, before it can pass for this directory's.
            console.print(f"The current directory is in no recorded project: the last build of every project's, "
                          f"in {b['project_dir']} (`--all-projects` lists them)", soft_wrap=True, highlight=False,
                          style="dim")
        render_build(b, console, summary.get("history"))
    else:
        render_many(summary, console)
    dropped_line(summary, console)
