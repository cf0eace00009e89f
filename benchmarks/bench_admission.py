"""N concurrent GNU ld links under a memory limit: admission vs a serial -j1 build vs no admission.

Each round runs, interleaved, in three fresh memory cgroups with the same limit (--limit times one
link's measured charge; at 2, one link and its wrappers fit and two do not):
  admission  N links at once through linkwrap-cc, admission on (the default under a limit);
  serial     the same N links one after another through linkwrap-cc (a -j1 build);
  plain      N links at once through `cc` alone, as a build without linkwrap runs them.
Printed: wall time per mode (median, min-max), the ratio admission / serial per round (median and a
95 % bootstrap interval), OOM kills and failed links per mode, and the prediction's error over the
admission links (predicted / charge, the charge being peak RSS for GNU ld) with the charge's own error
against the group's measured peak. The links are tests/memgroup.py's heavy objects (mergeable strings:
GNU ld's heap), or with --cpp genproject's C++ program. Needs root (cgroups). Prints `uptime` too.

    python3 benchmarks/bench_admission.py [--links 4] [--rounds 5] [--limit 2.0] [--cpp FILES FUNCS]
    python3 benchmarks/bench_admission.py --cost    # what prediction and admission add to every link
"""
import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
sys.path.insert(0, HERE)
import memgroup  # noqa: E402


def linkwrap_cc():
    import sysconfig
    return os.path.join(sysconfig.get_path("scripts"), "linkwrap-cc")


def together(group, cwd, argvs, env):
    lines = [" ".join(f"'{a}'" for a in argv) + f" >/dev/null 2>&1 & p{i}=$!" for i, argv in enumerate(argvs)]
    waits = [f"wait $p{i}; echo $?" for i in range(len(argvs))]
    started = time.perf_counter()
    done = group.run(["sh", "-c", "\n".join(lines + waits)], cwd=cwd, capture_output=True, text=True, env=env)
    return time.perf_counter() - started, [int(x) for x in done.stdout.split()]


def one_by_one(group, cwd, argvs, env):
    script = "\n".join(" ".join(f"'{a}'" for a in argv) + " >/dev/null 2>&1; echo $?" for argv in argvs)
    started = time.perf_counter()
    done = group.run(["sh", "-c", script], cwd=cwd, capture_output=True, text=True, env=env)
    return time.perf_counter() - started, [int(x) for x in done.stdout.split()]


def bootstrap_ci(values, n=2000, seed=1):
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(n))
    return meds[int(n * 0.025)], meds[int(n * 0.975)]


def cost():
    """What prediction and admission add to every link, warm, in this process (medians of 2000)."""
    import timing
    from linkwrap.records import record
    from linkwrap.choice import admission
    from linkwrap.request import args
    from linkwrap.evidence import predict
    from linkwrap.facts import probe
    home = tempfile.mkdtemp(prefix="bench-admission-cost-")
    os.environ["LINKWRAP_HOME"] = home
    try:
        request = args.parse(["-o", os.path.join(home, "out")], "cc", os.environ)
        facts = probe.snapshot(request)

        def predicting():
            history, model = predict.load("bfd", request.output)
            return predict.predict(request.output, "bfd", 50 << 20, history, model)

        memory = predicting()
        Settings = record("Settings", "memory")
        Choice = record("Choice", "settings facts memory")
        choice = Choice(Settings({"admission": True}), facts, memory)
        Outcome = record("Outcome", "peak_rss_kb returncode")

        def admitting():
            ticket = admission.enter(choice, {})
            admission.leave(ticket, memory, "bfd", request.output, Outcome(64 << 10, 0), 50 << 20)

        for label, fn in (("admission.enter() + leave(), nothing running, history written", admitting),
                          ("predict.load() + predict(), both tables present", predicting)):
            med, p90 = timing.median_us(fn, 2000)
            print(f"  {label}: median {med:.0f} us (p90 {p90:.0f})")
        full(request, predict)
        for module in ("linkwrap.evidence.predict", "linkwrap.choice.admission"):
            # What the link path has imported by then (choose, run) first: only this module's own cost.
            code = (f"import sys; sys.path.insert(0, {os.path.dirname(HERE)!r}); "
                    "import linkwrap.choice.choose, linkwrap.run.run, linkwrap.record.record; "
                    f"import time; t = time.perf_counter(); import {module}; "
                    "print((time.perf_counter() - t) * 1000)")
            runs = sorted(float(subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True,
                                               text=True, check=True).stdout) for _ in range(21))
            print(f"  import {module} in a fresh python -I -S: median {statistics.median(runs):.2f} ms")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


def full(request, predict):
    """The same with both tables at their bound (predict.HISTORY_MAX_OUTPUTS outputs of a user's Rust
    projects, as months of builds leave them): what every link reads, and what a link whose charge
    is kept (every Rust link) rewrites, in CPU time, as the link path pays it."""
    from linkwrap import paths
    import sqlite3
    outputs = [f"/home/user/src/project{i % 7}/target/debug/deps/crate_{i}-{i * 7919:016x}"
               for i in range(predict.HISTORY_MAX_OUTPUTS)]
    for i, out in enumerate(outputs):
        predict.keep(paths.state_dir(), "rust-lld", out, (40 << 10) + i, 1 << 24)
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE links (id INTEGER PRIMARY KEY, linker, output_path, input_bytes, charge_kb, "
                 "exit_status)")
    conn.executemany("INSERT INTO links (linker, output_path, input_bytes, charge_kb, exit_status) "
                     "VALUES ('rust-lld', ?, ?, ?, 0)", [(out, 1 << 24, 40 << 10) for out in outputs])
    predict.refit(conn)

    def cpu_us(fn, runs=1000):
        for _ in range(20):
            fn()
        xs = []
        for _ in range(runs):
            t = time.process_time_ns()
            fn()
            xs.append((time.process_time_ns() - t) / 1000)
        xs.sort()
        return statistics.median(xs), xs[int(runs * 0.9)]

    def reading():
        history, model = predict.load("rust-lld", outputs[-5])
        return predict.predict(outputs[-5], "rust-lld", 1 << 24, history, model)

    assert reading().source == "output"
    print(f"  with {len(outputs)} outputs in the history and the model (CPU time, median / p90):")
    for label, fn in (("predict.load() + predict()", reading),
                      ("predict.keep(), one Rust link's charge",
                       lambda: predict.keep(paths.state_dir(), "rust-lld", outputs[-7], 41 << 10, 1 << 24))):
        med, p90 = cpu_us(fn)
        print(f"    {label}: {med:.0f} us (p90 {p90:.0f})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--links", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cpp", nargs=2, type=int, metavar=("FILES", "FUNCS"))
    ap.add_argument("--limit", type=float, default=2.0, metavar="LINKS",
                    help="the limit in lone-link charges (2: one link fits, two do not)")
    ap.add_argument("--cost", action="store_true", help="only what prediction and admission cost per link")
    opts = ap.parse_args()
    if opts.cost:
        return cost()
    work = tempfile.mkdtemp(prefix="bench-admission-")
    try:
        if opts.cpp:
            import genproject
            project = genproject.cpp(os.path.join(work, "cpp"), files=opts.cpp[0], funcs=opts.cpp[1])
            argv, _ = genproject.cpp_link(project)
            objects = [os.path.join(project, a) for a in argv if a.endswith(".o")]
            driver = "c++"
        else:
            objects = memgroup.heavy_objects(work)
            driver = "cc"
        input_mb = sum(os.path.getsize(o) for o in objects) / (1 << 20)
        with memgroup.memory_cgroup() as group:
            assert group.run([driver, "-fuse-ld=bfd", *objects, "-o", os.path.join(work, "calibrate")]).returncode == 0
            single_kb = group.peak_kb()
        limit_kb = int(opts.limit * single_kb)
        n = opts.links
        homes = {m: os.path.join(work, f"home-{m}") for m in ("admission", "serial")}
        cc = linkwrap_cc()
        env_cc = {**os.environ, "LINKWRAP_CC": driver}
        walls = {m: [] for m in ("admission", "serial", "plain")}
        ooms = {m: 0 for m in walls}
        failed = {m: 0 for m in walls}
        ratios = []
        print(f"{n} GNU ld links of {input_mb:.0f} MiB of inputs; one link charges {single_kb >> 10} MiB "
              f"to a fresh group; limit {limit_kb >> 10} MiB; {opts.rounds} rounds, modes interleaved")
        for r in range(opts.rounds):
            for mode in ("admission", "serial", "plain"):
                out = os.path.join(work, f"o-{mode}")
                os.makedirs(out, exist_ok=True)
                if mode == "plain":
                    argvs = [[driver, "-fuse-ld=bfd", *objects, "-o", f"p{i}"] for i in range(n)]
                    env = os.environ.copy()
                else:
                    argvs = [[cc, "-fuse-ld=bfd", *objects, "-o", f"p{i}"] for i in range(n)]
                    env = {**env_cc, "LINKWRAP_HOME": homes[mode]}
                with memgroup.memory_cgroup(limit_kb=limit_kb) as group:
                    run = one_by_one if mode == "serial" else together
                    wall, codes = run(group, out, argvs, env)
                    ooms[mode] += group.oom_kills()
                failed[mode] += sum(c != 0 for c in codes)
                walls[mode].append(wall)
            ratios.append(walls["admission"][-1] / walls["serial"][-1])
        for mode, ws in walls.items():
            print(f"  {mode:9s} wall median {statistics.median(ws):6.2f} s (min {min(ws):.2f}, max {max(ws):.2f}); "
                  f"OOM kills {ooms[mode]}, failed links {failed[mode]} of {n * opts.rounds}")
        lo, hi = bootstrap_ci(ratios)
        print(f"  admission / serial: median {statistics.median(ratios):.3f} (95 % CI {lo:.3f}-{hi:.3f}, "
              f"{len(ratios)} rounds)")
        os.environ["LINKWRAP_HOME"] = homes["admission"]
        from linkwrap.store import db
        rows = db.open_store().execute("SELECT predicted_peak_kb, prediction_source, charge_kb, waited_ms "
                                       "FROM links ORDER BY id").fetchall()
        by_source = {}
        for p, source, c, _ in rows:
            if p and c:
                by_source.setdefault(source, []).append(p / c)
        for source, errs in sorted(by_source.items()):
            print(f"  predicted / charge, {source:7s}: median {statistics.median(errs):.2f} "
                  f"(min {min(errs):.2f}, max {max(errs):.2f}, {len(errs)} links)")
        charges = [c for _, _, c, _ in rows if c]
        print(f"  charge (peak RSS) / the group's measured peak of a lone link: "
              f"median {statistics.median(charges) / single_kb:.2f}")
        waits = [w for *_, w in rows if w]
        print(f"  {len(waits)} of {len(rows)} admission links waited, median {statistics.median(waits or [0]):.0f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
