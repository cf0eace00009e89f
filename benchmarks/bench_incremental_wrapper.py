"""The edit-relink loop as a user meets it: the generated Rust project's relinks through linkwrap's
native client and warm server (the policy deciding: a patch where it can, the fastest full linker
where it cannot), against wild's full relink of the same inputs, interleaved (issue 36 items 4, 7).

Setup: a fresh LINKWRAP_HOME whose user file lets the idle server work on a busy machine
(`[bench] background_quiet_s = 0, background_load = 1000`); the unedited link through linkwrap
(saved, the base asked for) until the server has built the base from it; then warm-up links until
this output has NEED full relinks timed (so the measurement has both sides). Per round: one edit of
each kind asked for (bench_incremental.edited: (a) one token in `main`, (b) a line added above it,
(c) a new function, (d) a new call between modules), rustc's rebuild (-C save-temps keeps the
objects), then in a rotating order
  linkwrap   <native client> <rustc's link line> -o out-lw      (what Cargo would run)
  wild       cc -B<wild> <the same line> -o out-wild             (a full link, fresh output)
Cargo removes deps/<bin>-<hash> before rustc links it: both outputs are removed first. Printed per
edit kind: medians, linkwrap / wild with a 95 % bootstrap CI, how each linkwrap relink went (from its
record: patched in-process, or "could not patch (why): wild linked it"), and that both programs
print the same line. The load is printed before and after.

With --lang cpp the project is genproject.cpp's C++ program (--modules translation units of --funcs
template functions each) built with `c++ -g -O0`, linked through `linkwrap-launch c++` (what a ninja or
CMake rule installed by linkwrap runs) against `c++ -B<wild>`; the same four edits, made to one
translation unit (cpp_edited) and only the objects whose source changed recompiled.

    python benchmarks/bench_incremental_wrapper.py [--lang rust|cpp] [--modules 16 --funcs 34] [--rounds 5]
                                                   [--edit a|b|c|d|all]
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import genproject  # noqa: E402
from bench_incremental import ci, edited, shim  # noqa: E402
from bench_many_inputs import spool  # noqa: E402


def load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lang", default="rust", choices=("rust", "cpp"))
    ap.add_argument("--modules", type=int, default=None, help="modules (rust, 16) or translation units (cpp, 40)")
    ap.add_argument("--funcs", type=int, default=None, help="functions per module (rust 34, cpp 60)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--edit", default="all", choices=("a", "b", "c", "d", "all"))
    ap.add_argument("--dir")
    a = ap.parse_args()
    a.modules = a.modules or (16 if a.lang == "rust" else 40)
    a.funcs = a.funcs or (34 if a.lang == "rust" else 60)
    wild = shutil.which("wild")
    if not wild:
        raise SystemExit("wild must be on PATH")
    root = a.dir or tempfile.mkdtemp(prefix="bench-incremental-wrapper-")
    home = os.path.join(root, "linkwrap-home")
    os.makedirs(os.path.join(home, "config"), exist_ok=True)
    with open(os.path.join(home, "config", "linkwrap.toml"), "w") as f:
        f.write("[bench]\nbackground_quiet_s = 0\nbackground_load = 1000\nbackground_budget_s = 60\n")
    os.environ["LINKWRAP_HOME"] = home
    os.environ.pop("CI", None)
    os.environ.pop("LINKWRAP_SAVE", None)
    from linkwrap.install import launcher
    from linkwrap.server import start
    from linkwrap.ld.incremental import where
    from linkwrap.record import base_queue
    from linkwrap.evidence.learn import NEED
    start.start_detached()
    wshim = shim(root, "wild", wild)
    seen = [0]
    out_w = os.path.join(root, "out-wild")
    if a.lang == "rust":
        project, plain, cwd, env, out_lw, relinked = rust_side(a, root)
        client = [launcher.fast_script("linkwrap-cc")]
        wild_cmd = ["cc", f"-B{wshim}"]
    else:
        project, plain, cwd, env, out_lw, relinked = cpp_side(a, root)
        client = [launcher.fast_script("linkwrap-launch"), "c++"]
        wild_cmd = ["c++", f"-B{wshim}"]

    def fresh_link(cmd, out):
        """ms of one link into out, removed first (Cargo removes deps/<bin>-<hash> before rustc links)."""
        try:
            os.unlink(out)
        except FileNotFoundError:
            pass
        t0 = time.perf_counter()
        subprocess.run([*cmd, "-o", out], cwd=cwd, env=env, check=True)
        return (time.perf_counter() - t0) * 1000

    def through_linkwrap(line):
        ms = fresh_link([*client, *line], out_lw)
        seen[0] += 1
        deadline = time.monotonic() + 30
        while len(recs := spool(home)) < seen[0] and time.monotonic() < deadline:
            time.sleep(0.02)        # the record comes after the answer
        return ms, recs[-1]

    def through_wild(line):
        # (rustc's own rust-lld choice taken out: wild links it, as bench_incremental.py does)
        line = [x for x in line if x != "-fuse-ld=lld" and not x.endswith("/gcc-ld")]
        return fresh_link([*wild_cmd, *line], out_w), None

    _, first = through_linkwrap(plain)
    print(f"first link: {first['linker']} ({first['wall_ms']:.0f} ms); waiting for the server's base")
    t0 = time.monotonic()
    while not (where.ready(out_lw) and not base_queue.wanted()):
        if time.monotonic() - t0 > 1800:
            raise SystemExit("the server built no base in 30 minutes")
        time.sleep(1)
    print(f"base built in the background in {time.monotonic() - t0:.0f} s")
    for _ in range(NEED):           # the full side of the measurement: relinks of the same inputs
        through_linkwrap(plain)     # (no edit: a patch tried here patches nothing)
    for kind in ("a", "b", "c", "d") if a.edit == "all" else (a.edit,):
        loop(kind, a, relinked, through_linkwrap, through_wild, out_lw, out_w)
    print(f"load after: {load()}")


def rust_side(a, root):
    """The generated Rust project: -> (project, its link line without -o, cwd, env, linkwrap's output,
    relinked(kind, rnd): the line after round rnd's edit of that kind and rustc's rebuild)."""
    project = genproject.rust(os.path.join(root, "rust"), a.modules, a.funcs)
    target = os.path.join(root, "rust-target")
    src = os.path.join(project, "src")
    texts = {os.path.join(src, n): open(os.path.join(src, n)).read() for n in os.listdir(src)}
    argv, env, cwd = genproject.rust_link(project, target_dir=target)
    env = {**os.environ, **env}
    print(f"generated Rust project {a.modules}x{a.funcs}: {genproject.input_bytes(argv, cwd) / 1e6:.0f} MB of "
          f"inputs; load {load()} (1/5/15 min), {os.cpu_count()} CPUs")
    # rustc's line has its own -o deps/<bin>-<hash>: the linkwrap link keeps that name (its state and
    # evidence are the output's), wild's goes beside it
    k = argv.index("-o")
    out_lw = argv[k + 1] if os.path.isabs(argv[k + 1]) else os.path.join(cwd, argv[k + 1])

    def relinked(kind, rnd):
        write({**texts, **edited(kind, texts, rnd, a.modules)})
        argv, _e, _c = genproject.rust_link(project, target_dir=target)
        k = argv.index("-o")
        return argv[:k] + argv[k + 2:]
    return project, argv[:k] + argv[k + 2:], cwd, env, out_lw, relinked


def cpp_side(a, root):
    """The generated C++ program, as rust_side."""
    project = genproject.cpp(os.path.join(root, "cpp"), a.modules, a.funcs)
    texts = {os.path.join(project, n): open(os.path.join(project, n)).read()
             for n in os.listdir(project) if n.endswith(".cpp")}
    argv, cwd = genproject.cpp_link(project)
    line = argv[:argv.index("-o")]
    print(f"generated C++ program {a.modules}x{a.funcs}: {genproject.input_bytes(line, cwd) / 1e6:.0f} MB of "
          f"inputs; load {load()} (1/5/15 min), {os.cpu_count()} CPUs")

    def relinked(kind, rnd):
        for path in write({**texts, **cpp_edited(kind, texts, rnd, a.modules)}):
            obj = os.path.basename(path)[:-4] + ".o"
            subprocess.run(["c++", "-g", "-O0", "-c", os.path.basename(path), "-o", obj], cwd=project, check=True)
        return line
    return project, line, cwd, dict(os.environ), os.path.join(project, "prog"), relinked


def cpp_edited(kind, texts, rnd, units):
    """{path: text} after round rnd's edit of this kind to translation unit u0 (from the originals):
    (a) one token inside run0, (b) lines added above it (every later line's debug info moves),
    (c) new functions called from it, (d) a call to another unit's run<j> it did not make."""
    u0 = next(p for p in texts if p.endswith("/u0.cpp"))
    text = texts[u0]
    head = "std::uint64_t run0(std::uint64_t seed) {\n    std::uint64_t acc = 0;"
    if kind == "a":
        return {u0: text.replace(head, head[:-2] + f"{rnd + 1};")}
    if kind == "b":
        return {u0: text.replace(head, "// a line\n" * (rnd + 1) + head)}
    if kind == "c":  # cumulative, as in an edit loop: round r has extra0 .. extra<r>
        extra = "".join(f"__attribute__((noinline)) std::uint64_t extra{k}(std::uint64_t x) "
                        f"{{ return (x << {k % 63 + 1}) ^ {k + 1}; }}\n" for k in range(rnd + 1))
        calls = "".join(f"    acc = extra{k}(acc);\n" for k in range(rnd + 1))
        return {u0: text.replace(head, extra + head + "\n" + calls)}
    j = rnd % (units - 1) + 1
    return {u0: text.replace(head, f"std::uint64_t run{j}(std::uint64_t);\n" + head + f"\n    acc += (run{j}(seed) & 1) + 1;")}


def write(wanted):
    """Write the files whose text differs; -> their paths."""
    changed = []
    for path, text in wanted.items():
        if open(path).read() != text:
            with open(path, "w") as f:
                f.write(text)
            changed.append(path)
    return changed


def loop(kind, a, relinked, through_linkwrap, through_wild, out_lw, out_w):
    rng = random.Random(36)
    times = {"linkwrap": [], "wild": []}
    how, outputs = [], set()
    for rnd in range(a.rounds):
        line = relinked(kind, rnd)
        order = ["linkwrap", "wild"]
        rng.shuffle(order)
        for name in order:
            ms, rec = (through_linkwrap if name == "linkwrap" else through_wild)(line)
            times[name].append(ms)
            if rec is not None:
                reasons = rec["reasons"] if not isinstance(rec["reasons"], str) else json.loads(rec["reasons"])
                said = [r for r in reasons if "patch" in r or "incremental" in r]
                how.append(f"{rec['linker']}/{rec['linker_start']}: {said[-1][:110] if said else '-'}")
        got = {subprocess.run([o], capture_output=True, text=True).stdout for o in (out_lw, out_w)}
        outputs |= got
        if len(got) != 1:
            raise SystemExit(f"the programs differ: {got}")
    lw, w = statistics.median(times["linkwrap"]), statistics.median(times["wild"])
    lo, hi = ci(times["linkwrap"], times["wild"], rng)
    print(f"edit ({kind}), {a.rounds} interleaved rounds: linkwrap {lw:.0f} ms, wild {w:.0f} ms; "
          f"linkwrap / wild {lw / w:.2f} [{lo:.2f}, {hi:.2f}] (95 % bootstrap CI)")
    print(f"  linkwrap runs {[round(x) for x in times['linkwrap']]}  wild runs {[round(x) for x in times['wild']]}")
    for h in how:
        print(f"  {h}")
    print(f"  programs agree: {sorted(outputs)}")


if __name__ == "__main__":
    main()
