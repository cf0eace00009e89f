"""What measuring costs a link: saving it for replay, reading the measurements, learning.

In this process (warm), medians of many calls:
  save.save()          a link shaped like a rustc debug link: OBJECTS fresh files saved by hard
                       link (new inodes every call, as after a rebuild) and the toolchain's rlibs
                       referenced by path (stable)
  measured.applicable  the link path's read of the measurement cache: no file, and ROWS x 3 results of
                       20 projects for a link of one of them and of another project
  learn.evidence+note  the per-output evidence read and rewritten after the link
End to end, interleaved pairs of real links through linkwrap-cc (hello world, mold):
  LINKWRAP_SAVE=1 vs not, and the difference of the medians.

    python3 benchmarks/bench_save.py [--objects 40] [--rows 660] [--pairs 21]
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
        order = [(base, plain), ({**base, "LINKWRAP_SAVE": "1"}, saving)]
        if i % 2:
            order.reverse()   # interleaved, the order alternating
        for env, into in order:
            t = time.perf_counter_ns()
            subprocess.run([cc, "hello.o", "-o", "hello"], cwd=tmp, env=env, check=True)
            if i >= 2:
                into.append((time.perf_counter_ns() - t) / 1e6)
    return statistics.median(plain), statistics.median(saving), \
        statistics.median(s - p for s, p in zip(saving, plain))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=40)
    ap.add_argument("--rows", type=int, default=660)
    ap.add_argument("--pairs", type=int, default=21)
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
        print(f"hello link through linkwrap-cc (mold), {a.pairs} interleaved pairs: {plain:.1f} ms, "
              f"with LINKWRAP_SAVE=1 {saving:.1f} ms (median of pair differences {diff:+.1f} ms)")
        print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
