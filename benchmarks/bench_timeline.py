"""Where a server link's time goes, stage by stage: the owner's timeline method, on copies of linkwrap
trees with time marks put in (a mark is a line appended to a trace file: pid, name, CLOCK_MONOTONIC ns).

    python3 benchmarks/bench_timeline.py [--links 25] [--rounds 2] [--link app] [--fresh-rustc-dir]
                                         [--baseline DIR]

Each round starts a copy's server (the native client, mold forced) and runs `links` links of the
bundled example's app (or build-script) link through it, after `cc` and the direct mold line of the
same link; the stages are the differences between consecutive marks, per link: the child's accept,
request parsed, fds, taken, the pipeline's start, args.parse, choose, output.prepare, the direct
line, the linker's spawn and exit, the client's exit. --fresh-rustc-dir gives every link a new
rustc directory (<deps>/rustcXXXXXX/, as rustc makes one per link), so nothing is replayed that a
rebuild would change. With --baseline, another tree is timed in alternate rounds. Medians and p90
per stage; not a test: figures for the notes (with the load).
"""
import argparse
import collections
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TRACE = '''import os, time
_fd = []
def mark(name):
    p = os.environ.get("LW_TRACE")
    if not p:
        return
    if not _fd:
        _fd.append(os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600))
    os.write(_fd[0], f"{os.getpid()} {name} {time.monotonic_ns()}\\n".encode())
'''
# (file, a line's text, mark, after the line?): the stages of docs/design.md's server link.
MARKS = [
    ("linkwrap/server/server.py", "reached = time.perf_counter_ns()", "accept", True),
    ("linkwrap/server/server.py", "req = parse_request(data)", "parsed", True),
    ("linkwrap/server/server.py", 'fds = fds_of(peer_pid, req["fds"], conn)', "fds", True),
    ("linkwrap/server/server.py", "conn = take(req, fds, conn)", "taken", True),
    ("linkwrap/server/server.py", "return pipeline.link(inv, answer)", "pipeline", False),
    ("linkwrap/wrap/pipeline.py", "request = args.parse(argv, driver, environ, cwd=inv.cwd)", "args", True),
    ("linkwrap/wrap/pipeline.py", "choice = choose(request, environ, memory=False", "choose", True),
    ("linkwrap/wrap/run.py", "plan = output_mod.prepare(", "prepare", True),
    ("linkwrap/wrap/run.py", "argv = direct_command(request, decision, plan.link_path", "direct-line", True),
    ("linkwrap/wrap/run.py", "pid = os.posix_spawnp(argv[0], argv, env, file_actions", "spawn", False),
    ("linkwrap/wrap/run.py", "wall_ms = (time.perf_counter_ns() - started) / 1e6", "exited", False),
]


def instrumented(tree, into):
    """A copy of tree with the marks put in; -> its path."""
    shutil.copytree(tree, into, ignore=shutil.ignore_patterns(".git", "__pycache__", "target", "*.egg-info"))
    with open(os.path.join(into, "linkwrap", "_trace.py"), "w") as f:
        f.write(TRACE)
    for path, anchor, name, after in MARKS:
        p = os.path.join(into, path)
        with open(p) as f:
            lines = f.read().split("\n")
        hits = [i for i, line in enumerate(lines) if anchor in line]
        if not hits:
            sys.exit(f"{tree}: no line with {anchor!r} in {path}")
        i = hits[0]
        indent = re.match(r"\s*", lines[i]).group(0)
        lines.insert(i + 1 if after else i, f"{indent}from linkwrap._trace import mark; mark({name!r})")
        with open(p, "w") as f:
            f.write("\n".join(lines))
    return into


ROUND = r'''
import json, os, shutil, subprocess, sys, tempfile, time
tree, kind, links, fresh, ws, target = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5], sys.argv[6]
sys.path.insert(0, tree)
sys.path.insert(0, os.path.join(tree, "benchmarks"))
import bench_overhead as bo
from linkwrap.wrap import args, run
from linkwrap.wrap.choose import choose
from linkwrap.install import launcher
from linkwrap.server import start
work = tempfile.mkdtemp(prefix="lw-timeline-")
os.environ["LINKWRAP_HOME"] = os.path.join(work, "home")
trace = os.path.join(work, "trace")
client = launcher.fast_script("linkwrap-cc")
env = {**os.environ, "LINKWRAP_LINKER": "mold"}
os.environ["LW_TRACE"] = trace
start.start_detached()
argv = json.load(open(os.path.join(target, "links.json")))[kind]
req = args.parse(argv, environ=env, cwd=ws)
dec = choose(req, env).decision
cc = run.command(req, dec, os.path.join(work, "cc-out"))
direct = run.direct_command(req, dec, os.path.join(work, "d-out"), env)
cl = [client, *args.with_output(argv, os.path.join(work, "cl-out"))]
tmpdir = args.rustc_temp_dir(cl) if hasattr(args, "rustc_temp_dir") else None
if tmpdir is None:
    tmpdir = next((os.path.dirname(a) + "/" for a in cl if a.endswith("/symbols.o")), None)
tenv = {**env, "LW_TRACE": trace}
def timed(cmd, e):
    t0 = time.monotonic_ns()
    subprocess.run(cmd, env=e, cwd=ws, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return t0, time.monotonic_ns()
for _ in range(3):
    timed(cc, env); timed(direct, env); timed(cl, tenv)
rounds = []
for i in range(links):
    a = timed(cc, env); b = timed(direct, env)
    line = cl
    if fresh and tmpdir:
        new = tempfile.mkdtemp(prefix="rustc", dir=os.path.dirname(tmpdir.rstrip("/")))
        shutil.rmtree(new)
        shutil.copytree(tmpdir, new)
        line = [x.replace(tmpdir, new + "/") for x in cl]
    os.truncate(trace, 0) if os.path.exists(trace) else None
    c = timed(line, tenv)
    time.sleep(0.02)  # the child's marks after the answer
    marks = {"t0": c[0], "client-exit": c[1]}
    for entry in open(trace):
        pid, name, ns = entry.split()
        marks.setdefault(name, int(ns))
    rounds.append({"marks": marks, "cc": (a[1] - a[0]) / 1e6, "client": (c[1] - c[0]) / 1e6})
from linkwrap.cli.server import ask
from linkwrap.server import server as srv
ask(os.path.join(srv.run_dir(), srv.socket_name(srv.world_key())), "stop")
print(json.dumps(rounds))
'''


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", type=int, default=25)
    ap.add_argument("--rounds", type=int, default=2, help="server runs per tree, alternating")
    ap.add_argument("--link", choices=("app", "build-script"), default="app")
    ap.add_argument("--fresh-rustc-dir", action="store_true")
    ap.add_argument("--baseline", metavar="DIR")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import json
    from bench_overhead import capture_links
    with tempfile.TemporaryDirectory() as work:
        ws = os.path.join(work, "ws")
        shutil.copytree(os.path.join(ROOT, "examples", "cargo-workspace"), ws,
                        ignore=shutil.ignore_patterns("target", ".cargo"))
        target = os.path.join(work, "target")
        links = capture_links(ws, target, work)
        with open(os.path.join(target, "links.json"), "w") as f:
            json.dump(links, f)
        trees = {"this tree": instrumented(ROOT, os.path.join(work, "this"))}
        if a.baseline:
            trees["baseline"] = instrumented(os.path.abspath(a.baseline), os.path.join(work, "baseline"))
        print(f"load before: {load()}; the example's {a.link} link with mold, {a.rounds} x {a.links} links per "
              f"tree{', a new rustc directory every link' if a.fresh_rustc_dir else ''}")
        got = collections.defaultdict(list)
        for _ in range(a.rounds):
            for name, tree in trees.items():
                done = subprocess.run([sys.executable, "-c", ROUND, tree, a.link, str(a.links),
                                       "1" if a.fresh_rustc_dir else "0", ws, target],
                                      capture_output=True, text=True, cwd=tree,
                                      env={**os.environ, "PYTHONPATH": tree})
                if done.returncode:
                    sys.exit(f"{name}: {done.stderr}")
                got[name] += json.loads(done.stdout.splitlines()[-1])
        print(f"load after: {load()}")
        order = ["t0"] + [m[2] for m in MARKS] + ["client-exit"]
        print(f"{'ms, median (p90)':26s}" + "".join(f"{n:>22s}" for n in got))
        for prev, name in zip(order, order[1:]):
            cells = []
            for rounds in got.values():
                d = sorted((r["marks"][name] - r["marks"][prev]) / 1e6 for r in rounds
                           if name in r["marks"] and prev in r["marks"])
                cells.append(f"{statistics.median(d):9.3f} ({d[int(len(d) * 0.9)]:7.3f})" if d else f"{'-':>20s}")
            print(f"{prev + ' -> ' + name:26s}" + "".join(f"{c:>22s}" for c in cells))
        for label, (a_, b_) in (("args .. direct-line (the four)", ("pipeline", "direct-line")),
                                ("pipeline -> spawn", ("pipeline", "spawn"))):
            cells = []
            for rounds in got.values():
                d = sorted((r["marks"][b_] - r["marks"][a_]) / 1e6 for r in rounds if a_ in r["marks"] and b_ in r["marks"])
                cells.append(f"{statistics.median(d):9.3f} ({d[int(len(d) * 0.9)]:7.3f})")
            print(f"{label:26s}" + "".join(f"{c:>22s}" for c in cells))
        for name, rounds in got.items():
            diff = sorted(r["client"] - r["cc"] for r in rounds)
            print(f"{name}: client - cc per link, median {statistics.median(diff):+.1f} ms (p90 "
                  f"{diff[int(len(diff) * 0.9)]:+.1f})")


if __name__ == "__main__":
    main()
