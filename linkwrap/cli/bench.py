"""`linkwrap bench [OUTPUT...]`: replay saved links on every installed linker; the choice then follows.

Input: outputs whose links were saved (`linkwrap run --save -- cargo build`, LINKWRAP_SAVE=1), or
a saved link's manifest path; by default the current project's slowest saved link.
Output: a table like hyperfine's per link (median, 95 % CI, min-max, peak RSS, ratio to the fastest
and to the caller's own default: the median of the per-round ratios, paired, with its 95 % CI),
then hyperfine's "X ran 1.18 ± 0.03 times faster than Y" against that default; or with --json one
object per link:
  {"output", "rounds", "budget_s", "load_avg", "fs", "default",
   "load": {"others_cpus", "limit_cpus", "usable_cpus", "busy"}, "rows": [{"linker", "variant",
   "median_ms", "ci_low_ms", "ci_high_ms", "min_ms", "max_ms", "peak_rss_kb", "runs", "failed",
   "ratio_vs", "ratio", "ratio_ci_low", "ratio_ci_high", "times_ms"}]}
  (ratio*: this time / ratio_vs's in the same round, median and 95 % CI, null without a default
   timed in at least 3 of the same rounds; times_ms: the timed runs by round, null for none;
   load: the CPUs the rest of the machine kept busy during the rounds, on average, and whether that
   reached the background load limit, [bench] background_load x usable CPUs: "busy", the result
   counts and the warm server measures it again when the machine is idle; bench/load.py)
The results go to the store (table bench_results) and to the measurement cache that every link
reads (linkwrap/evidence/measured.py), so the next link of these outputs uses the fastest.
A saved link whose inputs are gone or changed is a one-line error.
"""
import json
import os
import sys
import time


def add_arguments(parser) -> None:
    parser.add_argument("outputs", nargs="*", metavar="OUTPUT",
                        help="outputs whose links were saved (default: this project's slowest saved link)")
    parser.add_argument("--budget", type=float, default=60.0, metavar="SECONDS",
                        help="time budget per link (default 60; at least 3 rounds are run whatever it says): "
                             "rounds stop earlier when every median's 95 %% confidence interval is within +-3 %%")
    parser.add_argument("--linker", action="append", metavar="NAME",
                        help="replay only with this linker (repeatable; default every installed one)")
    parser.add_argument("--json", action="store_true", help="print JSON (a stable interface)")
    parser.add_argument("--wait", action="store_true",
                        help="replay nothing: wait until the warm server's background measurements are done "
                             "(nothing queued or running) and the incremental bases they lead to are built, "
                             "then print the measurements' table (for scripts and tests); "
                             "exit 1 at once when no warm server is running to measure what is pending. "
                             "An output measured while the machine was busy counts as done (its table says "
                             "busy): the server measures it again when the machine is idle")
    parser.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                        help="with --wait: give up after this long (default 600), exit 1")


def run(args) -> int:
    from linkwrap.bench import load, replay
    from linkwrap.record import save
    from linkwrap.errors import UsageError
    from linkwrap.facts import linkers
    if args.budget <= 0:
        raise UsageError("--budget must be a positive number of seconds")
    if args.wait:
        return wait(args)
    # A saved link that is missing or broken is a SaveError: one line, exit 1.
    manifests = save.find(args.outputs, os.getcwd())
    prepared = [(m, save.replay_args(m)) for m in manifests]
    from linkwrap.request.args import compiles
    for m, _ in prepared:
        if compiles(m["args"]):  # as saved: a replay's copies of the sources have names of their own
            raise save.SaveError(f"{m['output']}: its saved link compiles sources too, so a replay would time "
                                 "the compile as the linker's; link it from objects to benchmark it")
    reports = []
    for manifest, link_args in prepared:
        found = linkers.discover(replay.request_for(manifest, link_args, manifest["output"]), os.environ)
        unknown = set(args.linker or ()) - set(found)
        if unknown:
            raise UsageError(f"not installed: {', '.join(sorted(unknown))} (installed: {', '.join(found)})")
        save.touch(manifest)
        progress = _progress(manifest, args.budget) if sys.stderr.isatty() and not args.json else None
        default = replay.callers_default(manifest, found)
        since = load.sample()
        try:
            results, facts, rounds = replay.bench(manifest, link_args, found, budget_s=args.budget,
                                                  only=set(args.linker or ()),
                                                  progress=progress and progress.update, base=default)
        finally:
            if progress:
                progress.stop()
        # As the background measurer does: a measurement taken busy counts, and is taken again when idle.
        taken = load.summary(*load.others(since, load.sample()),
                             *load.settings_limit(replay.request_for(manifest, link_args, manifest["output"]),
                                                  os.environ))
        report = _report(manifest, results, facts, rounds, args.budget, default, taken)
        _keep(manifest, results, facts, rounds, taken)
        reports.append(report)
        if not args.json:
            _render(report)
    if args.json:
        json.dump(reports, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return 0


def wait(args) -> int:
    """`linkwrap bench --wait`: poll the background measurer's state until nothing is queued or
    running, then the table of each output it measured (latest), of this project or the outputs named."""
    from linkwrap.bench import background, replay
    from linkwrap.errors import UsageError
    from linkwrap.evidence.measured import output_key
    if args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    from linkwrap.cli.status import background as background_status
    deadline = time.monotonic() + args.timeout
    off = background_status()["off"]
    if off:
        print(f"linkwrap: background measurement is off ({off})", file=sys.stderr)
    while True:
        state = background.read_state()
        # What the measurer has queued, and what it will queue once the server sees the machine idle:
        # saved links that no measurement applies to yet (the server looks at them within seconds).
        running = state.get("running") if background.running_pid(state) else None
        waiting = ([running] if running else []) + list(state.get("queued") or ())
        if not waiting and not off:
            waiting = [m["output"] for m, *_ in background.queued(os.environ)[0]]
        # An output whose latest measurement was taken busy is measured again when the machine is
        # idle, which may be long: its measurement is done as far as a script waiting goes (the
        # table says it was busy), unless that redo is under way.
        redo = {d["output"] for d in latest_finished(state).values() if (d.get("load") or {}).get("busy")}
        waiting = [w for w in waiting if w == running or w not in redo]
        if not waiting:
            break
        if not background.running_pid(state) and not server_running():
            # Nothing will measure them: said at once, not after the whole timeout.
            what = waiting[0] if len(set(waiting)) == 1 else f"{len(set(waiting))} saved links"
            print(f"linkwrap: no warm server is running to measure {what}; measure now with `linkwrap bench`",
                  file=sys.stderr)
            return 1
        if time.monotonic() >= deadline:
            print(f"linkwrap: background measurements still pending after {args.timeout:g} s: "
                  f"{', '.join(dict.fromkeys(waiting))}", file=sys.stderr)
            return 1
        time.sleep(0.5)
    bases = _wait_for_bases(deadline, off)
    if bases:
        print(f"linkwrap: incremental bases still being built after {args.timeout:g} s: {bases}",
              file=sys.stderr)
        return 1
    cwd = os.getcwd()
    named = {output_key(os.path.abspath(w)) for w in args.outputs}
    latest = {}
    for done in latest_finished(state).values():
        key = output_key(done["output"])
        if named and key not in named:
            continue
        if not named and not (done["cwd"] == cwd or done["cwd"].startswith(cwd.rstrip("/") + "/")):
            continue
        latest[key] = done
    reports = []
    for done in latest.values():
        facts = type("Facts", (), {"fs": done["fs"]})
        report = _report(done, [replay.Result(*r) for r in done["results"]], facts, done["rounds"],
                         done["budget_s"], done["default"], done.get("load"))
        report.update(load_avg=done["load_avg"], yielded=done["yielded"], resumed_at=list(done["resumed_at"]))
        reports.append(report)
        if not args.json:
            _render(report)
    if args.json:
        json.dump(reports, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif not reports:
        print(f"no background measurements of {', '.join(args.outputs) or cwd} yet")
    return 0


def _wait_for_bases(deadline, off) -> int:
    """After the measurements: wait while the server builds the incremental bases its saved links
    asked for (bench/incremental_base.py; the measurer goes first, so they come after), since a base
    ready is what makes the next relink a patch. -> how many are still wanted at the deadline (0:
    none). Not waited for where nothing will build them (background work off, or no warm server
    running): a base is the next relink's speed-up, not a measurement a script waits to read."""
    from linkwrap.record import base_queue
    while True:
        left = len(base_queue.wanted())
        if not left or off or not server_running():
            return 0
        if time.monotonic() >= deadline:
            return left
        time.sleep(0.5)


def latest_finished(state) -> dict:
    """{output: the background measurer's latest finished record of it}."""
    return {done["output"]: done for done in state.get("finished", ())}


def server_running(environ=os.environ) -> bool:
    """A warm server holds its socket's lock in this state's run directory (server/lifetime.py's
    claim(), held for its lifetime), as /proc/locks says. Not asked over its socket: a connection
    counts there as a link arriving, which would stop the measurement being waited for."""
    from linkwrap.server import lifetime
    run = lifetime.run_dir(environ)
    try:
        names = [n for n in os.listdir(run) if n.startswith("s-") and n.endswith(".lock")]
    except OSError:
        return False
    held = set()
    for name in names:
        try:
            st = os.stat(os.path.join(run, name))
        except OSError:
            continue
        held.add(f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}")
    if not held:
        return False
    try:
        with open("/proc/locks") as f:
            locks = f.read().splitlines()
    except OSError:
        return True   # no way to tell: waited for, as before
    # "1: FLOCK  ADVISORY  WRITE 1234 00:1f:5678 0 EOF" (a blocked waiter's line starts "1: ->")
    return any(len(p) > 5 and p[1] == "FLOCK" and p[5] in held for p in (line.split() for line in locks))


def measure_in_background() -> None:
    """The background measurer's process (bench/background.py starts it from the warm server):
    it measures with the store's writer lent (the store lives above linkwrap/bench/)."""
    from linkwrap.bench import background
    try:
        background.work(to_store=store_rows)
    except Exception as e:
        from linkwrap import faults
        faults.note("measuring saved links in the background", e)
    os._exit(0)


def _report(manifest, results, facts, rounds, budget, default, load=None) -> dict:
    from linkwrap.report.summary import peak_is_bound  # the records' rule, for the bench's figures
    rows = [{"linker": r.linker, "label": r.label, "variant": r.variant, "median_ms": r.median_ms,
             "ci_low_ms": r.ci_low_ms, "ci_high_ms": r.ci_high_ms, "min_ms": r.min_ms, "max_ms": r.max_ms,
             "peak_rss_kb": r.peak_rss_kb, "spawner_rss_kb": r.spawner_rss_kb,
             # The linker's peak is at most peak_rss_kb: the bench's own size is counted in it.
             "peak_rss_bound": peak_is_bound(r._asdict()),
             "runs": r.runs, "failed": r.failed,
             "ratio_vs": r.vs, "ratio": r.ratio, "ratio_ci_low": r.ratio_low, "ratio_ci_high": r.ratio_high,
             "times_ms": list(r.times_ms)} for r in results]
    return {"output": manifest["output"], "rounds": rounds, "budget_s": budget, "load_avg": os.getloadavg()[0],
            "fs": getattr(facts, "fs", None), "default": default, "load": load, "rows": rows}


def _keep(manifest, results, facts, rounds, load=None) -> None:
    from linkwrap.bench import keep
    keep.keep(manifest, results, facts, rounds, to_store=store_rows, load=load)


def store_rows(manifest, kept, rounds) -> None:
    """The results into the store's bench_results (reports); the measurement cache has them already."""
    from linkwrap.store import db as store
    from linkwrap.store.spool import utc_iso
    if not kept:
        return
    machine, kernel = kept[0][0].machine, kept[0][0].kernel
    try:
        conn = store.open_store(ingest=False)
        now = utc_iso(time.time())
        load = os.getloadavg()[0]
        conn.execute("BEGIN IMMEDIATE")
        for row, r in kept:
            conn.execute(
                "INSERT INTO bench_results (measured_utc, machine_key, fs_type, kernel_release, project_dir, "
                "output_path, output_key, output_kind, input_bytes, linker, linker_label, linker_path, "
                "linker_mtime_ns, variant, median_ms, ci_low_ms, ci_high_ms, min_ms, max_ms, peak_rss_kb, runs, "
                "failed, rounds, load_avg_1m, ratio_vs, ratio_median, ratio_ci_low, ratio_ci_high, others_cpus, "
                "taken_busy) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (now, machine, row.fs, kernel, row.project, manifest["output"], row.output, row.kind,
                 row.input_bytes, row.linker, row.label, row.path, row.mtime_ns, row.variant, row.median_ms,
                 row.ci_low_ms, row.ci_high_ms, r.min_ms, r.max_ms, r.peak_rss_kb, r.runs, r.failed, rounds, load,
                 r.vs, r.ratio, r.ratio_low, r.ratio_high, row.others_cpus,
                 None if row.busy is None else int(bool(row.busy))))
        conn.execute("COMMIT")
    except Exception as e:  # the cache already has them: a broken store is said, not fatal
        from linkwrap.store.db import warn
        warn(f"bench results not kept in the store: {e}")


class _progress:
    def __init__(self, manifest, budget):
        from rich.progress import Progress
        self.p = Progress(transient=True)
        self.p.start()
        self.task = self.p.add_task(f"bench {os.path.basename(manifest['output'])}", total=budget)

    def update(self, rounds, elapsed, spread):
        shown = "?" if spread == float("inf") else f"{spread * 100:.1f} %"
        self.p.update(self.task, completed=elapsed,
                      description=f"round {rounds}, widest CI ±{shown}")

    def stop(self):
        self.p.stop()


def _render(report) -> None:
    from rich import box
    from rich.markup import escape
    from rich.table import Table
    from linkwrap.report.render import cell_len, fit, wide_console
    console = wide_console()
    ok = [r for r in report["rows"] if not r["failed"]]
    fastest = min((r["median_ms"] for r in ok), default=None)
    base = next((r["median_ms"] for r in ok if r["linker"] == report["default"] and r["variant"] == "fresh"), None)
    rows = []
    for r in report["rows"]:
        if r["failed"]:
            rows.append({"linker": escape(r["label"]), "variant": r["variant"], "median": "[red]failed[/]",
                         "95 % CI": escape(r["failed"][:80])})
            continue
        rows.append({"linker": escape(r["label"]), "variant": r["variant"], "median": f"{r['median_ms']:.1f} ms",
                     "95 % CI": f"{r['ci_low_ms']:.1f}-{r['ci_high_ms']:.1f}",
                     "min-max": f"{r['min_ms']:.1f}-{r['max_ms']:.1f}",
                     "peak RSS": ("-" if not r["peak_rss_kb"] else
                                  ("≤" if r.get("peak_rss_bound") else "") + f"{r['peak_rss_kb'] / 1024:.0f} MiB"),
                     "× fastest": f"{r['median_ms'] / fastest:.2f}", "paired": _vs_default(r, base)})
    # Headers may take two lines; a figure is never cut: what does not fit at 80 columns goes whole
    # (min-max first), and the linker's name folds.
    headers = {"linker": "linker", "variant": "variant", "median": "median", "95 % CI": "95 % CI",
               "min-max": "min-max", "peak RSS": "peak\nRSS", "× fastest": "×\nfastest",
               "paired": f"× {report['default'] or 'default'}\n(paired)"}

    def make(dropped):
        table = Table(title=f"{escape(report['output'])}: {report['rounds']} rounds on {report['fs'] or '?'}, "
                            f"load average {report['load_avg']:.2f}"
                            + (f"; {escape(load_text(report['load']))}" if report.get("load") else ""),
                      title_justify="left", box=box.SIMPLE_HEAD,
                      pad_edge=False, collapse_padding=True)
        shown = [c for c in headers if c not in dropped]
        for c in shown:
            if c == "linker":
                table.add_column(headers[c], overflow="fold")
            else:
                table.add_column(headers[c], no_wrap=c != "95 % CI" or not any(r["failed"] for r in report["rows"]),
                                 justify="left" if c == "variant" else "right")
        for row in rows:
            table.add_row(*[row.get(c, "") for c in shown])
        return table, {"linker": max([cell_len(r["linker"]) for r in rows] + [len("linker")])}

    console.print(fit(console, make, "linker", optional=("min-max", "peak RSS"), least=12))
    import textwrap
    bound = [r["spawner_rss_kb"] for r in report["rows"] if r.get("peak_rss_bound")]
    if bound:
        from linkwrap.report.render import bound_line
        console.print(escape(textwrap.fill(bound_line("the bench's own process", f"{max(bound) / 1024:.0f} MiB"), console.width,
                                           subsequent_indent="  ")), highlight=False, soft_wrap=True, style="dim")
    for line in paired_lines(report):
        # A wrapped sentence keeps its indent, one step further in than its first line.
        lead = line[:len(line) - len(line.lstrip())]
        console.print(escape(textwrap.fill(line, console.width, subsequent_indent=lead + "    ",
                                           break_on_hyphens=False)), highlight=False, soft_wrap=True)


def load_text(load) -> str:
    from linkwrap.bench.load import text
    return text(load)


def _vs_default(r, base) -> str:
    if r["ratio"] is not None:
        return f"{r['ratio']:.2f} ({r['ratio_ci_low']:.2f}-{r['ratio_ci_high']:.2f})"
    return f"{r['median_ms'] / base:.2f}" if base else ""


def paired_lines(report) -> list:
    """hyperfine's summary, from the per-round ratios to the caller's default (paired: same round)."""
    base = next((r for r in report["rows"] if r["linker"] == report["default"] and r["variant"] == "fresh"), None)
    # Not the default against itself (a ratio of 1 by construction).
    rows = [r for r in report["rows"] if not r["failed"] and r["ratio"] is not None and r is not base]
    if not rows or base is None:
        return []
    lines = [f"Compared with {base['label']} round by round (95 % CI of the paired ratio):"]
    for r in sorted(rows, key=lambda r: r["ratio"]):
        name = r["label"] + ("" if r["variant"] == "fresh" else f" ({r['variant']})")
        if r["ratio"] <= 1:
            # times faster = 1 / ratio; its interval is the ratio's, inverted
            x, lo, hi, word = 1 / r["ratio"], 1 / r["ratio_ci_high"], 1 / r["ratio_ci_low"], "faster"
        else:
            x, lo, hi, word = r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"], "slower"
        clear = r["ratio_ci_high"] < 1 or r["ratio_ci_low"] > 1
        lines.append(f"  {name} ran {x:.2f} ± {(hi - lo) / 2:.2f} times {word} than {base['label']} "
                     f"({lo:.2f}-{hi:.2f}{'' if clear else ', not told apart from 1'})")
    return lines
