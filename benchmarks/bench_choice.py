"""Choice quality: linkwrap's choice against the best candidate replayed, per filesystem.

For each filesystem (loop-mounted ext4, btrfs, xfs, and tmpfs; root needed), the generated
std-only Rust project (benchmarks/genproject.py) is built there through linkwrap with its links
saved, then `linkwrap bench` replays the debug and the release link on every installed linker
(interleaved rounds, one process, so the ratios share the machine's state). Printed per link:

  static  the static order's choice (rustc's own rust-lld) / the best replayed candidate
  chosen  linkwrap's choice once the measurement is in / the best replayed candidate
  vs rustc  linkwrap's choice / rust-lld (rustc's own default): <= 1.00 means never slower

plus the median and 95 % CI of every candidate and the machine's load. Not a test: figures.

    sudo python3 benchmarks/bench_choice.py [--fs ext4,btrfs,xfs,tmpfs] [--budget 30]
        [--modules 24 --funcs 120] [--profiles debug,release]
"""
import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import genproject  # noqa: E402
import mounts  # noqa: E402

IMAGE_MB = 4096   # sparse: the debug target dir of the generated project needs ~1 GB


@contextlib.contextmanager
def filesystem(base, fstype):
    point = os.path.join(base, f"mnt-{fstype}")
    if fstype == "tmpfs":
        with mounts.mounted(["-t", "tmpfs", "-o", "size=3g", "tmpfs"], point):
            yield point
        return
    image = mounts.make_image(base, fstype, IMAGE_MB)
    with mounts.mounted(["-o", "loop", image], point):
        yield point


def lw(*argv, cwd, env):
    exe = os.path.join(os.path.dirname(sys.executable), "linkwrap")
    return subprocess.run([exe, *argv], cwd=cwd, env=env, capture_output=True, text=True)


def host():
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    return next(l.split(":", 1)[1].strip() for l in out.splitlines() if l.startswith("host:"))


def one_fs(base, fstype, args):
    rows = []
    with filesystem(base, fstype) as point:
        project = genproject.rust(os.path.join(point, "proj"), modules=args.modules, funcs=args.funcs)
        os.makedirs(os.path.join(project, ".cargo"), exist_ok=True)
        cc = os.path.join(os.path.dirname(sys.executable), "linkwrap-cc")
        with open(os.path.join(project, ".cargo", "config.toml"), "w") as f:
            f.write(f'[target.{host()}]\nlinker = "{cc}"\n')
        env = {**os.environ, "LINKWRAP_HOME": os.path.join(point, "lw-home")}
        env.pop("LINKWRAP_LINKER", None)
        for profile in args.profiles:
            release = ["--release"] if profile == "release" else []
            done = lw("run", "--save", "-q", "--", "cargo", "build", "-q", *release, cwd=project, env=env)
            assert done.returncode == 0, done.stderr
            deps = os.path.join(project, "target", profile, "deps")
            [out] = [os.path.join(deps, n) for n in os.listdir(deps) if n.startswith("genbig-") and "." not in n]
            before = json.loads(lw("explain", "--json", out, cwd=project, env=env).stdout)["decision"]
            done = lw("bench", "--json", "--budget", str(args.budget), out, cwd=project, env=env)
            assert done.returncode == 0, done.stderr
            [report] = json.loads(done.stdout)
            after = json.loads(lw("explain", "--json", out, cwd=project, env=env).stdout)["decision"]
            rows.append((fstype, profile, report, before, after))
    return rows


def ratio(report, linker):
    fresh = {r["linker"]: r for r in report["rows"] if r["variant"] == "fresh" and not r["failed"] and r["runs"] >= 3}
    best = min(r["median_ms"] for r in fresh.values())
    return (fresh[linker]["median_ms"] / best if linker in fresh else None), fresh, best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fs", default="ext4,btrfs,xfs,tmpfs")
    ap.add_argument("--budget", type=float, default=30.0)
    ap.add_argument("--modules", type=int, default=24)
    ap.add_argument("--funcs", type=int, default=120)
    ap.add_argument("--profiles", default="debug,release")
    args = ap.parse_args()
    args.profiles = args.profiles.split(",")
    print(f"load before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="bench-choice-") as base:
        for fstype in args.fs.split(","):
            for fs, profile, report, before, after in one_fs(base, fstype, args):
                static, fresh, best = ratio(report, report["default"])
                chosen, _, _ = ratio(report, after["linker"])
                vs_rustc = (fresh[after["linker"]]["median_ms"] / fresh["rust-lld"]["median_ms"]
                            if "rust-lld" in fresh and after["linker"] in fresh else None)
                cands = "  ".join(f"{n} {r['median_ms']:.0f} [{r['ci_low_ms']:.0f}-{r['ci_high_ms']:.0f}]"
                                  for n, r in sorted(fresh.items(), key=lambda kv: kv[1]["median_ms"]))
                f = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
                print(f"{fs:6} {profile:7} static {report['default']:8} {f(static)}  chosen {after['linker']:8} "
                      f"{f(chosen)}  vs rustc {f(vs_rustc)}  rounds {report['rounds']}  load {report['load_avg']:.2f}")
                print(f"       ms (median [95 % CI]): {cands}")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
