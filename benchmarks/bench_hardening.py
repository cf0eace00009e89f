"""What the hardening of issue 10 costs per link: the link-path steps it touched, timed in this
tree and in a baseline tree (default /work/main), interleaved round by round.

    python3 benchmarks/bench_hardening.py [--baseline DIR] [--rounds 9] [--iterations 400]

Steps (each warm, in a `python -I -S` child that imports linkwrap from the tree it times):
  prepare+abort  output.prepare() of a fresh write and output.abort(): the private directory
                 (now: owner/mode checks, O_NOFOLLOW, directory fds);
  config.load    a project linkwrap.toml three directories up (now: ownership checks on the way);
  discover       linkers.discover() on a warm cache (now: the cache's owner and mode checked).
Prints per step the median over rounds of each round's median (µs), the ratio this tree /
baseline with the lowest and highest round's ratio, and the load average before and after.
Not a test: figures for the notes.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, os, sys, tempfile, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, os.path.join(sys.argv[1], "benchmarks"))
from timing import median_us
from linkwrap.request import args, config
from linkwrap.facts import linkers
from linkwrap.run import output
from linkwrap.choice.policy import FRESH
n = int(sys.argv[2])
work = tempfile.mkdtemp(prefix="lw-bench-")
os.environ["LINKWRAP_HOME"] = os.path.join(work, "home")
proj = os.path.join(work, "proj")
deep = os.path.join(proj, "a", "b", "c")
os.makedirs(deep)
os.mkdir(os.path.join(proj, ".git"))
with open(os.path.join(proj, "linkwrap.toml"), "w") as f:
    f.write('prefer = ["mold", "lld"]\n')
req = args.parse(["main.o", "-o", "out"], driver="cc", environ={}, cwd=deep)
config.load(req, {})
linkers.discover(req, os.environ)

def prepare():
    output.abort(output.prepare(req, FRESH), linker_ran=False)

res = {"prepare+abort": median_us(prepare, n)[0],
       "config.load": median_us(lambda: config.load(req, {}), n)[0],
       "discover": median_us(lambda: linkers.discover(req, os.environ), n)[0]}
print(json.dumps(res))
"""


def run_child(tree, iterations):
    out = subprocess.run([sys.executable, "-I", "-S", "-c", CHILD, tree, str(iterations)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="/work/main")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--iterations", type=int, default=400)
    a = ap.parse_args()
    print(f"load average before: {load()} (2 CPUs)")
    rows = {"baseline": [], "this": []}
    for _ in range(a.rounds):  # interleaved: both trees see the same machine
        rows["baseline"].append(run_child(a.baseline, a.iterations))
        rows["this"].append(run_child(ROOT, a.iterations))
    print(f"load average after:  {load()}")
    print(f"{'step':<15}{'baseline µs':>13}{'this µs':>10}{'ratio':>8}  (lowest..highest round)")
    for step in rows["this"][0]:
        base = [r[step] for r in rows["baseline"]]
        this = [r[step] for r in rows["this"]]
        ratios = sorted(t / b for t, b in zip(this, base))
        print(f"{step:<15}{statistics.median(base):>13.1f}{statistics.median(this):>10.1f}"
              f"{statistics.median(ratios):>8.2f}  ({ratios[0]:.2f}..{ratios[-1]:.2f})")


if __name__ == "__main__":
    main()
