"""Edit-relink loop on the generated Rust project (genproject.rust): linkwrap ld --incremental's
patch against wild's full relink and linkwrap ld's own full link of the same inputs, interleaved.

Per round: one edit (--edit, issue 36's kinds: (a) a one-token change inside `main`, the multiplier;
(b) a line added above `main`, so every later line's debug info moves; (c) a new function in main.rs,
called from `main`; (d) a new call from one module into another it did not call), cargo rebuilds (rustc re-emits the changed codegen units; -C save-temps keeps the objects)
and prints its link line; then, in a rotating order, the same inputs are linked by
  incremental  cc -B<linkwrap-ld> ... -Wl,--incremental   (patches the last output)
  wild         cc -B<wild> ...                             (a full link, fresh output)
  full         cc -B<linkwrap-ld> ...                      (linkwrap ld's full link)
Each run's wall time (the cc driver included, alike for all three) is kept; the report gives the
medians, incremental ÷ wild and ÷ full with a 95 % bootstrap CI, how each relink was decided
(patched or the full link's reason), the state file's size, and that all three programs print
the same line.

    python benchmarks/bench_incremental.py [--modules 16 --funcs 34] [--rounds 7] [--edit a|b|c|d|all] [--dir DIR]
"""
import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import genproject  # noqa: E402


def shim(root, name, target):
    d = os.path.join(root, f"shim-{name}")
    os.makedirs(d, exist_ok=True)
    if not os.path.exists(os.path.join(d, "ld")):
        os.symlink(target, os.path.join(d, "ld"))
    return d


def timed(cmd, cwd, env):
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    ms = (time.perf_counter() - t) * 1000
    if r.returncode:
        raise SystemExit(f"failed: {' '.join(cmd[:3])} ...\n{r.stderr[-2000:]}")
    return ms, r.stderr


def ci(a, b, rng, n=2000):
    ratios = []
    for _ in range(n):
        x = [rng.choice(a) for _ in a]
        y = [rng.choice(b) for _ in b]
        ratios.append(statistics.median(x) / statistics.median(y))
    ratios.sort()
    return ratios[int(0.025 * n)], ratios[int(0.975 * n)]


def edited(kind, texts, rnd, modules):
    """{path: text} of the project's sources after round rnd's edit of this kind (from the originals)."""
    main_rs = next(p for p in texts if p.endswith("main.rs"))
    main = texts[main_rs]
    if kind == "a":
        return {main_rs: main.replace("wrapping_mul(31)", f"wrapping_mul({31 + 2 * (rnd + 1)})")}
    if kind == "b":
        return {main_rs: main.replace("\nfn main()", "\n" + "// a line\n" * (rnd + 1) + "fn main()")}
    if kind == "c":  # cumulative, as in an edit loop: round r has extra0 .. extra<r>
        extra = "".join(f"#[inline(never)]\nfn extra{k}(x: u64) -> u64 {{ x.rotate_left({k % 63 + 1}) ^ {k} }}\n\n"
                        for k in range(rnd + 1))
        calls = "".join(f"    acc = extra{k}(acc);\n" for k in range(rnd + 1))
        return {main_rs: main.replace("\nfn main()", "\n" + extra + "fn main()").replace(
            "    println!", calls + "    println!")}
    # d: module m<i> now calls m<j>::run, a dependency it did not have (one new pair per round)
    i, j = rnd % modules, (rnd + 1) % modules
    path = next(p for p in texts if p.endswith(f"/m{i}.rs"))
    return {path: texts[path].replace("    acc.wrapping_add(order.len() as u64)",
                                      f"    acc.wrapping_add(order.len() as u64).wrapping_add(crate::m{j}::run(seed) & 1)")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--modules", type=int, default=16)
    ap.add_argument("--funcs", type=int, default=34)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--edit", default="a", choices=("a", "b", "c", "d", "all"))
    ap.add_argument("--dir")
    a = ap.parse_args()
    root = a.dir or tempfile.mkdtemp(prefix="bench-incremental-")
    for kind in ("a", "b", "c", "d") if a.edit == "all" else (a.edit,):
        loop(a, kind, root)


def loop(a, kind, root):
    wild = shutil.which("wild")
    # the console script beside this Python (a version manager's shim on PATH picks what to run by
    # its own name, and as `ld` in a -B directory it would run GNU ld)
    lwld = os.path.join(sysconfig.get_path("scripts"), "linkwrap-ld")
    lwld = lwld if os.access(lwld, os.X_OK) else shutil.which("linkwrap-ld")
    if not wild or not lwld:
        raise SystemExit("wild and linkwrap-ld must be on PATH")
    project = genproject.rust(os.path.join(root, "rust"), a.modules, a.funcs)
    target = os.path.join(root, "rust-target")
    src = os.path.join(project, "src")
    texts = {os.path.join(src, n): open(os.path.join(src, n)).read() for n in os.listdir(src)}
    shims = {"incremental": shim(root, "lw", lwld), "full": shim(root, "lw", lwld), "wild": shim(root, "wild", wild)}
    times = {k: [] for k in shims}
    decisions, outputs = [], set()
    rng = random.Random(1)
    argv, env, cwd = genproject.rust_link(project, target_dir=target)
    inputs_mb = genproject.input_bytes(argv, cwd) / 1e6

    def line(argv):
        plain = [x for x in argv if x != "-fuse-ld=lld" and not x.endswith("/gcc-ld")]
        k = plain.index("-o")
        return plain[:k] + plain[k + 2:]

    env = {**os.environ, **env}
    base = line(argv)
    out = {k: os.path.join(root, f"out-{k}") for k in shims}
    # the base of the incremental relinks: one full incremental link of the unedited inputs
    timed(["cc", f"-B{shims['incremental']}", *base, "-Wl,--incremental", "-o", out["incremental"]], cwd, env)
    for rnd in range(a.rounds + 1):
        for path, text in {**texts, **edited(kind, texts, rnd, a.modules)}.items():
            if open(path).read() != text:
                with open(path, "w") as f:
                    f.write(text)
        argv, _e, _c = genproject.rust_link(project, target_dir=target)
        cur = line(argv)
        order = list(shims)
        rng.shuffle(order)
        for k in order:
            cmd = ["cc", f"-B{shims[k]}", *cur, "-o", out[k]]
            if k == "incremental":
                cmd[-2:-2] = ["-Wl,--incremental,--incremental-why,--incremental-stats"]
            else:
                try:
                    os.unlink(out[k])
                except FileNotFoundError:
                    pass
            ms, err = timed(cmd, cwd, env)
            if rnd == 0:
                continue      # warm-up: page cache, the first edit's rebuild
            times[k].append(ms)
            if k == "incremental":
                m = re.search(r"incremental: (.*)", err)
                decisions.append(m.group(1) if m else "?")
                sz = re.search(r"write the state \((\d+) bytes\)", err)
        got = {subprocess.run([out[k]], capture_output=True, text=True).stdout for k in shims}
        outputs |= got
        if len(got) != 1:
            raise SystemExit(f"the three programs differ: {got}")
    print(f"edit ({kind}); generated Rust project {a.modules}x{a.funcs}: {inputs_mb:.0f} MB of inputs, "
          f"output {os.path.getsize(out['incremental']) / 1e6:.0f} MB (incremental), "
          f"{os.path.getsize(out['wild']) / 1e6:.0f} MB (wild); {a.rounds} interleaved edit-relinks")
    for k in shims:
        print(f"  {k:12s} median {statistics.median(times[k]):8.1f} ms   runs {[round(x) for x in times[k]]}")
    for other in ("wild", "full"):
        lo, hi = ci(times["incremental"], times[other], rng)
        r = statistics.median(times["incremental"]) / statistics.median(times[other])
        print(f"  incremental / {other:5s} {r:.2f} [{lo:.2f}, {hi:.2f}] (95 % bootstrap CI)")
    print(f"  relinks: {sorted(set(decisions))}  state file {sz.group(1) if sz else '?'} bytes")
    print(f"  programs agree: {sorted(outputs)}")


if __name__ == "__main__":
    main()
