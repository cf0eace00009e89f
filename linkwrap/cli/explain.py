"""`linkwrap explain [OUTPUT] [-- <cc link args>]`: the facts of one link and the decision, with reasons.

Input: an output path (a link of --kind, default pie, writing it) or a full
cc-style link command line after `--`. It runs the link path's own steps
(config.load, linkers.discover, probe.snapshot, policy.decide) without linking.
This module gathers the facts into that object; explain_render.py shows it as tables.
Output: rich tables; --json prints a stable object:
  {"request": {...}, "probe": {"fs", "fs_options", "fs_local", "kernel", "output": {"exists",
   "is_regular", "size", "nlink", "inode", "held_by_others", "cached_fraction"}, "input_bytes", "cpus",
   "mem_available_mb", "mem_limit_mb", "thp", "jobserver", "small_inputs"},
   "decision": {"linker", "version", "path", "flags", "driver_flags", "write_mode",
                "incremental": linkwrap's own linker relinks by patching (a reason says why or why not),
                "reasons",
                "failed": [linkers that failed on this output while the link as asked passed: every
                           choice but a forced one avoids them, whether or not learning is on],
                "measured": null | {"used", "scope", "rows", "ignored"},
                "learned": null | {"used", "exploring", "load_adjusted", "links", "explored", "failed",
                                    "candidates", "compiles", "incremental": null | {"timed", "median_ms"}},
                "prior": null | {"used", "scope", "input_bytes", "decided_by", "rows", "ignored"},
                "replayable": whether the output's link is saved (then its real links are no tries),
                "incremental_base": null | {"ready": a base to patch is beside the output,
                                            "wanted": a base build is queued for the warm server,
                                            "stand_by": the full linker that links what cannot be patched}},
   "start": {"how": "direct" | "driver", "why"},
   "entry": {"point": "server" | "script", "why"}: the entry point a build's link reaches, whose
            decision is shown (the server's child reaps a forking linker's worker: no --no-fork),
   "linkers": {name: {"path", "version"}}, "config": {"profile", "files"},
   "memory": {"predicted_kb", "source", "detail", "admission", "room_kb", "running_links"}}
  (plus "request.inputs", "request.inputs_gone": {"rustc_temporaries": count of inputs rustc
   deleted when the link returned, "not_found": [other inputs not there]}, and
   "probe.output.cache_not_measured": why the page-cache share was not measured, e.g. "< 8 MiB",
   else null; "recorded": the last recorded link of OUTPUT, with its "peak_rss_kb" and "charge_kb"
   ("peak_rss_kb" is only an upper bound where it is at or below "spawner_rss_kb"):
   "memory.predicted_kb" predicts the charge, what the link adds to its memory group, not the RSS;
   after a fall-back its "first_linker", "first_exit_status" and "first_error" say what failed and why;
   "compiles": its driver compiled sources too, so its "wall_ms" is not the linker's alone).
An OUTPUT that is a directory is a usage error (exit 2).
A configuration error (a malformed or unreadable linkwrap.toml, an unknown LINKWRAP_LINKER) is a
one-line error, exit 1: every link fails with that line until it is fixed (LINKWRAP_CONFIG_ERRORS=warn:
links run as asked). A fault of linkwrap's own is
reported the way the link would handle it: linked as asked, with the reason. LINKWRAP_DISABLE=1
shows the facts and a decision of "as asked", as the link would do.
"""
import argparse
import os
import sys


KINDS = ("pie", "exec", "shared", "relocatable", "static", "static-pie")


def _options(parser) -> None:
    parser.add_argument("--kind", choices=KINDS,
                        help="the kind of output (default: what the link arguments say, else pie)")
    parser.add_argument("--json", action="store_true", help="print a JSON object (a stable interface)")


def add_arguments(parser) -> None:
    _options(parser)
    parser.add_argument("words", nargs=argparse.REMAINDER, metavar="[OUTPUT] [-- CC-LINK-ARGS...]",
                        help="the output path (default: the last recorded link's), and/or after `--` the "
                             "link's cc arguments; a recorded link of OUTPUT is shown beside what would be "
                             "decided now")


def split_words(args):
    """(output, link_args, kind, json) from the parsed words: options may follow OUTPUT."""
    words = list(args.words)
    link_args = None
    if "--" in words:
        i = words.index("--")
        words, link_args = words[:i], words[i + 1:]
    inner = argparse.ArgumentParser(prog="linkwrap explain", add_help=False)
    _options(inner)
    inner.add_argument("output", nargs="?")
    from linkwrap.errors import UsageError
    try:
        rest, unknown = inner.parse_known_args(words)
    except SystemExit:
        raise UsageError("usage: linkwrap explain [--kind KIND] [--json] [OUTPUT] [-- CC-LINK-ARGS...]") from None
    if unknown:
        raise UsageError(f"unexpected arguments: {' '.join(unknown)} (link arguments go after --)")
    return rest.output, link_args, rest.kind or args.kind, rest.json or args.json


def build_request(output, link_args, kind, environ, cwd):
    from linkwrap.request import args as args_mod
    driver = environ.get("LINKWRAP_CC") or "cc"
    # An unreadable @file raises args.ArgsError, a UsageError: one error line.
    if link_args:
        request = args_mod.parse(link_args, driver=driver, environ=environ, cwd=cwd)
    else:
        request = args_mod.parse(["-o", output or "a.out"], driver=driver, environ=environ, cwd=cwd)
    if link_args and output:
        request = request._replace(output=os.path.join(cwd, output))
    if kind:
        request = request._replace(kind=kind)
    return request


def explain(request, environ) -> dict:
    """The report as a plain dict (what --json prints). Raises ConfigError as config.load does."""
    from linkwrap.choice import policy
    from linkwrap.choice.choose import choose
    entry = entry_dict(environ)
    reaps = entry["point"] == "server"
    choice = choose(request, environ, reaps=reaps)
    if choice.config_error is not None:
        raise choice.config_error  # the user's to fix: one line, exit 1 (and so does the link)
    settings, facts, found = choice.settings, choice.facts, choice.found
    from linkwrap.request.invocation import disabled
    if disabled(environ):  # what pipeline.link checks first
        decision = policy.as_asked("LINKWRAP_DISABLE=1: linkwrap is off, the link runs exactly as asked")
    elif any(doing != "predicting memory" for doing, _ in choice.faults):
        decision = policy.as_asked(choice.decision.reasons[0] + " -> the link runs as asked")
    else:
        decision = choice.decision
    note = None
    linked_as = cargo_link_path(request.output)
    if linked_as and facts is not None and decision.linker is not None:
        # What the link really meets: Cargo deletes deps/<bin>-<hash> first, so there is no output.
        from linkwrap.facts.probe import OutputFacts
        request = request._replace(output=linked_as)
        gone = OutputFacts(exists=False, **dict.fromkeys(f for f in OutputFacts._fields if f != "exists"))
        facts = facts._replace(output=gone)
        if choice.learned is not None:
            # What that output's own relinks taught (the linker, an incremental relink), not this name's
            try:
                from linkwrap.evidence import learn
                taught = learn.evidence(request)
            except Exception:   # evidence is a hint, as on the link path (choose.py)
                taught = None
            choice = choice._replace(learned=taught, failed=taught.failed if taught is not None else choice.failed)
        decision = policy.decide(request, facts, found, settings, learned=choice.learned, failed=choice.failed,
                                 reaps=reaps, prior=choice.prior)
        note = (f"Cargo links this binary as {linked_as} and deletes that file first: at link time there is "
                "no output (shown below); this name is a hard link Cargo makes after the link")
    return {
        "note": note,
        "request": {"output": request.output, "kind": request.kind, "cwd": request.cwd,
                    "driver": request.driver, "fuse_ld": request.fuse_ld, "inputs": list(request.inputs),
                    "inputs_gone": inputs_gone(request)},
        "probe": probe_dict(facts),
        "held_by": holders(request.output) if facts is not None and facts.output.held_by_others else [],
        "decision": dict(decision_dict(decision), failed=sorted(choice.failed or ()),
                         measured=measured_dict(choice.measured, decision),
                         learned=learned_dict(choice.learned, decision, compiles(request)),
                         prior=prior_dict(choice.prior, decision), replayable=choice.replayable,
                         incremental_base=base_dict(choice, request)),
        "start": start_dict(request, decision, environ),
        "entry": entry,
        "linkers": {name: {"path": info.path, "version": _dotted(info.version)} for name, info in found.items()},
        "config": {"profile": getattr(settings, "profile", None), "files": list(getattr(settings, "files", ()))},
        "memory": memory_dict(choice),
    }


def cargo_link_path(output):
    """For Cargo's uplifted <target>/<profile>/<bin>: the deps/<bin>-<hash> it is a hard link to,
    or a copy of where Cargo could not make a hard link (what rustc really links), else None."""
    if not output:
        return None
    d, name = os.path.split(output)
    deps = os.path.join(d, "deps")
    try:
        st = os.stat(output)
        same_size = []
        for entry in os.scandir(deps):
            stem, dash, tag = entry.name.rpartition("-")
            if dash and stem in (name, name.replace("-", "_")):
                other = entry.stat(follow_symlinks=False)
                if (other.st_ino, other.st_dev) == (st.st_ino, st.st_dev):
                    return entry.path
                if other.st_size == st.st_size and not entry.is_symlink():
                    same_size.append(entry.path)
        if st.st_nlink == 1:
            import filecmp
            # Cargo copies where a hard link fails (another filesystem): the same bytes.
            return next((p for p in same_size if filecmp.cmp(p, output, shallow=False)), None)
    except OSError:
        pass
    return None


def rustc_temporary(path) -> bool:
    """rustc deletes these when its link returns: its `rustcXXXXXX/` directory (symbols.o, the
    metadata object, raw-dylib stubs) and, unless -C save-temps, its codegen units' `*.rcgu.o`."""
    import re
    return path.endswith(".rcgu.o") or any(re.fullmatch(r"rustc[A-Za-z0-9]{6}", part)
                                           for part in path.split("/")[:-1])


def inputs_gone(request) -> dict:
    """The inputs that are not there now: {"rustc_temporaries": n, "not_found": [paths]}."""
    temporaries, missing = 0, []
    for i in request.inputs or ():
        if os.path.exists(os.path.join(request.cwd or "", i)):
            continue
        if rustc_temporary(i):
            temporaries += 1
        else:
            missing.append(i)
    return {"rustc_temporaries": temporaries, "not_found": missing}


def memory_dict(choice) -> dict:
    """The prediction and its source, whether the link would wait for memory, and the room now."""
    from linkwrap.choice import admission
    p = choice.memory
    running = {}
    room = None
    try:
        from linkwrap import paths
        from linkwrap.evidence.predict import read_table
        # Read without the lock: a torn read shows no running links, and explain changes nothing.
        running = read_table(os.path.join(paths.state_dir(), admission.LEDGER), admission.FORMAT).get("running", {})
        running = {pid: e for pid, e in running.items() if admission.alive(pid, e[0])}
        room = admission.measure_room(choice.facts, running, os.getpid(),
                                      admission.settings_of(choice.settings)[0])
    except Exception:
        pass
    return {"predicted_kb": p.kb if p else None, "source": p.source if p else None,
            "detail": p.detail if p else None, "admission": admission.enabled(choice.settings, choice.facts),
            "room_kb": room, "running_links": len(running)}


def probe_dict(facts) -> dict:
    from linkwrap.choice.write_mode import cache_not_measured
    from linkwrap.facts.probe import OutputFacts, Probe
    if facts is None:
        # Same keys, every fact unknown: the interface stays stable.
        out = dict.fromkeys(OutputFacts._fields)
        d = dict.fromkeys(Probe._fields)
    else:
        d = facts._asdict()
        out = facts.output._asdict() if facts.output is not None else dict.fromkeys(OutputFacts._fields)
    # null cached_fraction means either "not measured" (small or not a file) or "unknown": say which
    out["cache_not_measured"] = cache_not_measured(OutputFacts(**{k: out[k] for k in OutputFacts._fields}))
    d["output"] = out
    d["kernel"] = _dotted(d.get("kernel"))
    return d


def holders(path) -> list:
    """Who holds the output: "pid N (name)" for each other process that has it open,
    mapped or running. The probe only knows *that* someone does (a lease attempt,
    a few µs on every link); naming them means walking every process (psutil),
    which is for this command, not for the link."""
    import psutil
    try:
        st = os.stat(path)
    except OSError:
        return []

    def same(p):
        try:
            s = os.stat(p)
            return (s.st_dev, s.st_ino) == (st.st_dev, st.st_ino)
        except (OSError, TypeError, ValueError):
            return False

    found = []
    for proc in psutil.process_iter(["pid", "name"]):
        if proc.pid == os.getpid():
            continue
        try:
            hit = (same(proc.exe()) or any(same(f.path) for f in proc.open_files())
                   or any(same(m.path) for m in proc.memory_maps(grouped=True)))
        except (psutil.Error, OSError):
            continue
        if hit:
            found.append(f"pid {proc.pid} ({proc.info['name']})")
    return found


def decision_dict(decision) -> dict:
    info = decision.linker
    return {
        "linker": info.name if info else None,
        "version": _dotted(info.version) if info else None,
        "path": info.path if info else None,
        "flags": list(decision.linker_flags),
        "driver_flags": list(decision.driver_flags),
        "write_mode": decision.write_mode,
        "incremental": decision.incremental,
        "reasons": list(decision.reasons),
    }


def base_dict(choice, request):
    """The incremental base of this output (None: not an output linkwrap's own linker could patch)."""
    if choice.base is None:
        return None
    from linkwrap.record import base_queue
    from linkwrap.evidence.saved import manifest_id
    wanted = manifest_id(request.cwd, request.output) in {i for i, _ in base_queue.wanted()}
    d = choice.decision
    return {"ready": choice.base, "wanted": wanted,
            "stand_by": d.instead.linker.name if d.instead is not None and d.instead.linker else None}


def entry_dict(environ) -> dict:
    """The entry point a link of a build reaches: the link server when this install's native client
    is built (`linkwrap install` compiles it) and LINKWRAP_SERVER is not off, else the script (a
    process per link; pip's console script is one too). Only the first link, which starts the
    server, goes through the script then."""
    if environ.get("LINKWRAP_SERVER") == "off":
        return {"point": "script", "why": "LINKWRAP_SERVER=off"}
    try:
        from linkwrap.install import launcher
        path = launcher.entry_point("linkwrap-cc", write=False)
        with open(path, "rb") as f:
            native = f.read(4) == b"\x7fELF"
    except OSError:
        native = False
    if native:
        return {"point": "server", "why": f"the native client {path} with the warm link server"}
    return {"point": "script", "why": "no native client installed (`linkwrap install` builds one)"}


def start_dict(request, decision, environ) -> dict:
    """How the link would be started: the linker itself, or through the driver, and why."""
    from linkwrap.run import direct
    try:
        direct.command(request, decision, request.output, environ)
    except direct.NotDirect as e:
        return {"how": "driver", "why": str(e)}
    except Exception as e:
        from linkwrap.faults import describe
        return {"how": "driver", "why": describe("learning the driver's linker command", e)}
    return {"how": "direct", "why": f"the linker's command line as `{request.driver} -###` gives it"}


def measured_dict(measured, decision):
    """What `linkwrap bench` measured that applies to this link, and whether it decided the linker:
    {"used", "scope", "rows": [{linker, label, variant, median_ms, ci_low_ms, ci_high_ms, runs,
    peak_rss_kb, date, failed, ratio_vs, ratio, ratio_ci_low, ratio_ci_high}], "ignored": [why]};
    None when nothing was ever measured here. ratio*: the paired per-round ratio to ratio_vs."""
    if measured is None:
        return None
    label = decision.linker.label if decision.linker else None
    used = bool(label) and any(r.startswith(f"{label}: measured") for r in decision.reasons)
    keys = ("linker", "label", "variant", "median_ms", "ci_low_ms", "ci_high_ms", "runs", "peak_rss_kb",
            "date", "failed")
    rows = sorted(measured.rows, key=lambda r: (r.failed is not None, r.median_ms))
    paired = {"ratio_vs": "vs", "ratio": "ratio", "ratio_ci_low": "ratio_low", "ratio_ci_high": "ratio_high"}
    return {"used": used, "scope": measured.scope,
            "rows": [dict({k: getattr(r, k) for k in keys}, **{k: getattr(r, f) for k, f in paired.items()})
                     for r in rows],
            "ignored": list(measured.ignored)}


def prior_dict(prior, decision):
    """What was measured here for other links, and whether it decided (evidence/prior.as_dict)."""
    from linkwrap.evidence.prior import as_dict
    return as_dict(prior, decision)


def compiles(request) -> bool:
    from linkwrap.request.args import compiles as compiles_sources
    return compiles_sources(request.args)


def learned_dict(learned, decision, compiles=False):
    """This output's own relinks: {"used", "exploring", "links", "explored", "failed",
    "candidates": {name: {"timed", "median_ms"}}, "incremental": its incremental links' {"timed",
    "median_ms"} or None, "load_adjusted", "compiles"} (times corrected for
    load, as load_adjusted says; compiles: the driver compiles sources in this link too, so no time
    of it is evidence); None when learning is off."""
    if learned is None:
        return None
    from linkwrap.evidence.learn import EXPLORING
    label = decision.linker.label if decision.linker else None
    taught = [r for r in decision.reasons if label and r.startswith(label + ":")
              and (EXPLORING in r or "this output's relinks" in r)]
    return {"used": bool(taught), "exploring": any(EXPLORING in r for r in taught), "load_adjusted": True,
            "links": learned.links,
            "explored": learned.explored, "failed": sorted(learned.failed), "compiles": compiles,
            "candidates": {n: {"timed": c, "median_ms": m} for n, (c, m) in sorted(learned.stats.items())},
            "incremental": ({"timed": learned.incremental[0], "median_ms": learned.incremental[1]}
                            if learned.incremental else None)}


def _dotted(version):
    return ".".join(map(str, version)) if version else None


def recorded_link(output, link_args, cwd):
    """The record to show beside the decision: the last link (no OUTPUT), or OUTPUT's last; or None."""
    if link_args is not None:
        return None
    from linkwrap.cli import scope
    from linkwrap.store import db, queries
    conn = db.open_store()
    if output is None:
        project, _ = scope.resolve(conn, None, cwd)
        row = (queries.last_link(conn, project) if project else None) or queries.last_link(conn)
        if row is None:
            from linkwrap.errors import UsageError
            raise UsageError("no link recorded yet to explain: give the output (`linkwrap explain OUTPUT`) "
                             "or the link's arguments (`linkwrap explain -- ARGS...`)")
        return row
    return queries.last_link(conn, output=os.path.abspath(os.path.join(cwd, output)))


def whose_link(row, cwd):
    """With no OUTPUT outside every project, the last link recorded anywhere is shown: a sentence
    naming its project, said first (it may be a link the user does not expect); else None."""
    from linkwrap.cli import scope
    from linkwrap.store import db
    conn = db.open_store()
    if scope.resolve(conn, None, cwd)[0] is not None:
        return None
    found = conn.execute("SELECT project_dir FROM builds WHERE id = ?", (row["build_id"],)).fetchone()
    where = found[0] if found and found[0] else "no recorded project"
    return (f"the current directory is in no project linkwrap has recorded: this is the last link "
            f"recorded anywhere, of {where}")


def recorded_build_name(row, cwd) -> str:
    """The recorded link's build as `summary` names it: 'build 3' of the project cwd is in; with
    its project's name and #id when it is another's, or cwd is in none."""
    from linkwrap.cli import scope
    from linkwrap.store import db, queries
    conn = db.open_store()
    build = conn.execute("SELECT * FROM builds WHERE id = ?", (row["build_id"],)).fetchone()
    if build is None:
        return f"build #{row['build_id']}"
    here = scope.resolve(conn, None, cwd)[0]
    return queries.build_label(conn, build, across=here is None or here != build["project_dir"])


def recorded_request(row, kind, environ):
    """The recorded link's own command line, where it can still be read; else None."""
    from linkwrap.request import args as args_mod
    from linkwrap.store.queries import json_list
    argv, cwd = json_list(row["argv"]), row["cwd"]
    if not argv or not cwd or not os.path.isdir(cwd):
        return None
    try:
        request = args_mod.parse(argv, driver=row["driver"] or environ.get("LINKWRAP_CC") or "cc",
                                 environ=environ, cwd=cwd)
    except Exception:  # an @file that is gone: the output alone then
        return None
    return request._replace(kind=kind) if kind else request


def recorded_dict(row) -> dict:
    from linkwrap.store.queries import json_list
    return {"started_utc": row["started_utc"], "build": row["build_id"], "output": row["output_path"],
            "linker": row["linker"], "version": row["linker_version"], "flags": json_list(row["flags_added"]),
            "write_mode": row["write_mode"], "reasons": json_list(row["reasons"]), "wall_ms": row["wall_ms"],
            "exit_status": row["exit_status"], "fell_back": bool(row["fell_back"]),
            "peak_rss_kb": row["peak_rss_kb"], "charge_kb": row["charge_kb"], "charge_how": row["charge_how"],
            # At or below it, peak_rss_kb is the linker's at most (summary's peak_rss_bound).
            "spawner_rss_kb": row["spawner_rss_kb"],
            # What failed before the link as asked (summary's words): the linker, its exit, its error line.
            "first_linker": row["first_linker"], "first_exit_status": row["first_exit_status"],
            "first_error": row["first_error"],
            "compiles": None if row["compiles"] is None else bool(row["compiles"])}


def run(args) -> int:
    from linkwrap.errors import printable_data
    output, link_args, kind, as_json = split_words(args)
    cwd = os.getcwd()
    if output and output.endswith(os.sep) and not os.path.isdir(os.path.join(cwd, output)):
        from linkwrap.errors import UsageError
        raise UsageError(f"{output} ends in '{os.sep}': a link's output is a file (e.g. target/debug/app)")
    if output and os.path.isdir(os.path.join(cwd, output)):
        from linkwrap.errors import UsageError
        raise UsageError(f"{output} is a directory, not a link's output: name the file the link writes "
                         "(e.g. target/debug/app), or give no output for the last recorded link")
    row = recorded_link(output, link_args, cwd)
    made_by = None
    if row is None and output and link_args is None:
        # Cargo's uplifted target/<profile>/<bin> is a hard link to the deps/<bin>-<hash> rustc linked:
        # explain that link, with rustc's own command line (its rust-lld, its sysroot), as it ran.
        made_by = cargo_link_path(os.path.abspath(os.path.join(cwd, output)))
        row = recorded_link(made_by, None, cwd) if made_by else None
    request = recorded_request(row, kind, os.environ) if row is not None else None
    if request is None:
        request = build_request(output or (row["output_path"] if row is not None else None), link_args, kind,
                                os.environ, cwd)
    report = explain(request, os.environ)
    if row is not None and made_by:
        how = "a hard link" if os.path.samefile(made_by, os.path.join(cwd, output)) else "the same bytes"
        report["note"] = (f"{output} is Cargo's copy ({how}) of {made_by}, which rustc linked: "
                          "this is that link, as recorded")
    if row is not None and output is None and link_args is None:
        whose = whose_link(row, cwd)
        if whose:
            report["note"] = "; ".join(filter(None, (whose, report.get("note"))))
    report["recorded"] = recorded_dict(row) if row is not None else None
    if row is not None:
        report["recorded"]["build_name"] = recorded_build_name(row, cwd)
    if as_json:
        from linkwrap.report import jsonout
        jsonout.dump(report, sys.stdout)
    else:
        from linkwrap.cli.explain_render import render
        render(printable_data(report))
    return 0

