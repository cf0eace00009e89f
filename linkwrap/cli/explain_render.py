"""`linkwrap explain` as tables: the report explain.py gathered (the dict --json prints), rendered with rich.

Owns: how each part of the report reads on a terminal (the request, the probe's facts, the
decision and its reasons, how the link would start, memory, the recorded link beside it), cut to the
terminal's width. It reads the plain dict and decides nothing about the link (the one look at the
filesystem: whether the output's directory exists yet, to say whose facts those are).
May import: rich, linkwrap.report.render's table helpers and the few wording helpers of linkwrap.choice
(policy.size_text) and linkwrap.report.summary (peak_is_bound); never explain.py, which imports it.
"""
import os


def _show(value) -> str:
    if value is None:
        return "[dim]unknown[/dim]"
    if value is True:
        return "yes"
    if value is False:
        return "no"
    if isinstance(value, float):
        return f"{int(value * 100)}%"  # rounded down, as the policy's reasons are
    return str(value)


def render(report) -> None:
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text
    from linkwrap.report.render import cell_len, fit, wide_console
    console = wide_console()
    req, p, d = report["request"], report["probe"], report["decision"]
    # soft_wrap: a long path is left whole for the terminal to wrap (and to copy), not cut mid-name.
    console.print(f"[bold]{escape(req['output'] or '(no output)')}[/bold]  kind {req['kind']}"
                  + (f", profile {report['config']['profile']}" if report["config"]["profile"] else ""),
                  soft_wrap=True)
    if report.get("note"):
        console.print(f"[yellow]{escape(report['note'])}[/]")
    where = os.path.dirname(req["output"]) if req["output"] else None
    if where and not os.path.isdir(where):
        # The probe walks up to the nearest directory that exists: say whose facts these are.
        nearest = where
        while nearest and not os.path.isdir(nearest):
            nearest = os.path.dirname(nearest)
        console.print(f"[yellow]{escape(where)} does not exist (yet): the filesystem facts are those of "
                      f"{escape(nearest or '/')}[/]")

    facts = Table(title="Facts", title_justify="left", show_header=False, box=None, padding=(0, 2))
    facts.add_column(style="cyan")
    facts.add_column()
    from linkwrap.choice.policy import size_text
    out = p["output"]
    regular = out.get("is_regular")
    not_opened = "not checked (not a regular file)" if regular is False else None
    cached = (f"not measured ({out['cache_not_measured']})" if out.get("cache_not_measured")
              else _show(out["cached_fraction"]))
    size = out.get("size")
    inputs = req.get("inputs") or []
    if not inputs:
        input_text = "none given (no link arguments after --)"
    else:
        # probe.input_bytes skips inputs it cannot stat: say how many that was, and which of them
        # rustc removes itself once a link returns (not a problem of this link)
        gone = req.get("inputs_gone") or {}
        missing, temporaries = len(gone.get("not_found") or ()), gone.get("rustc_temporaries") or 0
        input_text = (f"{_show(p.get('input_bytes'))} ({len(inputs)} input file{'s' if len(inputs) != 1 else ''}"
                      + (f", {temporaries} deleted since the link (rustc's temporar"
                         f"{'ies' if temporaries != 1 else 'y'})" if temporaries else "")
                      + (f", {missing} not found" if missing else "") + ")")
    rows = [
        ("filesystem", _show(p["fs"]) + (f" ({escape(p['fs_options'])})" if p.get("fs_options") else "")),
        ("local filesystem", _show(p.get("fs_local"))),
        ("kernel", _show(p["kernel"])),
        ("output exists", _show(out["exists"])),
    ]
    if out["exists"]:
        rows += [
            ("  regular file", _show(out.get("is_regular"))),
            ("  size", _show(size) if size is None else f"{size} bytes ({size_text(size)})"),
            ("  links (st_nlink)", _show(out["nlink"])),
            ("  held by others", not_opened or _show(out["held_by_others"])
             + (f": {', '.join(report['held_by'])}" if report.get("held_by") else "")),
            ("  in page cache", cached),
        ]
    rows += [
        ("input bytes", input_text),
        # policy's small links (docs/policy.md 1.3): unknown without the link's command line
        ("small link", _show(p.get("small_inputs"))),
        ("CPUs usable", _show(p["cpus"])),
        ("memory available", _show(p["mem_available_mb"]) + (" MiB" if p["mem_available_mb"] is not None else "")),
        # None is "no limit" or "could not read the cgroup": the probe cannot tell them apart
        ("memory limit (cgroup)", "none found" if p.get("mem_limit_mb") is None else f"{p['mem_limit_mb']} MiB"),
        ("huge pages", _show(p.get("thp"))),
        ("jobserver", _show(p.get("jobserver"))),
    ]
    m = report.get("memory") or {}
    if m.get("predicted_kb") is not None:
        # A charge (what the link adds to its memory group), not a peak RSS: mapped inputs are in
        # the page cache already, so the two differ by design.
        rows.append(("memory predicted", f"{m['predicted_kb'] >> 10} MiB of new memory the link needs "
                                         f"(not its peak RSS: input files already in the page cache are not new; "
                                         f"{m['source']}: {m['detail']})"))
    rows.append(("memory admission", ("on" if m.get("admission") else "off")
                 + (f", room now {m['room_kb'] >> 10} MiB with {m['running_links']} link(s) running"
                    if m.get("admission") and m.get("room_kb") is not None else "")))
    for k, v in rows:
        facts.add_row(k, escape(v) if k == "memory predicted" else v)
    console.print(facts)

    console.print("[bold]Decision[/bold]")
    # Rows as the Facts table lays them out; the linker's path is left whole (soft wrap: the terminal
    # wraps it and it copies as one), never cut to `…/lib/…`.
    label = "  {:<14}".format
    linker = (f"{d['linker']} {d['version'] or '?'}  [dim]{escape(d['path'])}[/dim]" if d["linker"]
              else "as the caller asked")
    console.print(f"[cyan]{label('linker')}[/cyan]{linker}", soft_wrap=True, highlight=False)
    flags = [f"-Wl,{f}" for f in d["flags"]] + d["driver_flags"]
    start, entry = report["start"], report.get("entry")
    rows = [("flags", " ".join(flags) or "none"), ("write mode", d["write_mode"]),
            ("started", f"directly ({start['why']})" if start["how"] == "direct"
             else f"through {req['driver']} ({start['why']})")]
    if entry:
        rows.append(("entry point", f"{entry['point']} ({entry['why']})"))
    if d["linker"]:   # (a link as asked is not linkwrap's to patch: no reason says anything of it)
        base = d.get("incremental_base") or {}
        if d.get("incremental") and base.get("stand_by"):
            said = f"yes: linkwrap's own linker patches; what it cannot patch, {base['stand_by']} links"
        elif d.get("incremental"):
            said = "yes: linkwrap's own linker patches the last output (see the reasons)"
        else:
            said = "no (see the reasons)" + ("; a base to patch is queued for the warm server"
                                              if base.get("wanted") and not base.get("ready") else "")
        rows.insert(2, ("incremental", said))
    for name, value in rows:
        _hanging(console, Text(label(name), style="cyan"), value, markup=False)

    measured = d.get("measured")
    if measured:
        title = f"Measured here ({measured['scope']})" if measured["scope"] else "Measured here"
        vs = {r["ratio_vs"] for r in measured["rows"] if r["ratio"] is not None}
        # One default for every row (the usual case) goes into the header, as bench's table has it.
        one_vs = vs.pop() if len(vs) == 1 else None
        rows = []
        for r in measured["rows"]:
            ratio = "" if r["ratio"] is None else (
                f"{r['ratio']:.2f} ({r['ratio_ci_low']:.2f}-{r['ratio_ci_high']:.2f})"
                + ("" if one_vs else f" {r['ratio_vs']}"))
            rows.append({"linker": r["label"], "variant": r["variant"],
                         "median": "failed" if r["failed"] else f"{r['median_ms']:.1f} ms",
                         "95 % CI": "" if r["failed"] else f"{r['ci_low_ms']:.1f}-{r['ci_high_ms']:.1f}",
                         "paired": ratio, "runs": str(r["runs"]), "date": r["date"] or ""})
        headers = {"linker": "linker", "variant": "variant", "median": "median", "95 % CI": "95 % CI",
                   "paired": f"× {one_vs}\n(paired)" if one_vs else "× default\n(paired)",
                   "runs": "runs", "date": "date"}

        def make(dropped):
            # bench's table: figures never cut, names never broken; what does not fit at 80 columns
            # goes whole (the date, then the runs).
            t = Table(box=None, padding=(0, 1), pad_edge=True)
            shown = [c for c in headers if c not in dropped]
            for c in shown:
                t.add_column(headers[c], no_wrap=True,
                             justify="right" if c in ("median", "95 % CI", "paired", "runs") else "left")
            for row in rows:
                t.add_row(*[Text(row[c]) for c in shown])
            return t, {"linker": max(cell_len(r["linker"]) for r in rows + [{"linker": "linker"}])}

        if rows:
            console.print(f"[bold]{escape(title)}[/bold]", soft_wrap=True)
            console.print(fit(console, make, "linker", optional=("date", "runs"), least=40))
        console.print("  the choice " + ("follows these measurements" if measured["used"] else
                                         "does not follow a measurement (see the reasons)"))
        for why in measured["ignored"]:
            _hanging(console, "  ignored: ", why, markup=False)

    learned = d.get("learned")
    if learned and (learned["links"] or learned["candidates"] or learned.get("incremental")):
        timed = ", ".join(f"{n} {c['median_ms']:.0f} ms ({c['timed']} timed)" for n, c in learned["candidates"].items())
        inc = learned.get("incremental")
        if inc:   # linkwrap's own linker's incremental links of this output (choice/incremental.py)
            timed += (", " if timed else "") + f"incremental {inc['median_ms']:.0f} ms ({inc['timed']} timed)"
        links = learned["links"]
        nothing = ("no times: the driver compiles sources in this link too, so its time is not the linker's"
                   if learned.get("compiles") else "nothing timed yet")
        _hanging(console, "", f"[bold]Learnt from this output's relinks[/bold]: {links} link{'s' if links != 1 else ''}, "
                 f"{learned['explored']} of them tr{'ies' if learned['explored'] != 1 else 'y'}; "
                 f"{escape(timed) or nothing}")
        if learned["candidates"] or learned.get("incremental"):
            # Not the wall times `summary` shows: a link timed on a saturated machine is scaled down.
            _hanging(console, "  ", "times adjusted for machine load: wall time x CPUs / 1-minute load average "
                     "where the load was above the CPUs (summary shows wall times)")
    if d.get("failed"):
        # Shown whether or not learning is on: the failure memory applies to every choice but a force.
        _hanging(console, "", f"[bold]Failed on this output before[/bold]: {escape(', '.join(d['failed']))} "
                 "(the link as asked passed; not chosen again here)")

    console.print("[bold]Reasons[/bold]")
    for i, reason in enumerate(d["reasons"], 1):
        _hanging(console, f"  {i}. ", reason, markup=False)
    if report.get("recorded"):
        render_recorded(console, report["recorded"], d)


def _hanging(console, lead, text, markup=True) -> None:
    """text after lead, its wrapped lines indented under the text's start, not at column 0."""
    from rich.table import Table
    from rich.text import Text
    body = Text.from_markup(text) if markup else Text(text)
    if not lead:  # an empty first column would still take a cell
        console.print(body)
        return
    grid = Table.grid()
    grid.add_column(no_wrap=True)
    grid.add_column()
    grid.add_row(lead, body)
    console.print(grid)


def render_recorded(console, rec, now) -> None:
    """The recorded link beside the decision above: what it ran, and what differs now."""
    from rich.text import Text
    when = (rec["started_utc"] or "")[:19].replace("T", " ")
    flags = " ".join(rec["flags"]) or "none"
    console.print(Text(f"Recorded link ({when} UTC, {rec.get('build_name') or '#' + str(rec['build'])})", style="bold"))
    _hanging(console, "  ", f"{rec['version'] or rec['linker']}, {rec['write_mode'] or '-'}, flags {flags}, "
             f"exit {rec['exit_status']}" + (", fell back" if rec["fell_back"] else "")
             + (f", {rec['wall_ms']:.0f} ms compile+link (the driver compiled sources too)"
                if rec.get("compiles") and rec.get("wall_ms") is not None else ""), markup=False)
    if rec["fell_back"]:
        # What failed first and why, as summary says it: "linked as asked" alone hides the cause.
        who = rec.get("first_linker") or "the linker linkwrap chose"
        _hanging(console, "  first: ", f"{who} failed (exit {rec.get('first_exit_status')}): "
                 f"{rec.get('first_error') or '(it printed nothing on stderr)'}; then linked as asked",
                 markup=False)
    if rec.get("peak_rss_kb"):
        charge = (f"; charge {rec['charge_kb'] >> 10} MiB ({rec['charge_how']}), what \"memory predicted\" "
                  "above predicts" if rec.get("charge_kb") is not None else "")
        from linkwrap.report.summary import peak_is_bound
        bound = (f" at most (linkwrap's own peak, {rec['spawner_rss_kb'] >> 10} MiB, is folded into a linker's "
                 "at its start)") if peak_is_bound(rec) else ""
        _hanging(console, "  ", f"peak RSS {rec['peak_rss_kb'] >> 10} MiB{bound}{charge}", markup=False)
    changed = []
    if (rec["linker"] or None) != (now["linker"] or "as asked"):
        if not (rec["linker"] == "as asked" and now["linker"] is None):
            changed.append(f"linker {rec['linker']} -> {now['linker'] or 'as asked'}")
    if rec["write_mode"] != now["write_mode"]:
        changed.append(f"write mode {rec['write_mode']} -> {now['write_mode']}")
    if rec["flags"] != list(now["flags"]) + list(now["driver_flags"]):
        changed.append("flags differ")
    console.print(Text("  now: " + ("; ".join(changed) if changed else "the same decision"),
                       style="yellow" if changed else "green"))
