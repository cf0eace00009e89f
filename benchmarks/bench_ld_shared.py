"""Benchmark linkwrap.ld's -shared links against GNU ld: the example's proc-macro and a std-only cdylib.

Also rust-lld (rustc's default linker) on the same command line, in the same rounds.
Cargo builds both once through a recording linker that keeps each -shared link's command line and
a copy of rustc's temporary directory (symbols.o, the version script), so the same link can be run
again. Then the two linkers alternate on it (GNU ld through gcc; linkwrap.ld through gcc -B a shim),
N runs each: medians of wall time and of peak RSS (wait4 over gcc -> collect2 -> linker), their
ratios, and a 95 % confidence interval of the per-pair time ratio (bootstrap over the pairs);
then linkwrap.ld's per-pass times (--time) of one more run of each link.

    python benchmarks/bench_ld_shared.py [--runs 11]
"""
import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "ld"))
sys.path.insert(0, HERE)
import corpus  # noqa: E402
from bench_ld import timed  # noqa: E402

RECORDER = """#!{python}
import os, shutil, sys, json, subprocess
args = sys.argv[1:]
if "-shared" in args:
    rec = os.environ["RECORD_DIR"]
    out = args[args.index("-o") + 1]
    name = os.path.basename(out)
    tmpdirs = {{os.path.dirname(a.split("=", 1)[-1]) for a in args
               if "/rustc" in a and os.path.isfile(a.split("=", 1)[-1])}}
    keep = {{}}
    for d in tmpdirs:
        keep[d] = os.path.join(rec, name + ".tmp", os.path.basename(d))
        shutil.copytree(d, keep[d])
    fixed = []
    for a in args:
        for d, k in keep.items():
            a = a.replace(d, k)
        fixed.append(a)
    rust_lld = [a for a in fixed if a == "-fuse-ld=lld" or (a.startswith("-B") and a.endswith("gcc-ld"))]
    fixed = [a for a in fixed if a not in rust_lld]
    with open(os.path.join(rec, name + ".json"), "w") as f:
        json.dump({{"args": fixed, "cwd": os.getcwd(), "rust_lld": rust_lld}}, f)
os.execvp("cc", ["cc", *args])
"""

CDYLIB = """use std::collections::HashMap;
#[no_mangle]
pub extern "C" fn cd_words(n: usize) -> usize {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for i in 0..n { *seen.entry(format!("w{}", i % 7)).or_default() += 1; }
    std::panic::catch_unwind(|| seen.len()).unwrap_or(0)
}
"""


def record_links(work):
    rec = os.path.join(work, "rec")
    os.makedirs(rec)
    recorder = os.path.join(work, "recorder")
    with open(recorder, "w") as f:
        f.write(RECORDER.format(python=sys.executable))
    os.chmod(recorder, 0o755)
    ws = os.path.join(work, "ws")
    shutil.copytree(os.path.join(ROOT, "examples", "cargo-workspace"), ws,
                    ignore=shutil.ignore_patterns("target", ".cargo"))
    cd = os.path.join(work, "cd")
    os.makedirs(os.path.join(cd, "src"))
    with open(os.path.join(cd, "Cargo.toml"), "w") as f:
        f.write('[package]\nname = "cd"\nversion = "0.1.0"\nedition = "2021"\n\n[lib]\ncrate-type = ["cdylib"]\n')
    with open(os.path.join(cd, "src", "lib.rs"), "w") as f:
        f.write(CDYLIB)
    env = {**os.environ, "RECORD_DIR": rec, "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER": recorder,
           "CARGO_TARGET_DIR": os.path.join(work, "target"),
           "RUSTFLAGS": "-Csave-temps"}   # rustc would delete the objects after the link
    for crate in (ws, cd):
        subprocess.run(["cargo", "build", "--quiet"], cwd=crate, env=env, check=True)
    import json
    links = {}
    for name in sorted(os.listdir(rec)):
        if name.endswith(".json"):
            with open(os.path.join(rec, name)) as f:
                links[name[:-5]] = json.load(f)
    return links


def command(link, out, shim=None, rust_lld=False):
    args = list(link["args"])
    args[args.index("-o") + 1] = out
    return ["cc", *([f"-B{shim}"] if shim else []), *(link["rust_lld"] if rust_lld else []), *args]


def ci95(pairs, rounds=2000):
    rng = random.Random(12)
    meds = sorted(statistics.median(rng.choice(pairs) for _ in pairs) for _ in range(rounds))
    return meds[int(rounds * 0.025)], meds[int(rounds * 0.975)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=11)
    a = ap.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1/5/15 min)")
    with tempfile.TemporaryDirectory() as work:
        shim = corpus.shim_dir(work)
        links = record_links(work)
        print(f"{'link':34} {'GNU ld ms':>10} {'lw ms':>8} {'time x':>7} {'95% CI':>13} "
              f"{'GNU MiB':>8} {'lw MiB':>7} {'RSS x':>6} {'rust-lld ms':>12} {'MiB':>5} {'lw/lld t':>9} {'RSS':>5}")
        passes = {}
        for name, link in links.items():
            ref_t, ref_m, lw_t, lw_m, lld_t, lld_m = [], [], [], [], [], []
            for i in range(a.runs + 1):
                r = timed(command(link, os.path.join(work, "ref.so"), None), cwd=link["cwd"])
                w = timed(command(link, os.path.join(work, "lw.so"), shim), cwd=link["cwd"])
                d = timed(command(link, os.path.join(work, "lld.so"), None, True), cwd=link["cwd"])
                if i == 0:
                    continue          # warm-up round: page cache, the shim's first start
                ref_t.append(r[0]), ref_m.append(r[1]), lw_t.append(w[0]), lw_m.append(w[1])
                lld_t.append(d[0]), lld_m.append(d[1])
            med = statistics.median
            lo, hi = ci95([w / r for w, r in zip(lw_t, ref_t)])
            label = name if len(name) <= 34 else name[:31] + "..."
            print(f"{label:34} {med(ref_t):10.0f} {med(lw_t):8.0f} {med(lw_t) / med(ref_t):7.2f} "
                  f"{lo:6.2f}-{hi:<6.2f} {med(ref_m) / 1024:8.0f} {med(lw_m) / 1024:7.0f} "
                  f"{med(lw_m) / med(ref_m):6.2f} {med(lld_t):12.0f} {med(lld_m) / 1024:5.0f} "
                  f"{med(lw_t) / med(lld_t):9.2f} {med(lw_m) / med(lld_m):5.2f}")
            passes[label] = subprocess.run(command(link, os.path.join(work, "lw.so"), shim) + ["-Wl,--time"],
                                           cwd=link["cwd"], capture_output=True, text=True).stderr
        for label, text in passes.items():
            print(f"linkwrap.ld --time, {label}:")
            print("".join(f"  {line}\n" for line in text.splitlines()))
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1/5/15 min)")


if __name__ == "__main__":
    main()
