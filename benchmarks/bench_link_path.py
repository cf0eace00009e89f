"""linkwrap's own time in a server link, on either side of the linker: from pipeline.link's start to
the linker's spawn ("before"), and from the linker's exit to the answer ("after") -- what a link
through the warm server adds besides the client and the hand-off (benchmarks/bench_overhead.py
times those).

    python3 benchmarks/bench_link_path.py [--links 21] [--rounds 5] [--link app] [--baseline TREE]

Each link runs as the server runs it: in a child forked from a process that imported the link
path (server.warm()), after the spare's rehearsal, with the old output's removal left to tidy().
The link is the bundled example's (rustc's command line, captured as bench_overhead.py does),
with mold. With --baseline, another checkout's tree is timed the same way, rounds interleaved
(a process per tree and round: both import their own tree with `python -S`), and the ratio of the
medians comes with a 95 % bootstrap interval. Not a test: figures for the notes (with the load).
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

CHILD = r"""
import json, marshal, os, sys, time
from linkwrap.server import server
from linkwrap.request import args, invocation
from linkwrap.run import output
from linkwrap import pipeline
argv, cwd, out, links = json.loads(sys.argv[1])
import linkwrap
assert linkwrap.__file__.startswith(os.environ["PYTHONPATH"] + "/"), linkwrap.__file__
server.warm()
os.chdir(cwd)
env = dict(os.environ, LINKWRAP_LINKER="mold")
argv = args.with_output(list(argv), out)
samples = []
for i in range(links + 2):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # a spare: rehearse, then the link
        os.close(r)
        import gc
        gc.disable()
        try:  # the link this server served last (a repeated link: the edit-build loop, `cargo test`)
            server.rehearse(marshal.dumps((tuple(argv), None, cwd, env)))
        except TypeError:  # a tree whose spares rehearse a stand-in link
            server.rehearse()
        marks = {}
        spawn, wait4 = os.posix_spawnp, os.wait4

        def timed_spawn(*a, **k):
            marks["spawn"] = time.perf_counter_ns()
            return spawn(*a, **k)

        def timed_wait4(*a, **k):
            try:
                return wait4(*a, **k)
            finally:  # the linker's; run.reap() waits for a forking linker's worker after the answer
                marks.setdefault("exited", time.perf_counter_ns())

        os.posix_spawnp, os.wait4 = timed_spawn, timed_wait4
        output.defer()
        started = time.perf_counter_ns()
        inv = invocation.Invocation(tuple(argv), None, env, cwd, os.getpid(), None, "server", started,
                                    server._OWN.get("reaps", False))
        pipeline.link(inv, lambda status: marks.setdefault("answer", time.perf_counter_ns()))
        output.tidy()
        os.write(w, json.dumps([(marks["spawn"] - started) / 1e6, (marks["answer"] - marks["exited"]) / 1e6]).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    if i >= 2:  # the first links fill linkwrap's caches
        samples.append(json.loads(data))
print(json.dumps(samples))
"""


def run_tree(tree, home, link, links):
    """[(before_ms, after_ms)] of `links` server-like links with `tree`'s linkwrap."""
    env = {**os.environ, "PYTHONPATH": tree, "LINKWRAP_HOME": home}
    argv, cwd, out = link
    # In the tree's directory: `-c` puts the working directory first on sys.path.
    done = subprocess.run([sys.executable, "-S", "-c", CHILD, json.dumps([argv, cwd, out, links])],
                          env=env, capture_output=True, text=True, cwd=tree)
    if done.returncode:
        sys.exit(f"the link failed with {tree}:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def ratio_ci(a, b, rng):
    """median(a) / median(b) and its 95 % bootstrap interval."""
    boots = sorted(statistics.median(rng.choices(a, k=len(a))) / statistics.median(rng.choices(b, k=len(b)))
                   for _ in range(2000))
    return statistics.median(a) / statistics.median(b), boots[50], boots[1949]


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", type=int, default=21, help="links per process")
    ap.add_argument("--rounds", type=int, default=5, help="processes per tree, interleaved")
    ap.add_argument("--link", choices=("app", "build-script"), default="app")
    ap.add_argument("--baseline", metavar="TREE", help="another checkout to compare with")
    a = ap.parse_args()
    from bench_overhead import capture_links
    with tempfile.TemporaryDirectory() as work:
        ws = os.path.join(work, "ws")
        shutil.copytree(os.path.join(ROOT, "examples", "cargo-workspace"), ws,
                        ignore=shutil.ignore_patterns("target", ".cargo"))
        link = (capture_links(ws, os.path.join(work, "target"), work)[a.link], ws, os.path.join(work, "out"))
        trees = {"this tree": ROOT}
        if a.baseline:
            trees["baseline"] = os.path.abspath(a.baseline)
        samples = {name: [] for name in trees}
        print(f"load before: {load()} (1/5/15 min), {os.cpu_count()} CPUs; the example's {a.link} link with mold, "
              f"{a.rounds} x {a.links} links per tree")
        for _ in range(a.rounds):
            for name, tree in trees.items():
                home = os.path.join(work, "home-" + name.replace(" ", "-"))
                samples[name] += run_tree(tree, home, link, a.links)
        print(f"load after: {load()}")
        print(f"{'ms, median (p90)':22s} {'before the linker':>20s} {'after it':>16s} {'both':>16s}")
        for name, s in samples.items():
            cols = [[x[0] for x in s], [x[1] for x in s], [x[0] + x[1] for x in s]]
            print(f"{name:22s} " + " ".join(f"{statistics.median(c):9.2f} ({sorted(c)[int(len(c) * 0.9)]:5.2f})"
                                             for c in cols))
        if a.baseline:
            rng = random.Random(1)
            mine, base = samples["this tree"], samples["baseline"]
            for label, i in (("before the linker", 0), ("after it", 1), ("both", None)):
                pick = (lambda x: x[0] + x[1]) if i is None else (lambda x, i=i: x[i])
                r, lo, hi = ratio_ci([pick(x) for x in mine], [pick(x) for x in base], rng)
                print(f"this tree / baseline, {label}: {r:.2f} [95% CI {lo:.2f}, {hi:.2f}]")


if __name__ == "__main__":
    main()
