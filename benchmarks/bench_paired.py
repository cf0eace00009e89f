"""Paired per-round ratios vs independent intervals, from the same `linkwrap bench` runs.

The generated std-only Rust project (benchmarks/genproject.py) is built once through linkwrap with
its debug link saved; `linkwrap bench --json` then replays it several times (--repeats). For each
candidate against the caller's default (rust-lld, rustc's own), from one and the same replay:

  paired       median of the per-round ratios and its 95 % CI (order statistics), what the
               measured choice now uses
  independent  median / default's median, with the interval two independent CIs allow
               (low / high .. high / low), what the choice used before
  width        independent CI width / paired CI width: how much tighter pairing is
  decides      whether the interval lies wholly on one side of 1 (a choice could rest on it)

The machine's 1-minute load is printed with every replay. Not a test: figures.

    python3 benchmarks/bench_paired.py [--modules 8 --funcs 40] [--budget 20] [--repeats 3]
        [--linkers rust-lld,mold,lld,wild,bfd]
"""
import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import genproject  # noqa: E402
from genproject import host, lw  # noqa: E402


def side(low, high) -> str:
    return "below 1" if high < 1 else "above 1" if low > 1 else "spans 1"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modules", type=int, default=8)
    ap.add_argument("--funcs", type=int, default=40)
    ap.add_argument("--budget", type=float, default=20.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--linkers", default="rust-lld,mold,lld,wild,bfd")
    args = ap.parse_args()
    print(f"load before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="bench-paired-") as base:
        env = {**os.environ, "LINKWRAP_HOME": os.path.join(base, "lw-home")}
        env.pop("LINKWRAP_LINKER", None)
        project = genproject.rust(os.path.join(base, "proj"), modules=args.modules, funcs=args.funcs)
        os.makedirs(os.path.join(project, ".cargo"), exist_ok=True)
        cc = os.path.join(os.path.dirname(sys.executable), "linkwrap-cc")
        with open(os.path.join(project, ".cargo", "config.toml"), "w") as f:
            f.write(f'[target.{host()}]\nlinker = "{cc}"\n')
        done = lw("run", "--save", "-q", "--", "cargo", "build", "-q", cwd=project, env=env)
        assert done.returncode == 0, done.stderr
        deps = os.path.join(project, "target", "debug", "deps")
        [out] = [os.path.join(deps, n) for n in os.listdir(deps) if n.startswith("genbig-") and "." not in n]
        only = [a for n in args.linkers.split(",") for a in ("--linker", n)]
        widths = []
        for rep in range(args.repeats):
            done = lw("bench", "--json", "--budget", str(args.budget), *only, out, cwd=project, env=env)
            assert done.returncode == 0, done.stderr
            [report] = json.loads(done.stdout)
            rows = {(r["linker"], r["variant"]): r for r in report["rows"] if not r["failed"]}
            base_row = rows[(report["default"], "fresh")]
            print(f"\nreplay {rep + 1}: {report['rounds']} rounds, load {report['load_avg']:.2f}, "
                  f"default {base_row['label']} {base_row['median_ms']:.0f} ms "
                  f"[{base_row['ci_low_ms']:.0f}-{base_row['ci_high_ms']:.0f}]", flush=True)
            print(f"  {'candidate':28} {'paired':>22} {'independent':>22} {'width':>6}  decides (paired / indep.)")
            for (name, variant), r in sorted(rows.items(), key=lambda kv: kv[1]["median_ms"]):
                if r["ratio"] is None:
                    continue
                ind = r["median_ms"] / base_row["median_ms"]
                ind_lo = r["ci_low_ms"] / base_row["ci_high_ms"]
                ind_hi = r["ci_high_ms"] / base_row["ci_low_ms"]
                pw = r["ratio_ci_high"] - r["ratio_ci_low"]
                w = (ind_hi - ind_lo) / pw if pw > 0 else float("inf")
                widths.append(w)
                label = r["label"] + ("" if variant == "fresh" else f" ({variant})")
                print(f"  {label:28} {r['ratio']:6.3f} [{r['ratio_ci_low']:.3f}-{r['ratio_ci_high']:.3f}]"
                      f"  {ind:6.3f} [{ind_lo:.3f}-{ind_hi:.3f}] {w:6.1f}  "
                      f"{side(r['ratio_ci_low'], r['ratio_ci_high'])} / {side(ind_lo, ind_hi)}", flush=True)
        if widths:
            widths.sort()
            print(f"\nindependent / paired CI width: median {widths[len(widths) // 2]:.1f}x "
                  f"(min {widths[0]:.1f}, max {widths[-1]:.1f}) over {len(widths)} candidate-replays")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
