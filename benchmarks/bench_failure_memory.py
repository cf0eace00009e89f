"""What the failure memory saves where nothing is learnt (`[choice] learn = false`): a relink of an
output on which lld fails (-z start-stop-gc collects a `__start_<section>` section that GNU ld keeps;
tests/test_pipeline_retry.py) and the link as asked passes.

  remembered  the output's evidence holds "lld failed here": GNU ld links, once
  forgotten   the evidence removed before the link (as every link was before the memory applied
              with learning off): lld is tried, fails, and the link is done again as asked

Interleaved rounds through the script entry point (`linkwrap launch`), wall time of the whole
command; medians, p90, the ratio of medians and a 95 % confidence interval of the per-round
difference's median (order statistics). Not a test: figures for the notes (with `uptime`).

    python3 benchmarks/bench_failure_memory.py [--runs 21]
"""
import argparse
import glob
import math
import os
import shutil
import statistics
import subprocess
import tempfile
import time

A = """#include <stdio.h>
struct item { const char *name; int v; };
extern struct item __start_myset[], __stop_myset[];
int main(void) { int n = 0; for (struct item *i = __start_myset; i < __stop_myset; i++) n += i->v;
                 printf("%d\\n", n); return 0; }
"""
B = """struct item { const char *name; int v; };
__attribute__((used, section("myset"))) static struct item one = {"one", 1};
"""


def median_ci(xs, z=1.96):
    """Median and a ~95 % confidence interval from order statistics."""
    s = sorted(xs)
    n = len(s)
    lo = max(0, int(math.floor(n / 2 - z * math.sqrt(n) / 2)))
    hi = min(n - 1, int(math.ceil(n / 2 + z * math.sqrt(n) / 2)))
    return statistics.median(s), s[lo], s[hi]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    opts = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench-failure-memory-")
    try:
        home = os.path.join(work, "lw-home")
        env = {**os.environ, "LINKWRAP_HOME": home}
        for name, text in (("a.c", A), ("b.c", B)):
            with open(os.path.join(work, name), "w") as f:
                f.write(text)
        subprocess.run(["gcc", "-c", "a.c", "b.c"], cwd=work, check=True)
        with open(os.path.join(work, "linkwrap.toml"), "w") as f:
            f.write('forbid = ["mold", "wild"]\n[choice]\nlearn = false\n')
        link = [shutil.which("linkwrap"), "launch", "--", "gcc", "-Wl,--gc-sections", "-o", "loop", "a.o", "b.o"]

        def run(forget):
            if forget:
                for p in glob.glob(os.path.join(home, "**", "learned", "*.marshal"), recursive=True):
                    os.unlink(p)
            t = time.perf_counter_ns()
            done = subprocess.run(link, cwd=work, env=env, capture_output=True)
            ms = (time.perf_counter_ns() - t) / 1e6
            assert done.returncode == 0 and not done.stderr, done.stderr
            return ms

        for _ in range(3):  # warm-up: caches filled, the memory written
            run(False)
        times = {"remembered": [], "forgotten": []}
        diffs = []
        for i in range(opts.runs):
            order = (False, True) if i % 2 == 0 else (True, False)
            got = {forget: run(forget) for forget in order}
            times["remembered"].append(got[False])
            times["forgotten"].append(got[True])
            diffs.append(got[True] - got[False])
        load = os.getloadavg()
        print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs; "
              f"{opts.runs} interleaved rounds")
        for name, xs in times.items():
            xs = sorted(xs)
            print(f"  {name:10}  median {statistics.median(xs):7.1f} ms  p90 {xs[int(len(xs) * 0.9)]:7.1f} ms")
        m, lo, hi = median_ci(diffs)
        ratio = statistics.median(times["forgotten"]) / statistics.median(times["remembered"])
        print(f"  forgotten - remembered: median {m:.1f} ms (95 % CI {lo:.1f} .. {hi:.1f}); "
              f"ratio of medians {ratio:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
