"""Choice quality: linkwrap's choice against the best candidate replayed, per filesystem.

The generated std-only Rust project (benchmarks/genproject.py) is built once through linkwrap
with its links saved; for each filesystem (loop-mounted ext4, btrfs, xfs, and tmpfs; root
needed) the saved links' inputs, working directory and outputs are put there and `linkwrap
bench` replays the debug and the release link on every installed linker (interleaved rounds,
one process, so the ratios share the machine's state). Printed per link:

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
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import genproject  # noqa: E402
from genproject import host, lw  # noqa: E402
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


def build_and_save(point, args, env):
    """Build the generated project at point through linkwrap, saving its links; -> {profile: output}."""
    project = genproject.rust(os.path.join(point, "proj"), modules=args.modules, funcs=args.funcs)
    os.makedirs(os.path.join(project, ".cargo"), exist_ok=True)
    cc = os.path.join(os.path.dirname(sys.executable), "linkwrap-cc")
    with open(os.path.join(project, ".cargo", "config.toml"), "w") as f:
        f.write(f'[target.{host()}]\nlinker = "{cc}"\n')
    outputs = {}
    for profile in args.profiles:
        release = ["--release"] if profile == "release" else []
        done = lw("run", "--save", "-q", "--", "cargo", "build", "-q", *release, cwd=project, env=env)
        assert done.returncode == 0, done.stderr
        deps = os.path.join(project, "target", profile, "deps")
        [outputs[profile]] = [os.path.join(deps, n) for n in os.listdir(deps)
                              if n.startswith("genbig-") and "." not in n]
    return project, outputs


def moved(manifest_path, point, profile):
    """The saved link carried onto another filesystem: its saved inputs copied there, its output
    and working directory there too, so that the replay reads and writes on that filesystem."""
    import marshal
    import shutil
    with open(manifest_path, "rb") as f:
        m = marshal.loads(f.read())
    store = os.path.join(point, "inputs", profile)
    os.makedirs(store, exist_ok=True)
    files = {}
    for orig, (how, where, size, mtime) in m["files"].items():
        if how == "object":
            new = os.path.join(store, os.path.basename(where))
            shutil.copy2(where, new)
            st = os.stat(new)
            files[orig] = (how, new, st.st_size, st.st_mtime_ns)
        else:
            files[orig] = (how, where, size, mtime)
    m["files"] = files
    m["cwd"] = os.path.join(point, "proj")
    m["output"] = os.path.join(m["cwd"], "target", profile, "deps", os.path.basename(m["output"]))
    os.makedirs(os.path.dirname(m["output"]), exist_ok=True)
    path = os.path.join(point, f"{profile}.marshal")
    with open(path, "wb") as f:
        marshal.dump(m, f)
    return path, m["cwd"], m["output"]


def one_fs(base, fstype, saved, args, env):
    rows = []
    with filesystem(base, fstype) as point:
        for profile, manifest in saved.items():
            path, cwd, out = moved(manifest, point, profile)
            only = [a for n in args.linkers.split(",") for a in ("--linker", n)] if args.linkers else []
            done = lw("bench", "--json", "--budget", str(args.budget), *only, path, cwd=cwd, env=env)
            assert done.returncode == 0, done.stderr
            [report] = json.loads(done.stdout)
            # As rustc asks for the link: its -B…/gcc-ld tells where rust-lld is.
            with open(path, "rb") as f:
                import marshal
                gcc_ld = os.path.join(os.path.dirname(marshal.loads(f.read())["rust_lld"]), "gcc-ld")
            after = json.loads(lw("explain", "--json", "--", f"-B{gcc_ld}", "-fuse-ld=lld", "-pie", "-o", out,
                                  cwd=cwd, env=env).stdout)["decision"]
            rows.append((fstype, profile, report, after))
    return rows


def ratio(report, linker):
    fresh = {r["linker"]: r for r in report["rows"] if r["variant"] == "fresh" and not r["failed"] and r["runs"] >= 3}
    if not fresh:
        raise SystemExit(f"no candidate was timed 3 times: {report}")
    best = min(r["median_ms"] for r in fresh.values())
    return (fresh[linker]["median_ms"] / best if linker in fresh else None), fresh, best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fs", default="ext4,btrfs,xfs,tmpfs")
    ap.add_argument("--budget", type=float, default=30.0)
    ap.add_argument("--modules", type=int, default=24)
    ap.add_argument("--funcs", type=int, default=120)
    ap.add_argument("--profiles", default="debug,release")
    ap.add_argument("--linkers", default="mold,wild,lld,rust-lld,bfd,gold",
                    help="candidates (default: all but linkwrap's own, which takes ~10x as long)")
    args = ap.parse_args()
    args.profiles = args.profiles.split(",")
    print(f"load before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="bench-choice-") as base:
        env = {**os.environ, "LINKWRAP_HOME": os.path.join(base, "lw-home")}
        env.pop("LINKWRAP_LINKER", None)
        # Built once (rustc takes minutes here); each filesystem then gets the saved links' inputs,
        # working directory and outputs, and replays them there.
        with filesystem(base, "ext4") as point:
            project, outputs = build_and_save(point, args, env)
            sys.path.insert(0, os.path.dirname(HERE))
            from linkwrap.record import save
            os.environ["LINKWRAP_HOME"] = env["LINKWRAP_HOME"]
            saved = {p: save.find([o], project)[0]["path"] for p, o in outputs.items()}
            keep = os.path.join(base, "saved")
            os.makedirs(keep)
            for p, path in list(saved.items()):   # the objects must outlive this mount: copy them off
                m_path, _, _ = moved(path, os.path.join(keep, p), p)
                saved[p] = m_path
        for fstype in args.fs.split(","):
            for fs, profile, report, after in one_fs(base, fstype, saved, args, env):
                static, fresh, best = ratio(report, report["default"])
                chosen, _, _ = ratio(report, after["linker"])
                vs_rustc = (fresh[after["linker"]]["median_ms"] / fresh["rust-lld"]["median_ms"]
                            if "rust-lld" in fresh and after["linker"] in fresh else None)
                cands = "  ".join(f"{n} {r['median_ms']:.0f} [{r['ci_low_ms']:.0f}-{r['ci_high_ms']:.0f}]"
                                  for n, r in sorted(fresh.items(), key=lambda kv: kv[1]["median_ms"]))
                f = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
                print(f"{fs:6} {profile:7} static {report['default']:8} {f(static)}  chosen {after['linker']:8} "
                      f"{f(chosen)}  vs rustc {f(vs_rustc)}  rounds {report['rounds']}  load {report['load_avg']:.2f}",
                      flush=True)
                print(f"       ms (median [95 % CI]): {cands}", flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
