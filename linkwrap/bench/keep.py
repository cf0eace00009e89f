"""KEEP: a replay's results into the measurement cache every link reads (evidence/measured.py), for
`linkwrap bench` and the background measurer alike. The store's table bench_results (for reports)
is written by the caller's `to_store`: the store lives above this floor (cli/bench.py's one)."""
import os
import time


def rows(manifest, results, facts, load=None) -> list:
    """measured.Row for each result whose linker binary is still there (its mtime is part of the key).
    load: bench/load.summary() of the rounds (how busy the rest of the machine was), or None."""
    from linkwrap.evidence import measured
    machine = measured.machine_key(getattr(facts, "cpus", None))
    kernel = ".".join(map(str, facts.kernel)) if getattr(facts, "kernel", None) else None
    date = time.strftime("%Y-%m-%d", time.gmtime())
    out = []
    for r in results:
        try:
            mtime = os.stat(r.path).st_mtime_ns
        except OSError:
            continue
        out.append((measured.Row(machine, facts.fs, kernel, manifest["cwd"], measured.output_key(manifest["output"]),
                                 manifest["kind"], manifest.get("input_bytes"), r.linker, r.label, r.path, mtime,
                                 r.variant, r.median_ms, r.ci_low_ms, r.ci_high_ms, r.runs, r.peak_rss_kb, date,
                                 r.failed, r.vs, r.ratio, r.ratio_low, r.ratio_high,
                                 (load or {}).get("others_cpus"), (load or {}).get("busy")), r))
    return out


def keep(manifest, results, facts, rounds, to_store=None, load=None) -> list:
    """Into the measurement cache (the link path), then to_store(manifest, [(row, result)], rounds).
    -> the rows kept."""
    from linkwrap.evidence import measured
    kept = rows(manifest, results, facts, load)
    measured.add_rows([row for row, _ in kept])
    if to_store is not None:
        to_store(manifest, kept, rounds)
    return [row for row, _ in kept]
