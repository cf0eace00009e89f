"""linkwrap's own time on a many-input Rust link through the warm server (issue 36 item 6): the
records' overhead_ms, trees interleaved, and where it goes, stage by stage.

    python3 benchmarks/bench_many_inputs.py [--modules 128] [--funcs 5] [--runs 15] [--linker wild]
                                            [--baseline TREE] [--stages-only]

The project is benchmarks/genproject.py's std-only Rust program; 128 modules of 5 functions make
rustc's debug link ~280 inputs (258 codegen units' objects, 19 rlibs), ~170 MB. Its command line is
rustc's own (-C save-temps keeps the objects for the next run). Each link goes to its own output,
which is then hard-linked once more, as Cargo uplifts `deps/<name>-<hash>` to `target/debug/<name>`.

1. overhead_ms: each tree (this checkout, and --baseline, e.g. `git archive main | tar -x -C DIR`)
   gets its native client and server (a fresh LINKWRAP_HOME for this run); the link runs through
   each client in interleaved rounds, each round in its own order; each link's record (the spool)
   gives its overhead_ms (pipeline.link's start to the answer, less the linker's run) and the
   linker's wall_ms. Printed: medians and p90, and the client's wall time as the build sees it.
2. stages: in a child forked from a process that imported the link path and rehearsed this link
   (as a spare does), the link runs with the functions below timed (their own wall time, nested
   ones inside their callers); "before" is pipeline.link's start to the linker's spawn, "after" the
   linker's exit to the answer. Medians of --stage-links links.

Not a test: figures for docs/hot-path.md (with the load, printed).
"""
import argparse
import json
import marshal
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

# module.function, timed in the stages' child (where a tree lacks one, it is left out)
STAGES = """
linkwrap.paths.untrusted_state linkwrap.request.args.links linkwrap.request.args.parse linkwrap.pipeline.choose
linkwrap.request.config.load linkwrap.facts.linkers.discover linkwrap.facts.probe.snapshot
linkwrap.evidence.measured.applicable linkwrap.choice.policy.decide linkwrap.run.output.prepare
linkwrap.run.run.direct_command linkwrap.run.direct.lto_input linkwrap.run.direct.learn linkwrap.run.direct.split
linkwrap.facts.linkers.shim_dir linkwrap.run.output.commit linkwrap.run.run.write_through linkwrap.pipeline._save
linkwrap.pipeline._keep_inputs linkwrap.pipeline._complete linkwrap.facts.build.identify
""".split()

CHILD = r"""
import importlib, json, marshal, os, sys, time
from linkwrap.server import warm, world
from linkwrap.request import args, invocation
from linkwrap.run import output
from linkwrap import pipeline
import linkwrap
assert linkwrap.__file__.startswith(os.environ["PYTHONPATH"] + "/"), linkwrap.__file__
argv, cwd, env, out, links, stages = json.loads(sys.argv[1])
warm.warm()
os.chdir(cwd)
argv = args.with_output(list(argv), out)
rows = []
for i in range(links + 2):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        import gc
        gc.disable()
        warm.rehearse(marshal.dumps((tuple(argv), None, cwd, env)))
        marks, acc = {}, {}
        spawn, wait4 = os.posix_spawnp, os.wait4

        def timed_spawn(*a, **k):
            marks["spawn"] = time.perf_counter_ns()
            return spawn(*a, **k)

        def timed_wait4(*a, **k):
            try:
                return wait4(*a, **k)
            finally:
                marks.setdefault("exited", time.perf_counter_ns())

        os.posix_spawnp, os.wait4 = timed_spawn, timed_wait4
        for spec in stages:
            name, fn = spec.rsplit(".", 1)
            try:
                m = importlib.import_module(name)
                f = getattr(m, fn)
            except (ImportError, AttributeError):
                continue
            label = name.split(".")[-1] + "." + fn

            def timed(*a, _f=f, _label=label, **k):
                t = time.perf_counter_ns()
                try:
                    return _f(*a, **k)
                finally:
                    acc[_label] = acc.get(_label, 0) + time.perf_counter_ns() - t
            setattr(m, fn, timed)
        output.defer()
        started = time.perf_counter_ns()
        inv = invocation.Invocation(tuple(argv), None, env, cwd, os.getpid(), None, "server", started,
                                    world._OWN.get("reaps", False))
        pipeline.link(inv, lambda status: marks.setdefault("answer", time.perf_counter_ns()))
        output.tidy()
        os.write(w, json.dumps([(marks["spawn"] - started) / 1e6, (marks["answer"] - marks["exited"]) / 1e6,
                                {k: v / 1e6 for k, v in acc.items()}]).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    try:
        os.unlink(out + ".uplifted")
    except OSError:
        pass
    os.link(out, out + ".uplifted")  # Cargo's target/debug/<name>
    if i >= 2:
        rows.append(json.loads(data))
print(json.dumps(rows))
"""


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def p90(v):
    s = sorted(v)
    return s[min(len(s) - 1, int(len(s) * 0.9))]


def spool(home):
    """Every record in home's spool, oldest first."""
    try:
        data = open(os.path.join(home, "links.spool"), "rb").read()
    except OSError:
        return []
    out, i = [], 0
    while (j := data.find(b"LWr\x01", i)) >= 0:
        n = int.from_bytes(data[j + 4:j + 8], "little")
        out.append(marshal.loads(data[j + 8:j + 8 + n]))
        i = j + 8 + n
    return out


def uplift(out):
    """Cargo's second name for the output (target/debug/<name>), made again after each link."""
    try:
        os.unlink(out + ".uplifted")
    except OSError:
        pass
    os.link(out, out + ".uplifted")


def overhead(trees, argv, cwd, env, runs, work):
    from bench_overhead import other_tree
    from linkwrap.request import args
    started = [(name, *other_tree(tree)) for name, tree in trees.items()]
    home = os.environ["LINKWRAP_HOME"]
    cmds = {name: [client, *args.with_output(argv, os.path.join(work, f"out-{name}"))]
            for name, client, _sock in started}
    seen = 0

    def link(name):
        nonlocal seen
        t0 = time.monotonic_ns()
        subprocess.run(cmds[name], env=env, cwd=cwd, check=True)
        wall = (time.monotonic_ns() - t0) / 1e6
        uplift(os.path.join(work, f"out-{name}"))
        seen += 1
        deadline = time.monotonic() + 20
        while len(recs := spool(home)) < seen and time.monotonic() < deadline:
            time.sleep(0.02)  # the record comes after the answer
        rec = recs[-1]
        assert len(recs) == seen and rec["output_path"].endswith(f"out-{name}"), (len(recs), seen)
        assert rec["entry_point"] == "server", rec["entry_point"]
        time.sleep(0.1)  # the child's tidying, off the next link's path
        return rec, wall

    try:
        for _ in range(3):
            for name in cmds:
                link(name)
        print(f"load before: {load()} (1/5/15 min), {os.cpu_count()} CPUs; {runs} interleaved rounds")
        got = {name: [] for name in cmds}
        order = random.Random(36)
        for _ in range(runs):
            names = list(cmds)
            order.shuffle(names)
            for name in names:
                got[name].append(link(name))
        print(f"load after: {load()}")
        print(f"{'tree':12s} {'overhead_ms median':>19s} {'p90':>7s} {'linker wall_ms':>15s} {'client wall':>12s}"
              f"  linker, start")
        for name, rows in got.items():
            o = [r["overhead_ms"] for r, _ in rows]
            print(f"{name:12s} {statistics.median(o):19.2f} {p90(o):7.2f} "
                  f"{statistics.median(r['wall_ms'] for r, _ in rows):15.1f} "
                  f"{statistics.median(w for _, w in rows):12.1f}  {rows[0][0]['linker']}, {rows[0][0]['linker_start']}")
        if len(got) == 2:
            a, b = (got[n] for n in cmds)
            for label, pick in (("overhead_ms", lambda x: x[0]["overhead_ms"]),
                                ("linker wall_ms", lambda x: x[0]["wall_ms"]), ("client wall", lambda x: x[1])):
                d = [pick(y) - pick(x) for x, y in zip(a, b)]
                print(f"per round, {list(cmds)[1]} - {list(cmds)[0]}: {label} median {statistics.median(d):+.2f} "
                      f"(p10 {sorted(d)[len(d) // 10]:+.2f}, p90 {p90(d):+.2f})")
    finally:
        from linkwrap.cli.server import ask
        for _name, _client, sock in started:
            try:
                ask(sock, "stop")
            except Exception:
                pass


def stages(trees, argv, cwd, env, links, work):
    print(f"stages: {links} links per tree in a rehearsed child (load {load()})")
    result = {}
    for name, tree in trees.items():
        e = {**os.environ, "PYTHONPATH": tree, "LINKWRAP_HOME": os.path.join(work, f"stages-{name}")}
        done = subprocess.run([sys.executable, "-S", "-c", CHILD,
                               json.dumps([argv, cwd, env, os.path.join(work, f"st-{name}"), links, STAGES])],
                              env=e, cwd=tree, capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"{tree}: {done.stderr}")
        result[name] = json.loads(done.stdout.splitlines()[-1])
    names = list(result)
    print(f"{'ms, median':32s}" + "".join(f" {n:>12s}" for n in names))
    for label, i in (("before the linker", 0), ("after it, to the answer", 1)):
        print(f"{label:32s}" + "".join(f" {statistics.median(r[i] for r in result[n]):12.2f}" for n in names))
    keys = sorted({k for n in names for r in result[n] for k in r[2]},
                  key=lambda k: -statistics.median(r[2].get(k, 0) for r in result[names[0]]))
    for k in keys:
        print(f"  {k:30s}" + "".join(f" {statistics.median(r[2].get(k, 0.0) for r in result[n]):12.3f}"
                                     for n in names))
    print("  (meanwhile's _complete, _keep_inputs and build.identify run while the linker does)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modules", type=int, default=128)
    ap.add_argument("--funcs", type=int, default=5)
    ap.add_argument("--runs", type=int, default=15, help="interleaved rounds through the servers")
    ap.add_argument("--stage-links", type=int, default=7)
    ap.add_argument("--linker", default="wild")
    ap.add_argument("--baseline", metavar="TREE")
    ap.add_argument("--project", metavar="DIR", help="an existing genproject.py project (built there) to reuse")
    ap.add_argument("--stages-only", action="store_true")
    opts = ap.parse_args()
    import genproject
    work = tempfile.mkdtemp(prefix="many-inputs-")
    os.environ["LINKWRAP_HOME"] = os.path.join(work, "home")
    try:
        project = opts.project or genproject.rust(os.path.join(work, "big"), opts.modules, opts.funcs)
        argv, link_env, cwd = genproject.rust_link(project)
        env = {**os.environ, **link_env, "LINKWRAP_LINKER": opts.linker}
        wild = shutil.which("wild", path=os.environ.get("PATH")) or ""
        if opts.linker == "wild" and not wild:
            sys.exit("wild is not on PATH (export PATH=$(ls -d /work/shared/tools/wild/*/ | tail -1):$PATH)")
        if wild:  # rustc's PATH (its own gcc-ld first) with the linker's directory
            env["PATH"] = os.path.dirname(wild) + os.pathsep + link_env.get("PATH", os.environ["PATH"])
        n_in = sum(1 for a in argv if a.endswith((".o", ".rlib", ".a")))
        print(f"link: {n_in} inputs, {genproject.input_bytes(argv, cwd) / 1e6:.0f} MB, linker {opts.linker}")
        trees = {"this tree": ROOT}
        if opts.baseline:
            trees = {"baseline": os.path.abspath(opts.baseline), **trees}
        if not opts.stages_only:
            overhead(trees, argv, cwd, env, opts.runs, work)
        stages(trees, argv, cwd, env, opts.stage_links, work)
    finally:
        time.sleep(0.5)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
