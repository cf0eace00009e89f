"""Benchmark linkwrap.ld against GNU ld: wall time and peak RSS, as ratios, medians of N runs.

Links go through the gcc driver both ways (GNU ld directly, linkwrap.ld via a
-B shim), so both figures include the same ~15-20 ms of driver overhead.
Peak RSS is the maximum over the driver -> collect2 -> linker chain (wait4).
Cases: the test corpus (tests/ld/cases) as static and PIE, and one larger
generated C program (N files x M functions) linked -static. Also prints
linkwrap.ld's own per-pass times (--time) for the large link: what dominates.

    python benchmarks/bench_ld.py [--runs 5] [--files 40] [--funcs 100]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "ld"))
import corpus  # noqa: E402


def timed(cmd, cwd=None):
    """-> (wall_ms, peak_rss_kb) of cmd and everything it waited for."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t0) * 1000
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode()
    p.stderr.close()
    if p.returncode:
        raise SystemExit(f"link failed: {' '.join(cmd)}\n{err}")
    return wall, ru.ru_maxrss


def link_cmd(driver, objs, archive, mode, out, shim=None, extra=()):
    cmd = [driver] + ([f"-B{shim}"] if shim else []) + [*corpus.MODES[mode], *objs]
    return cmd + ([archive] if archive else []) + ["-pthread", "-o", out, *extra]


def measure(driver, objs, archive, mode, work, shim, runs):
    ref_t, ref_m, lw_t, lw_m = [], [], [], []
    for i in range(runs):
        w, m = timed(link_cmd(driver, objs, archive, mode, os.path.join(work, f"ref-{mode}"), None))
        ref_t.append(w)
        ref_m.append(m)
        w, m = timed(link_cmd(driver, objs, archive, mode, os.path.join(work, f"lw-{mode}"), shim))
        lw_t.append(w)
        lw_m.append(m)
    med = statistics.median
    return med(ref_t), med(lw_t), med(ref_m), med(lw_m)


def generate_big(root, files, funcs):
    """A multi-file C program with files*funcs functions, calls across files, data tables and strings."""
    src = os.path.join(root, "big")
    os.makedirs(src, exist_ok=True)
    for f in range(files):
        lines = ["#include <stdio.h>", "#include <string.h>"]
        nxt = (f + 1) % files
        for k in range(funcs):
            lines.append(f"int f{nxt}_{k}(int);")
        lines.append(f"static const char *names_{f}[] = {{" + ", ".join(f'"name_{f}_{k}"' for k in range(funcs)) + "};")
        lines.append(f"int table_{f}[{funcs}];")
        for k in range(funcs):
            lines.append(f"int f{f}_{k}(int x) {{ if (x <= 0) return (int)strlen(names_{f}[{k}]) + table_{f}[{k}];"
                         f" table_{f}[{k}] += x; return f{nxt}_{(k * 7 + 1) % funcs}(x - 1) + {k}; }}")
        with open(os.path.join(src, f"m{f}.c"), "w") as fh:
            fh.write("\n".join(lines) + "\n")
    with open(os.path.join(src, "main.c"), "w") as fh:
        fh.write("#include <stdio.h>\nint f0_0(int);\n"
                 "int main(void) { int s = 0; for (int i = 0; i < 100; i++) s += f0_0(i % 50);"
                 " printf(\"%d\\n\", s); return 0; }\n")
    names = sorted(n for n in os.listdir(src) if n.endswith(".c"))
    procs = []
    for n in names:
        procs.append(subprocess.Popen(["gcc", "-O1", "-c", n, "-o", n[:-2] + ".o"], cwd=src))
        if len(procs) >= 2:
            procs.pop(0).wait()
    for p in procs:
        p.wait()
    return src, [os.path.join(src, n[:-2] + ".o") for n in names]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument("--funcs", type=int, default=100)
    ap.add_argument("--cases", nargs="*", default=corpus.CASES)
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="bench-ld-")
    shim = corpus.shim_dir(root)
    print(f"{'link':34} {'GNU ld ms':>9} {'lw.ld ms':>9} {'time x':>7} {'GNU KB':>8} {'lw KB':>8} {'RSS x':>6}")
    ratios_t, ratios_m = [], []
    for case in a.cases:
        work = os.path.join(root, case)
        driver, objs, archive = corpus.compile_case(case, work)
        for mode in ("static", "pie"):
            rt, lt, rm, lm = measure(driver, objs, archive, mode, work, shim, a.runs)
            ratios_t.append(lt / rt)
            ratios_m.append(lm / rm)
            print(f"{case + ' ' + mode:34} {rt:9.0f} {lt:9.0f} {lt / rt:7.2f} {rm:8d} {lm:8d} {lm / rm:6.2f}")
    print(f"{'corpus median':34} {'':9} {'':9} {statistics.median(ratios_t):7.2f} {'':8} {'':8} "
          f"{statistics.median(ratios_m):6.2f}")
    src, objs = generate_big(root, a.files, a.funcs)
    label = f"generated {a.files}x{a.funcs} fns static"
    rt, lt, rm, lm = measure("gcc", objs, None, "static", src, shim, a.runs)
    print(f"{label:34} {rt:9.0f} {lt:9.0f} {lt / rt:7.2f} {rm:8d} {lm:8d} {lm / rm:6.2f}")
    a1 = subprocess.run([os.path.join(src, "ref-static")], capture_output=True, text=True).stdout
    a2 = subprocess.run([os.path.join(src, "lw-static")], capture_output=True, text=True).stdout
    print(f"  outputs agree: {a1 == a2} ({a1.strip()})")
    r = subprocess.run(link_cmd("gcc", objs, None, "static", os.path.join(src, "lw-static"), shim,
                                ["-Wl,--time"]), capture_output=True, text=True)
    print("  linkwrap.ld passes (ms):")
    for line in r.stderr.splitlines():
        print("   ", line.split(":", 1)[1].strip())


if __name__ == "__main__":
    main()
