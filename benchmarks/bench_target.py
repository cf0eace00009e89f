"""What finding a Cargo link's target and driver adds to one link (linkwrap/request/target.py).

    python benchmarks/bench_target.py [--rounds 30] [--calls 300]

args.parse() of a rustc-like command line (70 arguments, the target's rustlib -L among them), run in
a project directory six levels deep with a .cargo/config.toml, in three ways, interleaved round by
round in this process:
  launcher  the driver is given (CMake, ninja): no lookup, the baseline;
  cargo     linkwrap-cc: the target from the arguments, then LINKWRAP_CC_<TRIPLE>, the Cargo configs
            up the tree (stat calls) and CARGO_HOME;
  marker    as cargo, with linkwrap's `replaced:` marker in the config (its line is read and decoded).
Prints the median per call of each, and the median (with the 5th-95th percentile over rounds) of
what cargo and marker add to launcher. Warm: what a link pays once its interpreter is up.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from linkwrap.request import args  # noqa: E402


def argv_for(project):
    rustlib = "/root/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/lib/rustlib"
    objs = [f"{project}/target/debug/deps/app-1.app.{i}.rcgu.o" for i in range(40)]
    return ["-m64", *objs, f"-B{rustlib}/x86_64-unknown-linux-gnu/bin/gcc-ld", "-fuse-ld=lld",
            "-Wl,--as-needed", "-Wl,-Bstatic", f"{rustlib}/x86_64-unknown-linux-gnu/lib/libstd-1.rlib",
            "-Wl,-Bdynamic", "-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc",
            "-Wl,--eh-frame-hdr", "-Wl,-z,noexecstack", "-L", f"{rustlib}/x86_64-unknown-linux-gnu/lib",
            "-o", f"{project}/target/debug/deps/app-1", "-Wl,--gc-sections", "-pie", "-Wl,-z,relro,-z,now",
            "-nodefaultlibs", *[f"-Wl,-rpath,/x/{i}" for i in range(8)]]


def per_call_us(fn, calls):
    t = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    return (time.perf_counter_ns() - t) / calls / 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--calls", type=int, default=300)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = os.path.join(tmp, "a", "b", "c", "d", "e", "app")
        os.makedirs(os.path.join(project, ".cargo"))
        plain = os.path.join(project, ".cargo", "config.toml")
        marked_dir = os.path.join(tmp, "m", "b", "c", "d", "e", "app")
        os.makedirs(os.path.join(marked_dir, ".cargo"))
        with open(plain, "w") as f:
            f.write('[target.x86_64-unknown-linux-gnu]\nlinker = "linkwrap-cc"\n')
        with open(os.path.join(marked_dir, ".cargo", "config.toml"), "w") as f:
            f.write('[target.x86_64-unknown-linux-gnu]\nlinker = "linkwrap-cc"  '
                    '# linkwrap (ID: 4c1a7e0b9d2f6a35) replaced: "linker = \\"clang\\"  # mine"\n')
        env = {"PATH": os.environ.get("PATH", ""), "CARGO_HOME": os.path.join(tmp, "cargo-home")}
        argv, marked_argv = argv_for(project), argv_for(marked_dir)
        assert args.parse(marked_argv, None, env, cwd=marked_dir).driver == "clang"
        variants = {
            "launcher": lambda: args.parse(argv, "cc", env, cwd=project),
            "cargo": lambda: args.parse(argv, None, env, cwd=project),
            "marker": lambda: args.parse(marked_argv, None, env, cwd=marked_dir),
        }
        samples = {name: [] for name in variants}
        for _ in range(opts.rounds):
            for name, fn in variants.items():
                samples[name].append(per_call_us(fn, opts.calls))
    load = os.getloadavg()
    print(f"args.parse per call, {opts.rounds} interleaved rounds of {opts.calls} calls "
          f"(load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} CPUs)")
    for name, values in samples.items():
        print(f"  {name:9} median {statistics.median(values):7.1f} us")
    for name in ("cargo", "marker"):
        added = sorted(a - b for a, b in zip(samples[name], samples["launcher"]))
        lo, hi = added[int(len(added) * 0.05)], added[min(len(added) - 1, int(len(added) * 0.95))]
        print(f"  {name} adds {statistics.median(added):6.1f} us per link (5-95%: {lo:.1f} .. {hi:.1f} us)")


if __name__ == "__main__":
    main()
