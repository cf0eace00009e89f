"""Output write modes on a large output: in-place vs fresh, per linker, warm and cold.

Input: a .data object of --size-mib MiB (objcopy -I binary of random bytes; 1024 by
default) plus an entry point, linked -nostdlib -static with mold (--no-fork), lld-16
and GNU ld, through linkwrap's own run.execute with a FRESH or an IN_PLACE
decision (what linkwrap-cc does after the policy), and, for reference, the same
driver command run directly, as the linker would do it alone.

Output: one line per (linker, cache state, mode) with the median wall time over
--runs runs and whether the old inode was reused, then the ratios fresh / in-place.
The output path exists before every run (the previous run's output).

Every run starts after a sync (not timed), so no writeback of the previous
output is in flight. Cache states:
  warm        the old output and the inputs are in the page cache;
  cold        `sync; echo 3 > /proc/sys/vm/drop_caches` before each run (needs root):
              inputs and old output both come from disk;
  cold-out    only the old output's pages are dropped (fsync + POSIX_FADV_DONTNEED),
              the inputs stay cached: isolates reading the old output back.

Usage: python benchmarks/bench_output.py [--size-mib 1024] [--runs 5] [--cold-runs 3] [--dir DIR]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from linkwrap.request import args as args_mod
from linkwrap.facts import linkers
from linkwrap.run import run
from linkwrap.choice.policy import FRESH, IN_PLACE, Decision

LINKER_FLAGS = {"mold": ("--no-fork",), "lld": (), "bfd": ()}


def make_inputs(d, size_mib):
    big_bin = os.path.join(d, "big.bin")
    with open(big_bin, "wb") as f:
        chunk = os.urandom(1 << 20)
        for i in range(size_mib):
            # A different MiB each time (cheaply): no linker or fs can dedupe it.
            f.write(i.to_bytes(8, "little") + chunk[8:])
    subprocess.run(["objcopy", "-I", "binary", "-O", "elf64-x86-64", "-B", "i386:x86-64",
                    "big.bin", "big.o"], cwd=d, check=True)
    os.unlink(big_bin)
    subprocess.run(["as", "-o", os.path.join(d, "start.o"), "-"], input=b".globl _start\n_start: jmp _start\n",
                   check=True)
    return [os.path.join(d, "big.o"), os.path.join(d, "start.o")]


def identity(path):
    out = subprocess.run(["stat", "-c", "%i %w", path], capture_output=True, text=True)
    return out.stdout.strip()


def drop_all_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def drop_output_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def one_run(mode, req, info, out, env):
    """-> (wall ms, inode reused?)"""
    before = identity(out)
    if mode == "alone":
        argv = run.command(req, Decision(info, LINKER_FLAGS[info.name], (), FRESH, ()), out)
        t = time.perf_counter()
        code = run.spawn(argv, env)[0]
        wall = (time.perf_counter() - t) * 1000
    else:
        d = Decision(info, LINKER_FLAGS[info.name], (), IN_PLACE if mode == "in-place" else FRESH, ())
        t = time.perf_counter()
        outcome = run.execute(req, d, env)
        wall = (time.perf_counter() - t) * 1000
        code = outcome.returncode
        if mode == "in-place" and outcome.write_mode != IN_PLACE:
            raise SystemExit(f"{info.name}: in-place was not applied ({outcome.write_mode})")
    if code != 0:
        raise SystemExit(f"{info.name} {mode}: link failed ({code})")
    return wall, identity(out) == before


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size-mib", type=int, default=1024)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--cold-runs", type=int, default=3)
    p.add_argument("--dir", default=None, help="where to link (default: a temporary dir under /var/tmp)")
    p.add_argument("--linkers", default="mold,lld,bfd")
    a = p.parse_args(argv)

    found = linkers.discover()
    names = [n for n in a.linkers.split(",") if n]
    missing = [n for n in names if n not in found]
    if missing:
        raise SystemExit(f"not installed: {', '.join(missing)}")
    env = run.linker_environment(os.environ)
    with tempfile.TemporaryDirectory(dir=a.dir or "/var/tmp", prefix="bench-output-") as d:
        t = time.perf_counter()
        inputs = make_inputs(d, a.size_mib)
        fs = subprocess.run(["stat", "-f", "-c", "%T", d], capture_output=True, text=True).stdout.strip()
        print(f"# {a.size_mib} MiB .data output in {d} ({fs}), inputs made in {time.perf_counter() - t:.1f} s; "
              f"kernel {os.uname().release}; medians of {a.runs} warm / {a.cold_runs} cold runs")
        print(f"{'linker':6} {'cache':8} {'mode':9} {'median ms':>10} {'min':>8} {'max':>8}  inode reused")
        results = {}
        for name in names:
            info = found[name]
            out = os.path.join(d, f"out-{name}")
            req = args_mod.parse([*"-nostdlib -static".split(), *inputs, "-o", out], "cc", cwd=d)
            run.execute(req, Decision(info, LINKER_FLAGS[name], (), FRESH, ()), env)  # the first output
            for cache, runs in (("warm", a.runs), ("cold", a.cold_runs), ("cold-out", a.cold_runs)):
                times = {m: [] for m in ("in-place", "fresh", "alone")}
                reused = {m: set() for m in times}
                for _ in range(runs):
                    for mode in times:  # interleaved, so drift hits every mode alike
                        # Every run starts with no writeback in flight (the last run's
                        # 1 GiB of dirty pages would otherwise throttle the next one).
                        os.sync()
                        if cache == "cold":
                            drop_all_caches()
                        elif cache == "cold-out":
                            drop_output_cache(out)
                        wall, same = one_run(mode, req, info, out, env)
                        times[mode].append(wall)
                        reused[mode].add(same)
                for mode, ts in times.items():
                    med = statistics.median(ts)
                    results[(name, cache, mode)] = med
                    label = {frozenset({True}): "yes", frozenset({False}): "no"}.get(frozenset(reused[mode]), "mixed")
                    print(f"{name:6} {cache:8} {mode:9} {med:10.0f} {min(ts):8.0f} {max(ts):8.0f}  {label}",
                          flush=True)
            os.unlink(out)
        print("\n# ratios (fresh / in-place; >1: in-place faster) and per-GiB difference")
        gib = a.size_mib / 1024
        for name in names:
            for cache in ("warm", "cold", "cold-out"):
                ip, fr = results[(name, cache, "in-place")], results[(name, cache, "fresh")]
                al = results[(name, cache, "alone")]
                print(f"{name:6} {cache:8} fresh/in-place {fr / ip:5.2f}  "
                      f"(fresh - in-place: {(fr - ip) / gib:+7.0f} ms/GiB)  alone/in-place {al / ip:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
