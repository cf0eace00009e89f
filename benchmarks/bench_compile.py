"""What a compile step costs when make runs it through linkwrap (`make CC='linkwrap-launch cc'`):
`cc -c` alone against the same command through the native client `linkwrap install` writes (with
its warm link server), the launcher script behind it (sh, then python -IS; it passes a compile
straight to cc) and pip's console script; then the cost of
args.links() on a rustc-size link command line, and of the launcher's SigIgn read (the shell part).

    python3 benchmarks/bench_compile.py [--runs 31]

Interleaved rounds (cc, client, script, console script), medians, per-round differences against cc with
a 95 % confidence interval of the median (order statistics). Not a test: figures for the notes,
with `uptime`.
"""
import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


def median_ci(samples):
    """(median, low, high): the median with a 95 % interval from order statistics."""
    s = sorted(samples)
    n = len(s)
    half = 1.96 * math.sqrt(n) / 2
    lo, hi = max(0, int(math.floor(n / 2 - half))), min(n - 1, int(math.ceil(n / 2 + half)))
    return statistics.median(s), s[lo], s[hi]


def timed(argv, cwd):
    t = time.perf_counter_ns()
    subprocess.run(argv, cwd=cwd, check=True)
    return (time.perf_counter_ns() - t) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=31)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="lw-bench-compile-")
    os.environ["LINKWRAP_HOME"] = os.path.join(work, "home")
    from linkwrap.install import launcher
    native = launcher.entry_point("linkwrap-launch")
    script = os.path.join(os.path.dirname(native), "py", "linkwrap-launch")
    console = shutil.which("linkwrap-launch")
    with open(os.path.join(work, "m.c"), "w") as f:
        f.write("int main(void){return 0;}\n")
    compile_ = ["cc", "-O0", "-c", "m.c", "-o", "m.o"]
    commands = {"cc -c": compile_, "native client": [native, *compile_], "launcher script": [script, *compile_],
                "console script": [console, *compile_]}
    for argv in commands.values():
        timed(argv, work)
    time.sleep(1)  # the native client's first start began a link server: let it come up
    for argv in commands.values():
        timed(argv, work)
    times = {k: [] for k in commands}
    for _ in range(args.runs):
        for k, argv in commands.items():
            times[k].append(timed(argv, work))
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (uptime), runs {args.runs}")
    base = times["cc -c"]
    for k, t in times.items():
        m, lo, hi = median_ci(t)
        line = f"{k:16s} median {m:6.1f} ms (95 % CI {lo:.1f}-{hi:.1f})"
        if k != "cc -c":
            d = median_ci([a - b for a, b in zip(t, base)])
            line += f"   added per compile {d[0]:+5.1f} ms ({d[1]:+.1f} to {d[2]:+.1f})"
        print(line)

    from linkwrap.request import args as args_mod
    rustc = ["-m64", *[f"/tmp/target/debug/deps/crate{i}-0123456789abcdef.rlib" for i in range(300)],
             "-Wl,--as-needed", "-Wl,-Bstatic", "-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc",
             "-Wl,--eh-frame-hdr", "-Wl,-z,noexecstack", "-L", "/opt/rust/lib", "-o", "/tmp/target/debug/app",
             "-Wl,--gc-sections", "-pie", "-Wl,-z,relro,-z,now", "-nodefaultlibs", "-fuse-ld=lld"]
    from timing import median_us
    med, p90 = median_us(lambda: args_mod.links(rustc), 2000)
    print(f"args.links() on a {len(rustc)}-argument rustc link: median {med:.1f} us, p90 {p90:.1f} us")

    read_loop = 'while read -r k v; do [ "$k" = SigIgn: ] && break; done < /proc/$$/status'
    plain, loop = [], []
    for _ in range(args.runs * 3):
        plain.append(timed(["sh", "-c", ":"], work))
        loop.append(timed(["sh", "-c", read_loop], work))
    d = median_ci([a - b for a, b in zip(loop, plain)])
    print(f"the launcher's SigIgn read (dash builtins): {d[0]:+.2f} ms per start ({d[1]:+.2f} to {d[2]:+.2f})")
    subprocess.run([shutil.which("linkwrap"), "server", "stop"], capture_output=True)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
