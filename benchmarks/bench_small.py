"""Which linker pays on a small link? Generated C programs of growing input size, linked by every
installed linker through `cc -B<shim>` (the shim's `ld` is the linker, as linkwrap forces one
through the driver): alone, and eight at a time in a `ninja -j<CPUs>` build (a clean build of a
project with many small programs: its test binaries, its tools).

    python3 benchmarks/bench_small.py [--sizes 0,0.5,2,8,32] [--rounds 21] [--builds 9] [--cxx]

Sizes are MB of input objects (0: a hello world). Per size and linker: the median wall of a lone
link and its per-round ratio to GNU ld's (the driver's own default; median and 95 % CI of the
ratio, order statistics), the CPU (user+sys) a lone link takes (cc's, collect2's and the linker's,
a forking linker's worker included), and the median wall of the
parallel build with its ratio to GNU ld's. Commands interleave, each round in its own shuffled
order. Not a test: figures for docs/policy.md and the notes (with the machine's load).
"""
import argparse
import math
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

FUNC = """
int f{u}_{i}(int x) {{
    static const char name[] = "function {u}.{i} of a generated program";
    int acc = x;
    for (int k = 0; k < {i} % 7 + 2; k++)
        acc = acc * 31 + name[k % (sizeof name - 1)];
    return acc;
}}
"""


def program(d, mb, cxx=False):
    """A C program of about mb MB of objects (-g -O0, 8 translation units and a main; cxx: the main
    in C++, with iostream and std::string, linked by c++): -> objects."""
    os.makedirs(d)
    units = 8 if mb else 0
    funcs = max(1, int(mb * 1e6 / units / 650)) if units else 0  # ~0.65 kB of object per function
    for u in range(units):
        src = os.path.join(d, f"u{u}.c")
        with open(src, "w") as f:
            f.write("".join(FUNC.format(u=u, i=i) for i in range(funcs)))
            f.write(f"int run{u}(int x) {{ return f{u}_0(x) + f{u}_{funcs - 1}(x); }}\n")
    decls = "".join(f"int run{u}(int);\n" for u in range(units))
    calls = "".join(f"    acc += run{u}({u});\n" for u in range(units))
    if cxx:
        with open(os.path.join(d, "main.cpp"), "w") as f:
            f.write(f"#include <iostream>\n#include <string>\nextern \"C\" {{\n{decls}}}\nint main() {{\n"
                    f"    int acc = 0;\n{calls}    std::cout << std::to_string(acc) << std::endl;\n    return 0;\n}}\n")
    else:
        with open(os.path.join(d, "main.c"), "w") as f:
            f.write(f"#include <stdio.h>\n{decls}int main(void) {{\n    int acc = 0;\n{calls}"
                    '    printf("%d\\n", acc);\n    return 0;\n}\n')
    procs = []
    for name in sorted(os.listdir(d)):
        procs.append(subprocess.Popen(["c++" if name.endswith(".cpp") else "cc", "-g", "-O0", "-c", name], cwd=d))
        if len(procs) >= os.cpu_count():
            procs.pop(0).wait()
    for p in procs:
        p.wait()
    objects = sorted(n for n in os.listdir(d) if n.endswith(".o"))
    return objects, sum(os.path.getsize(os.path.join(d, o)) for o in objects)


def shims(work):
    """{name: -B directory} for each installed linker that links C (linkwrap's own discovery)."""
    from linkwrap.facts import linkers
    found = linkers.discover()
    out = {}
    for name in ("bfd", "mold", "wild", "lld", "gold"):
        info = found.get(name)
        if info is None:
            continue
        d = os.path.join(work, f"shim-{name}")
        os.makedirs(d)
        os.symlink(info.path, os.path.join(d, "ld"))
        # The driver flag linkwrap's policy gives wild < 0.9, which takes no gcc plugin.
        from linkwrap.choice.policy import WILD_PLUGIN_SINCE
        plugin = ["-fno-use-linker-plugin"] if name == "wild" and tuple(info.version or ()) < WILD_PLUGIN_SINCE else []
        out[f"{name} {'.'.join(map(str, info.version or ()))}".strip()] = ["-B" + d, *plugin]
    return out


def ratio_ci(num, den):
    """Median of the per-round ratios num/den and a 95 % interval from the order statistics."""
    s = sorted(a / b for a, b in zip(num, den))
    n = len(s)
    half = 1.96 * math.sqrt(n) / 2
    lo, hi = max(0, int(math.floor(n / 2 - half))), min(n - 1, int(math.ceil(n / 2 + half)))
    return statistics.median(s), s[lo], s[hi]


def subreaper() -> None:
    """mold and wild fork: their worker outlives the process cc waits for. As a child subreaper this
    process inherits it, and reap_all() takes its CPU into RUSAGE_CHILDREN, as the server's child does."""
    import ctypes
    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def reap_all() -> None:
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def lone(d, objects, sh, rounds, order, driver):
    wall = {k: [] for k in sh}
    cpu = {k: [] for k in sh}
    for r in range(rounds + 1):
        names = list(sh)
        order.shuffle(names)
        for k in names:
            t = time.perf_counter()
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([driver, *sh[k], *objects, "-o", "out-" + k.split()[0]], cwd=d, check=True)
            wall_ms = (time.perf_counter() - t) * 1000  # what the build waits for: the worker may go on
            reap_all()
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if r:  # the first round warms the page cache
                wall[k].append(wall_ms)
                cpu[k].append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    return wall, cpu


def parallel(d, objects, sh, builds, order, driver, copies=8):
    for k, b in sh.items():
        with open(os.path.join(d, f"{k.split()[0]}.ninja"), "w") as f:
            f.write(f"rule link\n  command = {driver} {' '.join(b)} $in -o $out\n")
            for c in range(copies):
                f.write(f"build par-{k.split()[0]}/p{c}: link {' '.join(objects)}\n")
    wall = {k: [] for k in sh}
    for r in range(builds + 1):
        names = list(sh)
        order.shuffle(names)
        for k in names:
            shutil.rmtree(os.path.join(d, f"par-{k.split()[0]}"), ignore_errors=True)
            t = time.perf_counter()
            subprocess.run(["ninja", f"-j{os.cpu_count()}", "-f", f"{k.split()[0]}.ninja"], cwd=d, check=True,
                           stdout=subprocess.DEVNULL)
            if r:
                wall[k].append((time.perf_counter() - t) * 1000)
            reap_all()
    return wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="0,0.5,2,8,32", help="MB of input objects, comma-separated")
    ap.add_argument("--rounds", type=int, default=21, help="interleaved rounds of lone links")
    ap.add_argument("--builds", type=int, default=9, help="interleaved rounds of the parallel build")
    ap.add_argument("--cxx", action="store_true", help="a C++ main (iostream), linked by c++")
    opts = ap.parse_args()
    driver = "c++" if opts.cxx else "cc"
    order = random.Random(3)
    subreaper()
    with tempfile.TemporaryDirectory(prefix="bench-small-") as work:
        sh = shims(work)
        base = next(k for k in sh if k.startswith("bfd"))
        la = os.getloadavg()
        print(f"load {la[0]:.1f} {la[1]:.1f} {la[2]:.1f}, {os.cpu_count()} CPUs; {opts.rounds} lone rounds, "
              f"{opts.builds} builds of 8 links (ninja -j{os.cpu_count()}); ratios to {base}, 95 % CI")
        for mb in (float(s) for s in opts.sizes.split(",")):
            d = os.path.join(work, f"p{mb:g}")
            objects, size = program(d, mb, opts.cxx)
            wall, cpu = lone(d, objects, sh, opts.rounds, order, driver)
            par = parallel(d, objects, sh, opts.builds, order, driver)
            print(f"{size / 1e6:6.2f} MB of objects ({len(objects)} files)")
            for k in sh:
                r, lo, hi = ratio_ci(wall[k], wall[base])
                pr, plo, phi = ratio_ci(par[k], par[base])
                print(f"    {k:12s} lone {statistics.median(wall[k]):7.1f} ms  x{r:.2f} ({lo:.2f}-{hi:.2f})  "
                      f"cpu {statistics.median(cpu[k]):7.1f} ms   8 in parallel {statistics.median(par[k]):7.0f} ms  "
                      f"x{pr:.2f} ({plo:.2f}-{phi:.2f})")
            shutil.rmtree(d)
        la = os.getloadavg()
        print(f"load after {la[0]:.1f} {la[1]:.1f} {la[2]:.1f}")


if __name__ == "__main__":
    main()
