"""Fast from the first build (issue 33): what a user who just installs linkwrap gets, end to end.

A fresh state directory; a generated std-only Rust project (benchmarks/genproject.py, ~150 MB of
link inputs by default); `linkwrap install`; the first `cargo build`; the background measurement let
finish (`linkwrap bench --wait`, which also waits for the incremental base the server builds
after measuring, so the relinks can be patches); then RELINKS edit-relinks (one constant of main.rs changed, so
rustc re-emits one codegen unit), each interleaved with the same edit built under rustc's own default
linker in a second target directory (`CARGO_TARGET_<host>_LINKER=cc`: rustc's arguments, its
rust-lld). Then a second generated project (other module count), installed and built once: its
first link shows what this machine's measurements of the first project taught.

Every link, both sides, runs through the same timing shim (a shell script around the real linker
command: the same fork and exec each side), which appends its wall time in nanoseconds to a file.
Printed, hyperfine-like: per phase the median ratio linkwrap / rustc's default, its 95 % bootstrap
CI where there are several pairs, the ms medians, the worst pair, the machine's load, and what
linkwrap chose (`linkwrap summary --json`). The goals (issue 33): relinks <= 0.65x with wild
installed (<= 1.00x without), the second project's first link <= 0.70x, no link above 1.05x.

    python3 benchmarks/bench_first_build.py [--modules 16] [--funcs 34] [--relinks 10] [--keep DIR]
"""
import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import genproject  # noqa: E402
from genproject import host, lw  # noqa: E402

SHIM = """#!/bin/sh
t0=$(date +%s%N)
"$LINKWRAP_BENCH_INNER" "$@"
rc=$?
t1=$(date +%s%N)
echo "$((t1 - t0))" >> "$LINKWRAP_BENCH_TIMES"
exit $rc
"""


def shim(work):
    path = os.path.join(work, "timed-linker")
    with open(path, "w") as f:
        f.write(SHIM)
    os.chmod(path, 0o755)
    return path


def installed_linker(project) -> str:
    """The linker `linkwrap install` wrote into the project's .cargo/config.toml."""
    with open(os.path.join(project, ".cargo", "config.toml")) as f:
        m = re.search(r'^\s*linker\s*=\s*"([^"]+)"', f.read(), re.M)
    return m.group(1)


def build(project, target, inner, times, env, linker_shim):
    """One `cargo build` whose link goes through the shim around inner; -> the link's ms."""
    before = _read(times)
    e = {**env, "CARGO_TARGET_DIR": target, genproject_env(): linker_shim,
         "LINKWRAP_BENCH_INNER": inner, "LINKWRAP_BENCH_TIMES": times}
    subprocess.run(["cargo", "build", "-q"], cwd=project, env=e, check=True)
    after = _read(times)
    assert len(after) == len(before) + 1, (before, after)
    return after[-1] / 1e6


def genproject_env():
    return f"CARGO_TARGET_{re.sub(r'[-.]', '_', host()).upper()}_LINKER"


def _read(path):
    try:
        with open(path) as f:
            return [int(x) for x in f.read().split()]
    except FileNotFoundError:
        return []


def edit(project, n):
    """Change one constant in main.rs: rustc re-emits the codegen unit that holds main."""
    path = os.path.join(project, "src", "main.rs")
    with open(path) as f:
        text = f.read()
    if "const EDIT" in text:
        text = re.sub(r"const EDIT: u64 = \d+;", f"const EDIT: u64 = {n};", text)
    else:
        text = text.replace("fn main() {\n    let mut acc: u64 = 0;",
                            f"const EDIT: u64 = {n};\n\nfn main() {{\n    let mut acc: u64 = EDIT;")
    with open(path, "w") as f:
        f.write(text)


def ratio_ci(pairs, resamples=4000):
    """Median of lw/default ratios and its 95 % bootstrap CI."""
    ratios = [a / b for a, b in pairs]
    med = statistics.median(ratios)
    if len(ratios) < 3:
        return med, None
    rng = random.Random(1)
    boots = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(resamples))
    return med, (boots[int(resamples * 0.025)], boots[int(resamples * 0.975)])


def show(label, pairs):
    med, ci = ratio_ci(pairs)
    lws, defs = [a for a, _ in pairs], [b for _, b in pairs]
    ci_text = f", 95% CI {ci[0]:.2f}..{ci[1]:.2f}" if ci else ""
    worst = max(a / b for a, b in pairs)
    print(f"  {label:<34} {med:5.2f}x{ci_text}  (linkwrap {statistics.median(lws):7.1f} ms, "
          f"rustc's default {statistics.median(defs):7.1f} ms, {len(pairs)} pair{'s' * (len(pairs) > 1)}, "
          f"worst {worst:.2f}x)")
    return med, worst


def chosen(project, env):
    done = lw("summary", "--json", cwd=project, env=env)
    try:
        data = json.loads(done.stdout)
    except ValueError:
        return "?"
    builds = data.get("builds") or [data]
    links = [link for b in builds for link in b.get("links", [])]
    return ", ".join(sorted({f"{link.get('linker')}" for link in links})) or "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modules", type=int, default=16)
    ap.add_argument("--funcs", type=int, default=34)
    ap.add_argument("--relinks", type=int, default=10)
    # Below the warm server's 15 minutes without a link (server/lifetime.py IDLE_S): a longer wait
    # outlives the server that would measure, and the first relink then starts a new one.
    ap.add_argument("--wait", type=int, default=600, help="seconds `bench --wait` may take (default 600)")
    ap.add_argument("--keep", help="work in this directory and keep it")
    a = ap.parse_args()
    work = a.keep or tempfile.mkdtemp(prefix="lw-first-build-")
    os.makedirs(work, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS")}
    env["LINKWRAP_HOME"] = os.path.join(work, "linkwrap-home")  # a fresh state directory
    timed = shim(work)
    times = os.path.join(work, "times")
    load = os.getloadavg()
    try:
        print(f"machine: {os.cpu_count()} CPUs, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
              f"wild {'on PATH' if shutil.which('wild') else 'not installed'}")
        one = genproject.rust(os.path.join(work, "one"), a.modules, a.funcs, name="genone")
        done = lw("install", cwd=one, env=env)
        assert done.returncode == 0, done.stderr
        inner = installed_linker(one)
        t_lw, t_def = os.path.join(work, "t-lw"), os.path.join(work, "t-default")
        first = [(build(one, t_lw, inner, times, env, timed), build(one, t_def, "cc", times, env, timed))]
        waited = lw("bench", "--wait", "--timeout", str(a.wait), cwd=one, env=env)
        why = waited.stderr.strip().splitlines()
        print(f"  bench --wait: exit {waited.returncode}" + (f" ({why[-1]})" if waited.returncode and why else ""))
        relinks = []
        for n in range(1, a.relinks + 1):
            edit(one, n)
            order = [(t_lw, inner), (t_def, "cc")] if n % 2 else [(t_def, "cc"), (t_lw, inner)]
            got = {target: build(one, target, linker, times, env, timed) for target, linker in order}
            relinks.append((got[t_lw], got[t_def]))
        two = genproject.rust(os.path.join(work, "two"), max(2, a.modules - 2), a.funcs, name="gentwo")
        done = lw("install", cwd=two, env=env)
        assert done.returncode == 0, done.stderr
        second = [(build(two, os.path.join(work, "t2-lw"), installed_linker(two), times, env, timed),
                   build(two, os.path.join(work, "t2-default"), "cc", times, env, timed))]
        print(f"\nlinkwrap / rustc's default linker (rust-lld), {a.modules}x{a.funcs} generated project:")
        _, w1 = show("first build's link", first)
        rel, w2 = show("edit-relinks after bench --wait", relinks)
        sec, w3 = show("second project's first link", second)
        print(f"  chose: project one {chosen(one, env)}; project two {chosen(two, env)}")
        goal = 0.65 if shutil.which("wild") else 1.00
        print(f"  goals: relinks <= {goal:.2f}x: {'met' if rel <= goal else 'NOT met'}; second project <= 0.70x: "
              f"{'met' if sec <= 0.70 else 'NOT met'}; no link above 1.05x: "
              f"{'met' if max(w1, w2, w3) <= 1.05 else 'NOT met'}")
        end = os.getloadavg()
        print(f"load at the end {end[0]:.2f} {end[1]:.2f} {end[2]:.2f}")
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
