"""Per-pass times of linkwrap.ld on the generated Rust project's debug link: this tree against another.

Each run is one `python -m linkwrap.ld --time` process per tree, the trees alternating (so both see
the same machine load), on the ld command line gcc passes for the link (bench_ld.py's project and
recording). Prints per pass the medians and the ratio this/baseline with a 95 % bootstrap CI, the
same for the whole process's wall time and its CPU time (user + sys: less moved by the machine's
load than wall time), the peak RSS, whether the two outputs are byte-identical, and the load.
What it is for: a change to one pass shows in that pass's line, where the whole link's ratio
(bench_ld.py --rust --baseline) drowns it in the other passes' noise.

    python benchmarks/bench_ld_passes.py --baseline /path/to/other/checkout [--runs 9]
                                         [--modules 16 --rust-funcs 34]
"""
import argparse
import atexit
import os
import shutil
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_ld  # noqa: E402

TREE = os.path.dirname(HERE)


def one_link(tree, argv, out, env, cwd):
    """-> ({pass: ms}, wall ms, CPU ms (user + sys), peak RSS MiB) of one link by the linker in tree."""
    argv = list(argv)
    argv[argv.index("-o") + 1] = out
    env = {**env, "PYTHONPATH": tree}
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "linkwrap.ld", "--time", *argv], cwd=cwd, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read().decode()
    _, status, ru = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t0) * 1000
    p.stderr.close()
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"link failed ({tree}): {err}")
    passes = {}
    for line in err.splitlines():
        ms, label = line.split(":", 1)[1].strip().split(" ms ")
        passes[label.strip()] = float(ms)
    return passes, wall, (ru.ru_utime + ru.ru_stime) * 1000, ru.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, metavar="TREE", help="another checkout of linkwrap")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--modules", type=int, default=16)
    ap.add_argument("--rust-funcs", type=int, default=34)
    a = ap.parse_args()
    if not os.path.isdir(os.path.join(a.baseline, "linkwrap", "ld")):
        raise SystemExit(f"bench_ld_passes: {a.baseline} holds no linkwrap/ld")
    root = tempfile.mkdtemp(prefix="bench-ld-passes-")
    atexit.register(shutil.rmtree, root, True)  # its inputs and outputs (up to ~1 GB) go with it
    argv, _, env, cwd, mb = bench_ld.rust_debug_link(root, a.modules, a.rust_funcs)
    ld_argv = bench_ld.record_rust_ld_args(root, argv, env, cwd)
    trees = {"this": TREE, "baseline": os.path.abspath(a.baseline)}
    samples = {k: ([], [], [], []) for k in trees}
    outs = {k: os.path.join(root, "out-" + k) for k in trees}
    loads = [float(bench_ld.load()[0])]
    for _ in range(a.runs):
        for k, tree in trees.items():
            for into, value in zip(samples[k], one_link(tree, ld_argv, outs[k], env, cwd)):
                into.append(value)
        loads.append(float(bench_ld.load()[0]))
    with open(outs["this"], "rb") as f, open(outs["baseline"], "rb") as g:
        same = f.read() == g.read()
    print(f"Rust debug link ({a.modules}x{a.rust_funcs}, {mb:.0f} MB of inputs), linkwrap.ld --time, "
          f"{a.runs} interleaved runs per tree, medians (1-min load {min(loads)}-{max(loads)}):")
    print(f"  {'pass':30} {'baseline':>9} {'this':>9} {'ratio':>6}  95% CI")
    rng = random.Random(1)
    mine, base = samples["this"][0], samples["baseline"][0]
    for p in mine[0]:
        x = [m.get(p, 0.0) for m in mine]
        y = [m.get(p, 0.0) for m in base]
        if not all(y):
            print(f"  {p:30} {'-':>9} {statistics.median(x):9.1f}")
            continue
        r, lo, hi = bench_ld.ratio_ci(x, y, rng)
        print(f"  {p:30} {statistics.median(y):9.1f} {statistics.median(x):9.1f} {r:6.2f}  [{lo:.2f}, {hi:.2f}]")
    # CPU time moves less with the machine's load than wall time does: a second view of the same runs
    for k, label in ((1, "whole process (wall)"), (2, "whole process (CPU)")):
        r, lo, hi = bench_ld.ratio_ci(samples["this"][k], samples["baseline"][k], rng)
        print(f"  {label:30} {statistics.median(samples['baseline'][k]):9.1f} "
              f"{statistics.median(samples['this'][k]):9.1f} {r:6.2f}  [{lo:.2f}, {hi:.2f}]")
    print(f"  peak RSS: baseline {statistics.median(samples['baseline'][3]):.0f} MiB, "
          f"this {statistics.median(samples['this'][3]):.0f} MiB")
    print(f"  outputs byte-identical: {same}")


if __name__ == "__main__":
    main()
