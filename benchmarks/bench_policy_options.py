"""What the per-link check of the caller's linker options (policy.linker_options, REFUSES/WARNS)
costs policy.decide, on the link path, for command lines of 10, 300 and 3000 arguments.

Interleaved in one process: each round times decide() with the check and with it stubbed out
(as before it existed), in alternating order; printed are the medians and the median of the
per-round differences with its 95 % interval (binomial order statistics), and the load.

    python3 benchmarks/bench_policy_options.py [--rounds 2000]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time


def order_ci(xs, z=1.96):
    """95 % interval of the median of xs from order statistics."""
    s = sorted(xs)
    n = len(s)
    lo = max(0, int(n / 2 - z * n ** 0.5 / 2))
    hi = min(n - 1, int(n / 2 + z * n ** 0.5 / 2))
    return s[lo], s[hi]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2000)
    opts = ap.parse_args()
    os.environ.setdefault("LINKWRAP_HOME", tempfile.mkdtemp(prefix="lw-bench-"))
    from linkwrap.request import args, config
    from linkwrap.facts import linkers, probe
    from linkwrap.choice import policy
    found = linkers.discover()
    real = policy.linker_options
    print(f"load {os.getloadavg()} on {os.cpu_count()} CPUs; {opts.rounds} rounds each")
    for n in (10, 300, 3000):
        argv = ["main.o"] + [f"lib{i}.rlib" for i in range(n - 6)] + \
               ["-Wl,--as-needed", "-Wl,-z,relro,-z,now", "-Wl,--gc-sections", "-o", "app"]
        request = args.parse(argv, "cc", os.environ, cwd=tempfile.gettempdir())
        facts = probe.snapshot(request, os.environ)
        settings = config.load(request, os.environ)
        on, off, diff = [], [], []
        for i in range(opts.rounds):
            pair = []
            for check in ((True, False) if i % 2 else (False, True)):
                policy.linker_options = real if check else (lambda request: frozenset())
                t = time.perf_counter_ns()
                policy.decide(request, facts, found, settings)
                pair.append((check, (time.perf_counter_ns() - t) / 1000))
            policy.linker_options = real
            d = dict(pair)
            on.append(d[True])
            off.append(d[False])
            diff.append(d[True] - d[False])
        lo, hi = order_ci(diff)
        print(f"{n:5d} args: decide {statistics.median(on):7.1f} us with the check, "
              f"{statistics.median(off):7.1f} us without; difference {statistics.median(diff):6.1f} us "
              f"(95 % CI {lo:.1f}-{hi:.1f})")
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    sys.exit(main())
