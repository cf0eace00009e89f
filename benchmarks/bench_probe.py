"""How much the probe adds to one link: median warm cost of probe.snapshot() and of each fact.

    python benchmarks/bench_probe.py [--runs 500]

Warm = same process, after a few calls (kernel caches hot, modules imported).
A link runs in a fresh process, so the one-off costs a link pays once are
printed too, measured in fresh interpreters: importing probe, the first
snapshot (it imports fcntl), and the _ctypes set-up that only outputs of at
least CACHE_PROBE_MIN_BYTES pay (for cached_fraction). Budget: snapshot()
<= 2 ms warm.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import median_us  # noqa: E402

from linkwrap.request import args

from linkwrap.facts import probe
from linkwrap.facts import output_file
from linkwrap.facts import filesystems
from linkwrap.facts import cgroups as cgroups_facts


def fresh_us(code, env, runs=15):
    """Median of a timing printed (in ns) by a fresh interpreter running code."""
    out = []
    subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True)  # writes .pyc
    for _ in range(runs):
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                              check=True)
        out.append(int(proc.stdout.split()[-1]))
    return statistics.median(out) / 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    runs = parser.parse_args().runs

    with tempfile.TemporaryDirectory() as d:
        inputs = []
        for i in range(100):  # a mid-sized Rust link names ~100 objects and rlibs
            name = os.path.join(d, f"in{i}.o")
            with open(name, "wb") as f:
                f.write(b"x" * 1000)
            inputs.append(name)
        small = os.path.join(d, "small")
        with open(small, "wb") as f:
            f.write(b"x" * (1 << 20))
        big = os.path.join(d, "big")  # cached_fraction is measured from 8 MiB on
        with open(big, "wb") as f:
            f.write(os.urandom(32 << 20))
        missing = os.path.join(d, "target", "debug", "app")

        req_missing = args.parse(["-o", missing, *inputs], cwd=d)
        req_small = args.parse(["-o", small, *inputs], cwd=d)
        req_big = args.parse(["-o", big, *inputs], cwd=d)
        mountinfo = probe.read_mountinfo()
        cgroups = probe.cgroup_dirs(mountinfo)
        # A container host: the same table behind 1000 overlay mounts.
        crowded = "".join(
            f"{i} 27 0:{i} / /var/lib/docker/overlay2/{i:064x}/merged rw,relatime shared:{i} - overlay "
            f"overlay rw,lowerdir=/var/lib/docker/overlay2/l/A:/var/lib/docker/overlay2/l/B,"
            f"upperdir=/var/lib/docker/overlay2/{i:064x}/diff,workdir=/var/lib/docker/overlay2/{i:064x}/work\n"
            for i in range(1000, 2000)) + mountinfo
        sub = os.path.join(d, "sub")
        os.mkdir(sub)
        fd_small = os.open(small, os.O_RDONLY)
        fd_big = os.open(big, os.O_RDONLY)

        rows = [
            ("snapshot(): output missing, 100 inputs", lambda: probe.snapshot(req_missing)),
            ("snapshot(): 1 MiB output exists, 100 inputs", lambda: probe.snapshot(req_small)),
            ("snapshot(): 32 MiB output (cachestat), 100 inputs", lambda: probe.snapshot(req_big)),
            ("  read_mountinfo()", probe.read_mountinfo),
            ("  existing_dir(missing output)", lambda: probe.existing_dir(missing)),
            ("  filesystem(dir, mountinfo)", lambda: probe.filesystem(d, mountinfo)),
            ("  filesystem(dir, +1000 mounts): st_dev found", lambda: probe.filesystem(d, crowded)),
            ("  filesystem(dir, +1000 mounts): prefix (btrfs subvol)",
             lambda: filesystems._longest_prefix(filesystems._mounts_holding(crowded, sub), sub)),
            ("  mounts() full parse, +1000 mounts (not on the link path)", lambda: filesystems.mounts(crowded)),
            ("  kernel_version()", probe.kernel_version),
            ("  output_facts(missing)", lambda: probe.output_facts(missing)),
            ("  output_facts(1 MiB file)", lambda: probe.output_facts(small)),
            ("  output_facts(32 MiB file)", lambda: probe.output_facts(big)),
            ("    held_by_others(fd) (write lease)", lambda: output_file.held_by_others(fd_small)),
            ("    cached_fraction(fd, 32 MiB) (cachestat)", lambda: output_file.cached_fraction(fd_big, 32 << 20)),
            ("    pages_cached_mincore(fd, 32 MiB) (fallback)",
             lambda: output_file.pages_cached_mincore(fd_big, 32 << 20)),
            ("  input_bytes(100 inputs)", lambda: probe.input_bytes(req_small)),
            ("  cgroup_dirs(mountinfo)", lambda: probe.cgroup_dirs(mountinfo)),
            ("  cgroup_dirs(+1000 mounts)", lambda: probe.cgroup_dirs(crowded)),
            ("  cpus(cgroups)", lambda: probe.cpus(cgroups)),
            ("  mem_available_mb()", probe.mem_available_mb),
            ("  mem_limit_mb(cgroups)", lambda: cgroups_facts.mem_limit_mb(cgroups)),
            ("  thp_mode()", probe.thp_mode),
            ("  jobserver(environ)", lambda: probe.jobserver(os.environ)),
        ]
        print(f"probe cost, warm, {runs} runs each (median / p90, microseconds); "
              f"{len(filesystems.mounts(mountinfo))} mounts, kernel {os.uname().release}, {os.cpu_count()} CPUs")
        width = max(len(label) for label, _ in rows)
        for label, fn in rows:
            med, p90 = median_us(fn, runs)
            print(f"{label:<{width}}  {med:8.1f}  {p90:8.1f}")
        os.close(fd_small)
        os.close(fd_big)

        print("\none-off costs in a fresh interpreter (median of 15, microseconds):")
        pre = "import time; t = time.perf_counter_ns(); "
        once = [
            ("import linkwrap.facts.probe", pre + "from linkwrap.facts import probe; "
                                              "print(time.perf_counter_ns() - t)"),
            ("first snapshot(), 1 MiB output",
             "from linkwrap.request import args; from linkwrap.facts import probe; import time; "
             f"r = args.parse(['-o', {small!r}]); t = time.perf_counter_ns(); probe.snapshot(r); "
             "print(time.perf_counter_ns() - t)"),
            ("first snapshot(), 32 MiB output (sets up _ctypes)",
             "from linkwrap.request import args; from linkwrap.facts import probe; import time; "
             f"r = args.parse(['-o', {big!r}]); t = time.perf_counter_ns(); probe.snapshot(r); "
             "print(time.perf_counter_ns() - t)"),
            ("import ctypes (what _syscall avoids)", pre + "import ctypes; print(time.perf_counter_ns() - t)"),
        ]
        # Installed packages have .pyc files; this sandbox sets PYTHONDONTWRITEBYTECODE,
        # so keep bytecode in a private prefix rather than compile on every import.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = os.path.join(d, "pycache")
        for label, code in once:
            print(f"{label:<{width}}  {fresh_us(code, env):8.1f}")
        print("(this sandbox's site .pth pre-imports enum, re, struct... in every interpreter, "
              "so fresh-process figures here are lower than on a clean Python)")


if __name__ == "__main__":
    main()
