"""What linkwrap adds to a link: median wall time of `linkwrap-cc` minus `cc` with the same
linker and the same arguments, on the bundled example's real link (the `app` binary).

    python3 benchmarks/bench_overhead.py [--runs 21] [--launcher PATH]

Builds examples/cargo-workspace once, keeps rustc's link inputs (-C save-temps), then for each
linker times, interleaved: (a) `cc` run directly with exactly the command linkwrap would run
(same -B shim, same added flags), and (b) `linkwrap-cc` with rustc's original arguments.
Prints medians and the difference per linker. Not a test: figures for the notes.
"""
import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rustc_link_args(work):
    ws = os.path.join(work, "ws")
    shutil.copytree(os.path.join(ROOT, "examples", "cargo-workspace"), ws,
                    ignore=shutil.ignore_patterns("target", ".cargo"))
    env = {**os.environ, "CARGO_TARGET_DIR": os.path.join(work, "target")}
    subprocess.run(["cargo", "build", "-q"], cwd=ws, env=env, check=True)
    os.utime(os.path.join(ws, "app", "src", "main.rs"))
    out = subprocess.run(["cargo", "rustc", "-q", "-p", "app", "--bin", "app", "--", "-C", "save-temps",
                          "--print", "link-args"], cwd=ws, env=env, check=True, capture_output=True, text=True).stdout
    line = [l for l in out.splitlines() if '"cc"' in l][-1]
    parts = shlex.split(line)
    i = parts.index("cc")
    env_prefix = dict(p.split("=", 1) for p in parts[:i] if "=" in p)
    return parts[i + 1:], env_prefix, ws


def timed(cmd, env, cwd):
    t = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = (time.perf_counter() - t) * 1000
    if done.returncode:
        sys.exit(f"failed: {shlex.join(cmd)}\n{done.stderr.decode()}")
    return elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--launcher", default=os.path.join(sysconfig.get_path("scripts"), "linkwrap-cc"),
                    help="the linkwrap-cc to time (default: the console script)")
    ap.add_argument("--linkers", default="mold,lld,rust-lld")
    opts = ap.parse_args()
    from linkwrap.wrap import args, run
    from linkwrap.wrap.choose import choose

    with tempfile.TemporaryDirectory() as work:
        argv, env_prefix, ws = rustc_link_args(work)
        home = os.path.join(work, "home")
        base_env = {**os.environ, **env_prefix, "LINKWRAP_HOME": home}
        print(f"link: examples/cargo-workspace app, {len(argv)} arguments; {opts.runs} interleaved runs each")
        print(f"launcher: {opts.launcher}")
        print(f"{'linker':10s} {'cc direct':>10s} {'linkwrap-cc':>12s} {'added':>8s}  (medians, ms)")
        for name in opts.linkers.split(","):
            env = {**base_env, "LINKWRAP_LINKER": name}
            os.environ.update({"LINKWRAP_HOME": home})
            req = args.parse(argv, environ=env, cwd=ws)
            decision = choose(req, env).decision
            assert decision.linker and decision.linker.name == name, decision
            out_direct = os.path.join(work, "direct-out")
            direct = run.command(req, decision, out_direct)
            wrapped = [opts.launcher, *args.with_output(argv, os.path.join(work, "wrapped-out"))]
            timed(direct, env, ws), timed(wrapped, env, ws)  # warm caches (page cache, linker cache)
            a, b = [], []
            for _ in range(opts.runs):
                a.append(timed(direct, env, ws))
                b.append(timed(wrapped, env, ws))
            ma, mb = statistics.median(a), statistics.median(b)
            diffs = statistics.median(y - x for x, y in zip(a, b))
            print(f"{name:10s} {ma:10.1f} {mb:12.1f} {diffs:8.1f}")
        breakdown(opts.runs)


def breakdown(runs):
    """Where the added time goes: the interpreter, the imports, and the rest."""
    python = sys.executable
    parent = os.path.dirname(os.path.dirname(os.path.abspath(__import__("linkwrap").__file__)))
    steps = {
        "/bin/sh start (the entry point's shell part)": ["/bin/sh", "-c", ":"],
        "python -I -S start": [python, "-IS", "-c", "pass"],
        "python -I -S + import the link path": [python, "-IS", "-c",
                                                f"import sys; sys.path.insert(0, {parent!r}); import linkwrap.wrap.pipeline"],
        "python with site (pip's console script)": [python, "-c", "import re"],
    }
    print("\nbreakdown (medians, ms):")
    for label, cmd in steps.items():
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run(cmd, check=True)
            times.append((time.perf_counter() - t) * 1000)
        print(f"  {label:48s} {statistics.median(times):6.1f}")


if __name__ == "__main__":
    main()
