"""Benchmark linkwrap.ld against GNU ld: wall time and peak RSS, as ratios, medians of N runs.

Links go through the gcc driver both ways (GNU ld directly, linkwrap.ld via a
-B shim), so both figures include the same ~15-20 ms of driver overhead.
Peak RSS is the maximum over the driver -> collect2 -> linker chain (wait4).
Cases: the test corpus (tests/ld/cases) as static and PIE, and one larger
generated C program (N files x M functions) linked -static. Also prints
linkwrap.ld's own per-pass times (--time) for the large link: what dominates.

    python benchmarks/bench_ld.py [--runs 5] [--files 40] [--funcs 100]
    python benchmarks/bench_ld.py --behaviours        # the behaviour corpus: GNU ld vs linkwrap.ld
    python benchmarks/bench_ld.py --passes-vs /work/main [--runs 15]
                                  # per-pass time of this tree's linker against another tree's,
                                  # interleaved in one run (what the allow-list checks cost)
    python benchmarks/bench_ld.py --parse-vs /work/main [--runs 9]
                                  # parse every libc.a member and decode its relocations, warm,
                                  # in a process per tree, the trees alternating
    python benchmarks/bench_ld.py --rust [--modules 16 --rust-funcs 34] [--runs 7] [--baseline /work/main]
                                  # the generated Rust project's debug link (~150 MB of inputs):
                                  # GNU ld, rust-lld and linkwrap.ld (and another tree's) interleaved,
                                  # wall and peak RSS medians, ratios with a 95 % CI, per-pass times
    python benchmarks/bench_ld.py --rust --passes-vs /work/main [--runs 7]
                                  # the same per-pass comparison on the Rust debug link ('process':
                                  # the whole linker process, start-up and exit included)
    python benchmarks/bench_ld.py --rust --relocs-ab [--runs 7]
                                  # in one process: the relocation pass with the per-relocation loop
                                  # against the bulk (numpy) path, interleaved (what numpy buys)
"""
import argparse
import atexit
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "ld"))
sys.path.insert(0, HERE)
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


def load():
    return open("/proc/loadavg").read().split()[:3]


def behaviours_table(root):
    """Each behaviour case linked by GNU ld and by linkwrap.ld -> counts by outcome."""
    import behaviours
    shim = corpus.shim_dir(root)
    counts = {"gnu_pass": 0, "lw_pass": 0, "unsupported": 0, "wrong": 0}
    for case in behaviours.CASES:
        s = behaviours.spec(case)
        work = os.path.join(root, "b-" + case)
        args = behaviours.build(case, work)
        outcome = []
        for name, extra in (("ref", []), ("lw", [f"-B{shim}"])):
            r = subprocess.run([s["driver"], *extra, *args, "-o", name], cwd=work, capture_output=True, text=True)
            if r.returncode:
                outcome.append("unsupported" if "not supported yet" in r.stderr else "error")
                continue
            path = os.path.join(work, name)
            facts = behaviours.facts(path, s["symbols"])
            if s["output"] == "partial":      # a -r: GNU ld finishes it into the program run
                subprocess.run([s["driver"], path, "-o", path + ".prog"], cwd=work, check=True)
                path += ".prog"
            elif s["mode"] == "shared":      # a shared object: GNU ld links the case's program against it
                path = behaviours.program_using(s, path, work)
            run = behaviours.run(path, work)
            outcome.append(("pass" if (run.stdout, run.returncode) == (s["stdout"], 0) else "wrong", facts))
        ref, lw = outcome
        ok_ref = ref == "pass" or (isinstance(ref, tuple) and ref[0] == "pass")
        counts["gnu_pass"] += ok_ref
        if isinstance(lw, tuple):
            same = all(lw[1][f] == ref[1][f] for f in s["facts"]) if isinstance(ref, tuple) else True
            verdict = "pass" if lw[0] == "pass" and same else "WRONG"
        else:
            verdict = lw
        counts["lw_pass"] += verdict == "pass"
        counts["unsupported"] += verdict == "unsupported"
        counts["wrong"] += verdict == "WRONG"
        print(f"  {case:24} GNU ld {'pass' if ok_ref else 'FAIL':5} linkwrap.ld {verdict}")
    return counts


def record_collect2_args(root, objs, mode):
    """The ld command line gcc's collect2 passes for this link (through a recording -B shim)."""
    rec = os.path.join(root, "rec")
    os.makedirs(rec, exist_ok=True)
    script = os.path.join(rec, "ld")
    with open(script, "w") as f:
        f.write('#!/bin/sh\nprintf \'%s\\0\' "$@" > "$LW_BENCH_ARGV"\n')
    os.chmod(script, 0o755)
    out = os.path.join(root, "argv")
    subprocess.run(["gcc", f"-B{rec}", *corpus.MODES[mode], *objs, "-o", os.path.join(root, "out")],
                   check=True, env={**os.environ, "LW_BENCH_ARGV": out})
    with open(out, "rb") as f:
        return [a.decode() for a in f.read().split(b"\0")[:-1]]


def pass_times(tree, argv, env=None, cwd=None):
    """{pass label: ms} of one link by the linker in `tree` (None: this one), from --time; 'process' is
    the whole process's wall time (start-up, imports and exit included), 'process CPU' its CPU time."""
    env = dict(env or os.environ)
    if tree:
        env["PYTHONPATH"] = tree
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "linkwrap.ld", "--time", *argv], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t0) * 1000
    p.stderr.close()
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"link failed ({tree or 'this tree'}): {err}")
    # CPU time (user + system): what a busy machine disturbs least
    out = {"process": wall, "process CPU": (ru.ru_utime + ru.ru_stime) * 1000}
    for line in err.splitlines():
        ms, label = line.split(":", 1)[1].strip().split(" ms ")
        out[label.strip()] = float(ms)
    return out


def passes_vs(root, baseline, runs, files, funcs, rust=None):
    """Per-pass medians of this tree and `baseline`, runs interleaved; the ratio with a 95 % bootstrap CI.
    rust: (modules, functions): the generated Rust project's debug link instead of the C program's."""
    import random
    if rust:
        argv, _, env, cwd, mb = rust_debug_link(root, *rust)
        ld_argv = record_rust_ld_args(root, argv, env, cwd)
        k = ld_argv.index("-o")
        ld_argv[k + 1] = os.path.join(root, "o")
        links = [(f"Rust debug link ({mb:.0f} MB of inputs)", ld_argv, env, cwd)]
    else:
        src, objs = generate_big(root, files, funcs)
        links = []
        for label, mode in (("generated static", "static"), ("generated PIE", "pie")):
            argv = record_collect2_args(os.path.join(root, label.replace(" ", "-")), objs, mode)
            argv = [a if a != os.path.join(root, label.replace(" ", "-"), "out") else os.path.join(root, "o")
                    for a in argv]
            links.append((label, argv, None, None))
    for label, argv, env, cwd in links:
        mine, base = [], []
        loads = [load()[0]]
        for _ in range(runs):
            mine.append(pass_times(None, argv, env, cwd))
            base.append(pass_times(baseline, argv, env, cwd))
            loads.append(load()[0])
        print(f"{label}: median ms over {runs} interleaved links (1-minute load {min(loads)}-{max(loads)})")
        print(f"  {'pass':28} {'baseline':>9} {'this':>9} {'ratio':>6}  95% CI")
        rng = random.Random(1)
        for p in mine[0]:
            a = [m[p] for m in mine]
            b = [m.get(p, 0.0) for m in base]
            if not all(b):
                print(f"  {p:28} {'-':>9} {statistics.median(a):9.1f}")
                continue
            ratio = statistics.median(a) / statistics.median(b)
            boots = sorted(statistics.median(rng.choices(a, k=len(a))) / statistics.median(rng.choices(b, k=len(b)))
                           for _ in range(2000))
            print(f"  {p:28} {statistics.median(b):9.1f} {statistics.median(a):9.1f} {ratio:6.2f}  "
                  f"[{boots[50]:.2f}, {boots[1949]:.2f}]")


PARSE_CHILD = r"""
import statistics, sys, time
from linkwrap.ld import libraries, objects, parse
path = sys.argv[1]
view = parse._map(path)
ar = libraries.Archive(path, view, False)
def work():
    for h, mname, off, size in ar.members:
        if view[off:off + 4] == b"\x7fELF":
            obj = objects.ObjectFile(mname, view[off:off + size], ar)
            for sec in obj.sections:
                if sec is not None:
                    sec.get_relocs()
work()
samples = []
for _ in range(5):
    t = time.perf_counter()
    work()
    samples.append((time.perf_counter() - t) * 1000)
print(statistics.median(samples))
"""


def parse_vs(baseline, runs):
    """Warm parse (+ relocation decoding) of every libc.a member: this tree against `baseline`."""
    import random
    libc = subprocess.run(["gcc", "-print-file-name=libc.a"], capture_output=True, text=True).stdout.strip()
    mine, base = [], []
    for _ in range(runs):
        for tree, into in ((None, mine), (baseline, base)):
            env = dict(os.environ)
            if tree:
                env["PYTHONPATH"] = tree
            r = subprocess.run([sys.executable, "-c", PARSE_CHILD, libc], capture_output=True, text=True,
                               env=env, check=True)
            into.append(float(r.stdout))
    rng = random.Random(1)
    ratio = statistics.median(mine) / statistics.median(base)
    boots = sorted(statistics.median(rng.choices(mine, k=runs)) / statistics.median(rng.choices(base, k=runs))
                   for _ in range(2000))
    print(f"parse all {libc} members + their relocations, warm, median of {runs} processes each "
          f"(load {' '.join(load())}):")
    print(f"  baseline {statistics.median(base):.1f} ms, this tree {statistics.median(mine):.1f} ms, "
          f"ratio {ratio:.3f}, 95% CI [{boots[50]:.3f}, {boots[1949]:.3f}]")


def ratio_ci(a, b, rng):
    """median(a) / median(b) and its 95 % bootstrap interval."""
    boots = sorted(statistics.median(rng.choices(a, k=len(a))) / statistics.median(rng.choices(b, k=len(b)))
                   for _ in range(2000))
    return statistics.median(a) / statistics.median(b), boots[50], boots[1949]


def rust_debug_link(root, modules, funcs):
    """Generate and build the Rust project; -> (cc argv without -o and without rustc's lld choice,
    rustc's own lld arguments, env, cwd, MB of inputs)."""
    import genproject
    project = genproject.rust(os.path.join(root, "rust"), modules, funcs)
    argv, link_env, cwd = genproject.rust_link(project, target_dir=os.path.join(root, "rust-target"))
    lld = [a for a in argv if a == "-fuse-ld=lld" or a.endswith("/gcc-ld")]
    plain = [a for a in argv if a not in lld]
    k = plain.index("-o")
    plain = plain[:k] + plain[k + 2:]
    return plain, lld, {**os.environ, **link_env}, cwd, genproject.input_bytes(argv, cwd) / 1e6


def tree_shim(root, tree):
    """A -B directory whose ld runs the linker of another checkout (PYTHONPATH=tree)."""
    d = os.path.join(root, "shim-" + tree.strip("/").replace("/", "-"))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "ld"), "w") as f:
        f.write(f'#!/bin/sh\nPYTHONPATH={tree} exec {sys.executable} -m linkwrap.ld "$@"\n')
    os.chmod(os.path.join(d, "ld"), 0o755)
    return d


def rust_bench(root, runs, modules, funcs, baseline):
    """GNU ld, rust-lld and linkwrap.ld (this tree, and `baseline`'s) on the Rust debug link, interleaved."""
    import random
    argv, lld, env, cwd, mb = rust_debug_link(root, modules, funcs)
    shim = corpus.shim_dir(root)
    linkers = {"GNU ld": [], "rust-lld": lld, "linkwrap.ld": [f"-B{shim}"]}
    if baseline:
        linkers["linkwrap.ld " + baseline] = [f"-B{tree_shim(root, baseline)}"]
    samples = {k: ([], []) for k in linkers}
    outs = {}
    for i in range(runs):
        for name, extra in linkers.items():
            out = outs[name] = os.path.join(root, "out-" + name.replace(" ", "_").replace("/", "_"))
            t0 = time.perf_counter()
            p = subprocess.Popen(["cc", *extra, *argv, "-o", out], cwd=cwd, env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            _, status, ru = os.wait4(p.pid, 0)
            wall = (time.perf_counter() - t0) * 1000
            err = p.stderr.read().decode()
            p.stderr.close()
            if os.waitstatus_to_exitcode(status):
                raise SystemExit(f"{name} failed: {err}")
            samples[name][0].append(wall)
            samples[name][1].append(ru.ru_maxrss / 1024)
    prints = {name: subprocess.run([out], capture_output=True, text=True).stdout for name, out in outs.items()}
    print(f"Rust debug link of the generated project ({modules}x{funcs}, {mb:.0f} MB of inputs), "
          f"{runs} interleaved runs, medians (load {' '.join(load())}):")
    rng = random.Random(1)
    for name in linkers:
        t, m = samples[name]
        line = f"  {name:28} {statistics.median(t):8.0f} ms {statistics.median(m):7.0f} MiB"
        for ref in ("GNU ld", "rust-lld"):
            if name != ref:
                rt, lo, hi = ratio_ci(t, samples[ref][0], rng)
                rm = statistics.median(m) / statistics.median(samples[ref][1])
                line += f"   / {ref}: time {rt:.2f} [{lo:.2f}, {hi:.2f}] RSS {rm:.2f}"
        print(line)
    same = {name: prints[name] == prints["GNU ld"] for name in linkers}
    print(f"  programs print what GNU ld's prints: {same} ({prints['GNU ld'].strip()})")
    if baseline:
        # a speed change must not change a byte: this tree's output against the baseline tree's
        with open(outs["linkwrap.ld"], "rb") as f, open(outs["linkwrap.ld " + baseline], "rb") as g:
            print(f"  linkwrap.ld's output byte-identical to {baseline}'s: {f.read() == g.read()}")
    r = subprocess.run(["cc", f"-B{shim}", *argv, "-o", outs["linkwrap.ld"], "-Wl,--time,--stats"], cwd=cwd,
                       env=env, capture_output=True, text=True)
    print("  linkwrap.ld --time --stats (one more run):")
    for line in r.stderr.splitlines():
        print("   ", line.split(":", 1)[1].strip())


RELOCS_AB_CHILD = r"""
import os, statistics, sys, time
from linkwrap.ld import gc, layout, options, parse, relocate, resolve, scan, synthetic
from linkwrap.ld.diag import Diagnostics
from linkwrap.ld.driver import _mode
opts = options.parse_args(sys.argv[2:])
diag = Diagnostics()
res = resolve.resolve(opts, parse.read_inputs(opts, diag), diag)
mode = _mode(opts, res)
live = gc.mark_live(opts, res, diag)
synth = synthetic.create(opts, mode, res, live, scan.scan(opts, mode, res, live, diag))
lk = layout.compute(opts, mode, res, live, synth)
for syn in synth.all:
    syn.finalize(lk)
nonalloc = [s for s in live.sections if s.rela is not None and not s.flags & 0x2]
times = {"python": [], "bulk": []}
images = {}
import numpy   # its import is a separate cost, counted once below
for i in range(int(sys.argv[1])):
    for m in ("python", "bulk"):
        for s in nonalloc:
            s.relocs = None     # the loop decodes the tables once per link: not warm
        os.environ["LINKWRAP_LD_RELOCS"] = m
        t = time.perf_counter()
        images[m] = relocate.apply_all(res, lk, live, diag)
        times[m].append((time.perf_counter() - t) * 1000)
print(repr((times, images["python"] == images["bulk"], sum(s.rela[1] // 24 for s in nonalloc))))
"""


def relocs_ab(root, runs, modules, funcs):
    """The relocation pass, per-relocation loop against the bulk path, interleaved in one process."""
    import ast
    import random
    argv, _, env, cwd, mb = rust_debug_link(root, modules, funcs)
    ld_argv = record_rust_ld_args(root, argv, env, cwd)
    r = subprocess.run([sys.executable, "-c", RELOCS_AB_CHILD, str(runs), *ld_argv], cwd=cwd, env=env,
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(r.stderr)
    times, same, n = ast.literal_eval(r.stdout.strip().splitlines()[-1])
    imp = subprocess.run([sys.executable, "-X", "importtime", "-c", "import numpy"], capture_output=True,
                         text=True).stderr.strip().splitlines()[-1]
    rt, lo, hi = ratio_ci(times["bulk"], times["python"], random.Random(1))
    print(f"relocation pass of the Rust debug link ({mb:.0f} MB of inputs, {n:,} non-loaded relocations), "
          f"{runs} interleaved runs in one process (load {' '.join(load())}):")
    print(f"  per-relocation loop {statistics.median(times['python']):.0f} ms, bulk "
          f"{statistics.median(times['bulk']):.0f} ms: ratio {rt:.2f} [{lo:.2f}, {hi:.2f}]; same image: {same}")
    print(f"  import numpy (once per link that uses it): {int(imp.split('|')[1]) / 1000:.0f} ms cumulative")


def record_rust_ld_args(root, argv, env, cwd):
    """The ld command line gcc passes for the Rust link (through a recording -B shim)."""
    rec = os.path.join(root, "rec-rust")
    os.makedirs(rec, exist_ok=True)
    with open(os.path.join(rec, "ld"), "w") as f:
        f.write('#!/bin/sh\nprintf \'%s\\0\' "$@" > "$LW_BENCH_ARGV"\n')
    os.chmod(os.path.join(rec, "ld"), 0o755)
    out = os.path.join(root, "argv-rust")
    subprocess.run(["cc", f"-B{rec}", *argv, "-o", os.path.join(root, "rust-out")], cwd=cwd, check=True,
                   env={**env, "LW_BENCH_ARGV": out})
    with open(out, "rb") as f:
        return [a.decode() for a in f.read().split(b"\0")[:-1]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument("--funcs", type=int, default=100)
    ap.add_argument("--cases", nargs="*", default=corpus.CASES)
    ap.add_argument("--behaviours", action="store_true", help="count the behaviour corpus's outcomes")
    ap.add_argument("--passes-vs", metavar="TREE", help="per-pass times against another checkout's linker")
    ap.add_argument("--parse-vs", metavar="TREE", help="warm parse of libc.a against another checkout's")
    ap.add_argument("--rust", action="store_true", help="the generated Rust project's debug link")
    ap.add_argument("--modules", type=int, default=16)
    ap.add_argument("--rust-funcs", type=int, default=34)
    ap.add_argument("--baseline", metavar="TREE", help="with --rust: also another checkout's linkwrap.ld")
    ap.add_argument("--relocs-ab", action="store_true", help="with --rust: loop against bulk relocation")
    a = ap.parse_args()
    if a.rust:
        root = tempfile.mkdtemp(prefix="bench-ld-")
        atexit.register(shutil.rmtree, root, True)  # its inputs and outputs (up to ~1 GB) go with it
        if a.passes_vs:
            passes_vs(root, a.passes_vs, a.runs, a.files, a.funcs, (a.modules, a.rust_funcs))
        elif a.relocs_ab:
            relocs_ab(root, a.runs, a.modules, a.rust_funcs)
        else:
            rust_bench(root, a.runs, a.modules, a.rust_funcs, a.baseline)
        return
    if a.parse_vs:
        parse_vs(a.parse_vs, a.runs)
        return
    root = tempfile.mkdtemp(prefix="bench-ld-")
    atexit.register(shutil.rmtree, root, True)  # its inputs and outputs (up to ~1 GB) go with it
    if a.behaviours:
        print(f"behaviour corpus (load {' '.join(load())}):")
        c = behaviours_table(root)
        print(f"GNU ld passes {c['gnu_pass']}, linkwrap.ld passes {c['lw_pass']} "
              f"(ratio {c['gnu_pass'] / max(c['lw_pass'], 1):.2f}), named as unsupported {c['unsupported']}, "
              f"wrong outputs {c['wrong']}")
        return
    if a.passes_vs:
        passes_vs(root, a.passes_vs, a.runs, a.files, a.funcs)
        return
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
