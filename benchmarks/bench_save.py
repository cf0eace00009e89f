"""What measuring costs a link: saving it for replay, reading the measurements, learning.

In this process (warm), medians of many calls:
  save.save()          a link shaped like a rustc debug link: OBJECTS fresh files saved by hard
                       link (new inodes every call, as after a rebuild) and the toolchain's rlibs
                       referenced by path (stable)
  measured.applicable  the link path's read of the measurement cache: no file, and ROWS x 3 results of
                       20 projects for a link of one of them and of another project
  learn.evidence+note  the per-output evidence read and rewritten after the link
End to end, interleaved pairs of real links through linkwrap-cc (hello world, mold):
  saving (the default) vs LINKWRAP_SAVE=0, and the median of the pair differences.
With --rust MODULES FUNCS, the same on genproject's generated Rust program (16 34: ~150 MB of inputs,
measurements.md's "generated std-only program"): first a real `cargo build` through linkwrap-cc with a
fresh LINKWRAP_HOME (saving by default) and the disk its saved link holds once rustc has deleted its
objects; then interleaved pairs of rustc's own link (wild forced, the fastest here, so the cost shows),
each preceded by a rewrite of its objects into new inodes, as a rebuild leaves them.

    python3 benchmarks/bench_save.py [--objects 40] [--rows 660] [--pairs 21] [--rust 16 34]
"""
import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from timing import median_us  # noqa: E402


def sysroot_rlibs():
    root = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True).stdout.strip()
    return sorted(glob.glob(os.path.join(root, "lib", "rustlib", "*", "lib", "*.rlib")))


def bench_save(tmp, objects, runs=30):
    from linkwrap.record import save
    from linkwrap.request import args

    class Done:
        wall_ms, linker = 100.0, "rust-lld"

    rlibs = sysroot_rlibs()
    samples = []
    for i in range(runs + 3):
        d = os.path.join(tmp, f"link{i}")
        os.mkdir(d)
        files = []
        for j in range(objects):
            p = os.path.join(d, f"app.cgu{j}.rcgu.o")
            with open(p, "wb") as f:
                f.write(b"\0" * 4096)
            files.append(p)
        out = os.path.join(d, "app")
        with open(out, "wb") as f:
            f.write(b"\x7fELF" + b"\0" * 60)
        req = args.parse([*files, *rlibs, "-o", out], driver="cc", environ={}, cwd=d)
        t = time.perf_counter_ns()
        save.save(req, Done())
        if i >= 3:
            samples.append((time.perf_counter_ns() - t) / 1e6)
    return statistics.median(samples), len(rlibs)


def bench_measured(tmp, rows):
    from linkwrap.evidence import measured
    from linkwrap.request import args
    from linkwrap.facts import linkers, probe
    req = args.parse(["main.o", "-o", os.path.join(tmp, "out", "app")], driver="cc", environ={}, cwd=tmp)
    facts = probe.snapshot(req)
    found = linkers.discover(req)
    empty = median_us(lambda: measured.applicable(req, facts, found), 200)[0]
    rowlist = []
    for i in range(rows):  # 20 projects, this link's among them
        project = tmp if i % 20 == 0 else f"/p{i % 20}"
        for name in ("mold", "lld", "bfd"):
            rowlist.append(measured.Row(measured.machine_key(facts.cpus), facts.fs, None, project,
                                        f"{project}/out{i}", "pie", 1 << 20, name, name, "/usr/bin/" + name, 1,
                                        "fresh", 100.0, 99.0, 101.0, 10, 1000, "2026-11-30", None))
    measured.add_rows(rowlist)
    own = median_us(lambda: measured.applicable(req, facts, found), 200)[0]
    other_req = args.parse(["main.o", "-o", "/elsewhere/app"], driver="cc", environ={}, cwd="/elsewhere")
    other = median_us(lambda: measured.applicable(other_req, facts, found), 200)[0]
    return empty, own, other, len(measured.load_rows()), len(measured.load_rows(tmp))


def bench_learn(tmp):
    from linkwrap.evidence import learn
    from linkwrap.request import args
    from linkwrap.facts import linkers
    from linkwrap.choice import policy
    req = args.parse(["main.o", "-o", os.path.join(tmp, "app")], driver="cc", environ={}, cwd=tmp)
    info = linkers.discover(req)["mold"]
    decision = policy.Decision(info, (), (), policy.FRESH, ("mold: first installed",))

    class Out:
        returncode, wall_ms = 0, 50.0

    def both():
        learn.evidence(req)
        learn.note(req, decision, Out(), 2)
    return median_us(both, 300)[0]


def bench_end_to_end(tmp, pairs):
    cc = os.path.join(os.path.dirname(sys.executable), "linkwrap-cc")
    src = os.path.join(tmp, "hello.c")
    with open(src, "w") as f:
        f.write('#include <stdio.h>\nint main(void){puts("hi");return 0;}\n')
    subprocess.run(["cc", "-c", src, "-o", os.path.join(tmp, "hello.o")], check=True)
    base = {**os.environ, "LINKWRAP_HOME": os.path.join(tmp, "home"), "LINKWRAP_LINKER": "mold"}
    plain, saving = [], []
    for i in range(pairs + 2):
        order = [({**base, "LINKWRAP_SAVE": "0"}, plain), (base, saving)]
        if i % 2:
            order.reverse()   # interleaved, the order alternating
        for env, into in order:
            t = time.perf_counter_ns()
            subprocess.run([cc, "hello.o", "-o", "hello"], cwd=tmp, env=env, check=True)
            if i >= 2:
                into.append((time.perf_counter_ns() - t) / 1e6)
    return statistics.median(plain), statistics.median(saving), \
        statistics.median(s - p for s, p in zip(saving, plain))


def store_bytes(home):
    """(bytes of saved objects, of those held by the store alone: the disk saving costs)."""
    total = alone = 0
    from linkwrap.evidence.saved import saved_dir
    for top, _, files in os.walk(saved_dir(home)):
        for name in files:
            st = os.lstat(os.path.join(top, name))
            if "objects" in top:
                total += st.st_size
                alone += st.st_size if st.st_nlink == 1 else 0
    return total, alone


def renew(paths):
    """Each file rewritten into a new inode (same bytes, same name): what a rebuild leaves."""
    for p in paths:
        tmp = p + ".renew"
        with open(p, "rb") as src, open(tmp, "wb") as dst:
            while chunk := src.read(1 << 22):
                dst.write(chunk)
        os.replace(tmp, p)


def bench_rust(tmp, modules, funcs, pairs):
    import genproject
    from linkwrap.record import save
    home = os.path.join(tmp, "rust-home")
    project = genproject.rust(os.path.join(tmp, "gen"), modules, funcs)
    cc = os.path.join(os.path.dirname(sys.executable), "linkwrap-cc")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "LINKWRAP_SAVE", "LINKWRAP_LINKER")}
    env.update(LINKWRAP_HOME=home, CARGO_TARGET_DIR=os.path.join(tmp, "gen-target"))
    env[f"CARGO_TARGET_{genproject.host().replace('-', '_').upper()}_LINKER"] = cc
    subprocess.run(["cargo", "build", "-q"], cwd=project, env=env, check=True)
    os.environ["LINKWRAP_HOME"] = home
    saved = [m for m in save.all_saved() if "genbig" in os.path.basename(m["output"])]
    total, alone = store_bytes(home)
    if saved:
        m = saved[0]
        objs = sum(1 for how, *_ in m["files"].values() if how == "object")
        print(f"rust {modules}x{funcs}: cargo build saved {m['output']} ({m['input_bytes'] / 1e6:.0f} MB of inputs, "
              f"{objs} objects hard-linked, {m['copied_bytes']} bytes copied) in {m['save_ms']:.1f} ms on the link path; "
              f"store {total / 1e6:.1f} MB, {alone / 1e6:.1f} MB held by it alone once rustc deleted its objects")
    argv, link_env, cwd = genproject.rust_link(project, target_dir=env["CARGO_TARGET_DIR"],
                                               env={k: v for k, v in env.items() if not k.endswith("_LINKER")})
    objects = [os.path.join(cwd, a) for a in argv if a.endswith(".o") and os.path.exists(os.path.join(cwd, a))]
    base = {**env, **link_env, "LINKWRAP_LINKER": "wild"}
    plain, saving = [], []
    for i in range(pairs + 2):
        order = [({**base, "LINKWRAP_SAVE": "0"}, plain), (base, saving)]
        if i % 2:
            order.reverse()
        for e, into in order:
            renew(objects)
            t = time.perf_counter_ns()
            subprocess.run([cc, *argv], cwd=cwd, env=e, check=True)
            if i >= 2:
                into.append((time.perf_counter_ns() - t) / 1e6)
    diff = statistics.median(s - p for s, p in zip(saving, plain))
    print(f"rust link through linkwrap-cc (wild), {pairs} interleaved pairs, {len(objects)} objects renewed "
          f"each time: LINKWRAP_SAVE=0 {statistics.median(plain):.1f} ms, saving {statistics.median(saving):.1f} ms "
          f"(median of pair differences {diff:+.1f} ms)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=40)
    ap.add_argument("--rows", type=int, default=660)
    ap.add_argument("--pairs", type=int, default=21)
    ap.add_argument("--rust", type=int, nargs=2, metavar=("MODULES", "FUNCS"),
                    help="also genproject's Rust program of this size (16 34: ~150 MB of inputs)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-save-") as tmp:
        os.environ["LINKWRAP_HOME"] = os.path.join(tmp, "home")
        print(f"load {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs")
        ms, rlibs = bench_save(tmp, a.objects)
        print(f"save.save: {ms:.2f} ms median for {a.objects} fresh objects hard-linked + {rlibs} stable rlibs referenced")
        empty, own, other, n, shard = bench_measured(tmp, a.rows)
        print(f"measured.applicable: {empty:.1f} us with no cache file; with {n} results of 20 projects, "
              f"{own:.1f} us for a link of a measured project ({shard} in its shard), "
              f"{other:.1f} us for another project's")
        print(f"learn.evidence + learn.note: {bench_learn(tmp):.1f} us per link")
        plain, saving, diff = bench_end_to_end(tmp, a.pairs)
        print(f"hello link through linkwrap-cc (mold), {a.pairs} interleaved pairs: LINKWRAP_SAVE=0 {plain:.1f} ms, "
              f"saving (the default) {saving:.1f} ms (median of pair differences {diff:+.1f} ms)")
        if a.rust:
            bench_rust(tmp, *a.rust, a.pairs)
        print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
