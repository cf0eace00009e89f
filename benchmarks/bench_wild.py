"""wild ÷ rust-lld, ÷ mold, ÷ lld on generated projects' links, per filesystem (ext4, btrfs, xfs, tmpfs).

Input: genproject.py's std-only Rust program (its debug and release links, rustc's own command lines)
and its C++ program, built once under --dir. For each filesystem the built tree is copied onto a
fresh mount (btrfs, xfs: sparse loop images; tmpfs; ext4: --dir itself when it is ext4, else a loop
image), so inputs and output both live there, and every link writes its output there.

Each link is the command linkwrap would run (run.command: the cc driver, -B<shim>, the policy's
flags for that linker on that filesystem, decided by policy.decide from a real probe of the output),
written fresh: the output is removed before every run. wild also runs with --mmap-output-file added
and, on btrfs, with --no-mmap-output-file (what wild >= 0.10 does there by default).

Rounds interleave the linkers (each round runs every variant once, the order rotating), after one
warm-up run of each. Per (link, filesystem): each variant's median wall time, and wild ÷ each other
as the median of the per-round ratios with a 95 % confidence interval (binomial order statistics,
distribution-free). `uptime`'s load is printed before and after: the machine is shared.

Needs root (mounts). Usage:
    python benchmarks/bench_wild.py [--rounds 11] [--dir DIR] [--fs ext4,btrfs,xfs,tmpfs]
                                    [--links rust-debug,rust-release,cpp] [--modules 16] [--funcs 34]
"""
import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
import genproject  # noqa: E402
import mounts  # noqa: E402  (tests/mounts.py: mkfs + loop mounts, always unmounted)

from linkwrap.request import args as args_mod  # noqa: E402

from linkwrap.facts import linkers, probe

from linkwrap.choice import policy

from linkwrap.run import run
from linkwrap.choice.policy import FRESH  # noqa: E402

LINKERS = ("wild", "rust-lld", "mold", "lld")


def median_ci(xs, level=0.95):
    """(low, high) of the median's confidence interval from order statistics: no assumption about
    the distribution. Coverage is at least `level`; with too few samples, the whole range."""
    xs, n = sorted(xs), len(xs)
    alpha, cdf, k = (1 - level) / 2, 0.0, 0
    while k < n:
        p = math.comb(n, k) / 2 ** n
        if cdf + p > alpha:
            break
        cdf += p
        k += 1
    if k == 0:
        return xs[0], xs[-1]
    return xs[k - 1], xs[n - k]


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def build(root, link, modules, funcs):
    """Generate and build one link's project under root, once: -> (argv after the driver, env, driver, cwd).

    The captured command is kept in root/<link>.json and reused while its inputs exist (a rebuild
    of the generated Rust program takes minutes on a busy 2-core machine)."""
    import json
    cache = os.path.join(root, f"{link}.json")
    if os.path.exists(cache):
        with open(cache) as f:
            argv, env, driver, cwd = json.load(f)
        if all(os.path.exists(os.path.join(cwd, a)) for a in argv if a.endswith((".o", ".rlib"))):
            return argv, {**os.environ, **env}, driver, cwd
    env = {"CARGO_INCREMENTAL": "0"}
    if link.startswith("rust-"):
        proj = os.path.join(root, "rust")
        if not os.path.exists(os.path.join(proj, "Cargo.toml")):  # rewriting it would rebuild it all
            genproject.rust(proj, modules, funcs)
        argv, link_env, cwd = genproject.rust_link(proj, link[5:], os.path.join(root, "target"),
                                                   {**os.environ, **env})
        result = (argv, {**env, **link_env}, "cc", cwd)
    else:
        proj = genproject.cpp(os.path.join(root, "cpp"))
        argv, cwd = genproject.cpp_link(proj)
        result = (argv, env, "c++", cwd)
    with open(cache, "w") as f:
        json.dump(result, f)
    return result[0], {**os.environ, **result[1]}, result[2], result[3]


def needed_dirs(link, root):
    """The directories under root that hold the link's inputs, and its working directory."""
    argv, _, _, cwd = link
    dirs = {os.path.dirname(os.path.join(cwd, a)) for a in argv if a.endswith((".o", ".rlib", ".a"))}
    dirs = {d for d in dirs | {cwd} if d.startswith(root + os.sep)}
    return sorted(d for d in dirs if not any(d.startswith(o + os.sep) for o in dirs))


def moved(argv, old_root, new_root):
    return [a.replace(old_root, new_root) for a in argv]


def variants(req, found):
    """[(label, Decision)]: each linker as the policy decides for this output, plus wild's mmap variants."""
    facts = probe.snapshot(req)
    result = []
    for name in LINKERS:
        d = policy.decide(req, facts, {name: found[name]}, None)
        assert d.linker is not None and d.linker.name == name, d.reasons
        d = d._replace(write_mode=FRESH)
        result.append((name, d))
        if name == "wild":
            if "--mmap-output-file" not in d.linker_flags:
                result.append(("wild +mmap", d._replace(linker_flags=d.linker_flags + ("--mmap-output-file",))))
            if facts.fs == "btrfs":
                flags = tuple(f for f in d.linker_flags if f != "--mmap-output-file") + ("--no-mmap-output-file",)
                result.append(("wild buffered", d._replace(linker_flags=flags)))
    return result


def time_link(cmd, env, cwd, out):
    try:
        os.unlink(out)
    except FileNotFoundError:
        pass
    code, wall_ms, *_rest, stdout, stderr, _ = run.spawn(cmd, env)
    if code != 0 or stdout or stderr:
        raise SystemExit(f"{' '.join(cmd[:3])}…: exit {code}\n{stdout.decode()}{stderr.decode()}")
    return wall_ms


def bench_one(name, link, root, copy_root, found, rounds):
    argv, env, driver, cwd = link
    argv, cwd = moved(argv, root, copy_root), cwd.replace(root, copy_root)
    req = args_mod.parse(argv, driver, env, cwd=cwd)
    out = req.output
    plans = [(label, run.command(req, d, out)) for label, d in variants(req, found)]
    env = run.linker_environment(env)
    here = os.getcwd()
    os.chdir(cwd)  # C++ inputs are named relative to it (run.spawn runs in this process's directory)
    try:
        for _, cmd in plans:  # warm-up: inputs in the page cache, shims made
            time_link(cmd, env, cwd, out)
        times = {label: [] for label, _ in plans}
        for r in range(rounds):
            k = r % len(plans)
            for label, cmd in plans[k:] + plans[:k]:
                times[label].append(time_link(cmd, env, cwd, out))
    finally:
        os.chdir(here)  # or the mount stays busy
    return times, req


def report(name, fs, times, input_mb):
    print(f"\n{name} on {fs} ({input_mb:.0f} MB of inputs, {len(times['wild'])} rounds)")
    for label, ts in times.items():
        print(f"  {label:<14} median {statistics.median(ts):8.1f} ms")
    for other in [l for l in times if l != "wild"]:
        ratios = [w / o for w, o in zip(times["wild"], times[other])]
        lo, hi = median_ci(ratios)
        print(f"  wild ÷ {other:<14} {statistics.median(ratios):.2f}  (95 % CI {lo:.2f}–{hi:.2f})")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--dir", help="where to build (default: a new directory under /var/tmp)")
    ap.add_argument("--fs", default="ext4,btrfs,xfs,tmpfs")
    ap.add_argument("--links", default="rust-debug,rust-release,cpp")
    ap.add_argument("--modules", type=int, default=16)  # genproject's default: ~150 MB debug inputs
    ap.add_argument("--funcs", type=int, default=34)
    opts = ap.parse_args()
    links = opts.links.split(",")
    found = linkers.discover()
    missing = [n for n in LINKERS if n not in found]
    if missing:
        raise SystemExit(f"bench_wild: not found: {', '.join(missing)} (wild: put shared/tools/wild/<v>/ on PATH)")
    print(f"load before: {uptime()}")
    print("linkers: " + ", ".join(found[n].label for n in LINKERS) + f"; kernel {os.uname().release}")
    base = opts.dir or tempfile.mkdtemp(prefix="bench-wild-", dir="/var/tmp")
    root = os.path.join(base, "src")
    for name in links:  # one link at a time, on every filesystem: figures arrive as they are made
        link = build(root, name, opts.modules, opts.funcs)
        dirs = needed_dirs(link, root)
        tree_mb = sum(os.path.getsize(os.path.join(d, f)) for top in dirs
                      for d, _, fs in os.walk(top) for f in fs) >> 20
        for fs in opts.fs.split(","):
            scratch = tempfile.mkdtemp(prefix=f"{fs}-", dir=base)
            if fs == "tmpfs":
                mount = mounts.tmpfs_mount(scratch, options=f"size={tree_mb * 2 + 512}m")
            else:
                mount = mounts.loop_mount(scratch, fs, size_mb=max(1024, tree_mb * 3 + 512))
            with mount as point:
                copy_root = os.path.join(point, "src")
                for d in dirs:
                    dest = os.path.join(copy_root, os.path.relpath(d, root))
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                    subprocess.run(["cp", "-a", d, dest], check=True)
                times, req = bench_one(name, link, root, copy_root, found, opts.rounds)
                report(name, probe.snapshot(req).fs or fs, times,
                       genproject.input_bytes(req.args, req.cwd) / 1e6)
            shutil.rmtree(scratch, ignore_errors=True)
        print(f"load: {uptime()}")
    print(f"\nload after: {uptime()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
