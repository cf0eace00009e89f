"""Where one server link's wall time goes, stage by stage, in one or more linkwrap trees.

    python3 benchmarks/bench_timeline.py [--link app|build-script] [--runs 25] [TREE...]

Each TREE (default: this checkout; e.g. also `git archive main | tar -x -C DIR`) is copied and
instrumented -- a mark (pid, name, CLOCK_MONOTONIC ns) appended to a trace file at each stage of
the client (client.c) and of the server's child (server.py, run.py, pipeline.py) -- its native
client compiled and its server started; then the example's link runs through each tree's client
in interleaved rounds (each round in its own shuffled order, with `cc` and the linker run
directly), and per tree the median and p90 of each stage are printed:

  t0 -> client0      exec of the client
  connected, sent    the client's connect; its request sent
  accept             a spare wakes and accepts (the server's side)
  parsed             SO_PEERCRED, the request read and decoded
  fds                the client's fds taken (pidfd_getfd), 'T' sent
  taken              settle (cwd, environment, limits), the fds at their numbers
  pipeline           run_link's set-up: signals, the socket's O_ASYNC, the Invocation
  chosen             args, choose
  spawn              prepare, the direct line, up to posix_spawn
  exited             the linker's run (wait4)
  committed          the output moved into place
  answered           write_through, the answer's set-up and send
  answer             the client has read it
  t1                 the client's exit, as its caller sees it

--cpu prints, beside each stage's wall time, the CPU time the server's child spent in it (its own
getrusage at both marks; the client's stages show none): on two busy CPUs that is what a parallel
build pays. An anchor that is not found stops the script: the instrumentation must fit the tree it
measures. Not a test: figures for the notes (with `uptime`).
"""
import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

PY_MARK = ("import os as _o, time as _t\n"
           "def mark(name):\n"
           "    p = _o.environ.get('LW_TRACE')\n"
           "    if not p:\n"
           "        return\n"
           "    import resource\n"
           "    r = resource.getrusage(resource.RUSAGE_SELF)\n"
           "    flt, cpu = r.ru_minflt, int((r.ru_utime + r.ru_stime) * 1e6)\n"
           "    # Opened and closed at each mark, as the C client's: an fd kept open would stop a\n"
           "    # server's child from serving again (_back() checks its fds), and the figures would be a\n"
           "    # fresh spare's for every link.\n"
           "    fd = _o.open(p, _o.O_WRONLY | _o.O_APPEND | _o.O_CREAT | _o.O_CLOEXEC, 0o600)\n"
           "    _o.write(fd, f'{_o.getpid()} {name} {_t.monotonic_ns()} {flt} {cpu}\\n'.encode())\n"
           "    _o.close(fd)\n")
C_MARK = r"""#include <time.h>
static void mark(const char *n) {
    const char *p = getenv("LW_TRACE");
    if (!p)
        return;
    int fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    char b[128];
    int k = snprintf(b, sizeof b, "%d %s %lld 0 0\n", getpid(), n, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    if (write(fd, b, (size_t)k) < 0) {
    }
    close(fd);
}
"""
PM = "from linkwrap._timeline import mark; mark({!r})"

# The spares and the answer: in linkwrap/server/workers.py, in server.py in a tree before its split (instrument()).
WORKERS = ("linkwrap/server/workers.py", "linkwrap/server/server.py")
# (file or files: the first that has it, function (None: the whole file; a tuple: the first the file
# has), [regexes: the first that matches
# exactly one line], where, text)
ANCHORS = [
    ("linkwrap/server/client.c", None, [r"^extern char \*\*environ;"], "after", C_MARK),
    ("linkwrap/server/client.c", None, [r"^\s*g_argv = argv;"], "after", 'mark("client0");'),
    ("linkwrap/server/client.c", None, [r"^\s*close\(dir\);"], "before", 'mark("connected");'),
    ("linkwrap/server/client.c", None, [r"^\s*char a = 0;"], "before",
     'mark("sent");'),
    ("linkwrap/server/client.c", None, [r"^\s*if \(a == 'S'\)"], "before", 'mark("gotT");'),
    ("linkwrap/server/client.c", None, [r"^\s*if \(buf\[0\] == 'X'\)"], "before", 'mark("answer");'),
    (WORKERS, "spare", [r"reached = time\.perf_counter_ns\(\)"], "after", PM.format("accept")),
    ("linkwrap/server/server.py", "child", [r"^\s*fds = fds_of\("], "before", PM.format("parsed")),
    ("linkwrap/server/server.py", "child", [r"^\s*settle\(req, peer_pid\)", r"^\s*_settled = settle\("],
     "before", PM.format("fds")),
    ("linkwrap/server/server.py", "child", [r"_tidying\.append\(_tidying_file\(\)\)", r"^\s*done = \[\]"],
     "before", PM.format("taken")),
    ("linkwrap/server/server.py", "run_link", [r"return pipeline\.link\("], "before", PM.format("pipeline")),
    (WORKERS, "_answer", [r"conn\.sendall\(reply\)", r"conn\.send\(reply\)"], "after",
     PM.format("answered")),
    ("linkwrap/pipeline.py", ("_link", "link"), [r"settings, facts, decision = choice\.settings"], "after",
     PM.format("chosen")),
    ("linkwrap/run/run.py", "spawn", [r"pid = os\.posix_spawnp\("], "before", PM.format("spawn")),
    ("linkwrap/run/run.py", "spawn", [r"wall_ms = \(time\.perf_counter_ns\(\) - started\)"], "before",
     PM.format("exited")),
    ("linkwrap/run/run.py", "execute", [r"^    if error:"], "before", PM.format("committed")),
]
ORDER = ["t0", "client0", "connected", "sent", "accept", "parsed", "fds", "taken", "pipeline", "chosen", "spawn",
         "exited", "committed", "answered", "answer", "t1"]
MINE = {("accept", "parsed"), ("parsed", "fds"), ("fds", "taken"), ("taken", "pipeline"),
        ("exited", "committed"), ("committed", "answered"), ("answered", "answer"), ("answer", "t1")}


# --fine: more marks inside the stages, named "<coarse stage>.<what>"
FINE = [
    ("linkwrap/server/server.py", "child", [r"^\s*conn\.setblocking\(True\)"], "after", PM.format("accept.child")),
    ("linkwrap/server/server.py", "child", [r"peer_pid, peer_uid, _ = struct\.unpack", r"peer_pid, peer_uid, _ = _CREDS"], "after", PM.format("accept.creds")),
    ("linkwrap/server/server.py", "child", [r"^\s*data = _recv_exactly\(conn, size\)", r"^\s*data = _recv_exactly\(conn, 8, "], "after", PM.format("accept.recv")),
    ("linkwrap/server/server.py", "child", [r"^\s*req = parse_request\(data\)"], "after", PM.format("accept.decoded")),
    ("linkwrap/server/server.py", "child", [r"^\s*conn = take\(req, fds, conn\)"], "before", PM.format("fds.settled")),
    ("linkwrap/server/server.py", "run_link", [r"^\s*heard\(\)  # what came before"], "before", PM.format("taken.async")),
    ("linkwrap/run/run.py", "execute", [r"^\s*if rsp:  # before commit"], "before", PM.format("exited.spawned")),
    ("linkwrap/run/run.py", "spawn", [r"^\s*code = os\.waitstatus_to_exitcode"], "before", PM.format("exited.wall")),
    ("linkwrap/run/run.py", "execute", [r"^\s*result = list\(spawn\("], "after", PM.format("exited.result")),
    ("linkwrap/run/output.py", "commit", [r"^\s*swapped = _later is not None"], "after", PM.format("exited.swapped")),
    ("linkwrap/run/output.py", "commit", [r"^\s*_later\.append\(\(plan\.work_dir"], "after", PM.format("exited.kept")),
    ("linkwrap/run/run.py", "execute", [r"^\s*return Outcome\(\*result"], "before", PM.format("exited.outcome")),
    ("linkwrap/pipeline.py", ("_link", "link"), [r"^\s*answer\(outcome\.returncode\)"], "before",
     PM.format("committed.pipeline")),
    (WORKERS, "_answer", [r"faults\.UNHEARD = True"], "before", PM.format("committed.locked")),
    (WORKERS, "_answer", [r"^\s*for fd in fds:"], "before", PM.format("committed.nulled")),
]
# --back-to-back: when spares are forked and ready, when a link's child has tidied
SPARES = [
    (WORKERS, "serve", [r'^\s*state\["children"\]\.add\(pid\)'], "after",
     "from linkwrap._timeline import mark; mark(f'forked:{pid}')"),
    (WORKERS, "spare", [r"^\s*touch\(\)", r"^\s*_OWN\[\"env\"\] = dict"], "after",
     PM.format("ready")),
    ("linkwrap/server/server.py", "child", [r"^\s*output\.tidy\(\)"], "after", PM.format("tidied")),
]
FINE_ORDER = ["t0", "client0", "connected", "sent", "accept", "accept.child", "accept.creds", "accept.recv", "accept.decoded", "parsed",
              "fds", "fds.settled", "taken", "taken.async", "pipeline", "chosen", "spawn", "exited", "exited.wall", "exited.result", "exited.spawned", "exited.swapped", "exited.kept",
              "committed", "exited.outcome", "committed.pipeline", "committed.locked", "committed.nulled", "answered", "answer", "t1"]


def _coarse(name):
    return name.split(".")[0]


def instrument(tree, dest, fine=False, spares=False):
    shutil.copytree(tree, dest, ignore=shutil.ignore_patterns(".git", "*.egg-info", "__pycache__", "target"))
    with open(os.path.join(dest, "linkwrap", "_timeline.py"), "w") as f:
        f.write(PY_MARK)
    for path, func, patterns, where, text in ANCHORS + (FINE if fine else []) + (SPARES if spares else []):
        for path in ((path,) if isinstance(path, str) else path):
            full = os.path.join(dest, path)
            names = func if isinstance(func, tuple) else (func,)
            if os.path.exists(full) and (not func or any(re.search(rf"(?m)^\s*def {f}\(", open(full).read())
                                                         for f in names)):
                break
        lines = open(full).read().split("\n")
        if isinstance(func, tuple):  # the first of these functions the file has (pipeline.link's body: _link)
            func = next((f for f in func if any(re.match(rf"\s*def {f}\(", line) for line in lines)), func[-1])
        lo, hi = 0, len(lines)
        if func:
            lo = next(i for i, line in enumerate(lines) if re.match(rf"\s*def {func}\(", line))
            indent = len(lines[lo]) - len(lines[lo].lstrip())
            hi = next((i for i in range(lo + 1, len(lines)) if lines[i].strip() and
                       len(lines[i]) - len(lines[i].lstrip()) <= indent and not lines[i].lstrip().startswith(")")),
                      len(lines))
        for pattern in patterns:
            hits = [i for i in range(lo, hi) if re.search(pattern, lines[i])]
            if len(hits) == 1:
                break
        else:
            sys.exit(f"{tree}: no single line for {patterns} in {path} {func or ''}")
        i = hits[0]
        pad = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
        new = [text if "\n" in text else pad + text]
        lines[i + (where == "after"):i + (where == "after")] = new
        with open(full, "w") as f:
            f.write("\n".join(lines))


def start(tree, trace):
    """Compile tree's client into this LINKWRAP_HOME and start its server: -> (client, socket)."""
    from bench_overhead import other_tree
    return other_tree(tree, LW_TRACE=trace)


def timed(cmd, env, cwd):
    t0 = time.monotonic_ns()
    done = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t1 = time.monotonic_ns()
    if done.returncode:
        sys.exit(f"failed: {cmd}\n{done.stderr.decode()}")
    return t0, t1


def p90(v):
    s = sorted(v)
    return s[min(len(s) - 1, int(len(s) * 0.9))]


def back_to_back(opts, trees, cmds, ws):
    """Each tree's link run opts.runs times in a row; then, per link, whether a spare was being
    forked or rehearsing (from the parent's fork to the spare's wait) while the link was between its
    accept and its answer, and the link's wall time and accept -> answered with and without."""
    for n, (tree, copy, trace, client, sock) in enumerate(trees):
        cmd, e = cmds[n]
        time.sleep(1)
        open(trace, "w").close()
        ends = []
        for _ in range(opts.runs):
            ends.append(timed(cmd, e, ws))
            if opts.gap_ms:
                time.sleep(opts.gap_ms / 1000)
        time.sleep(0.5)
        events = [(int(ns), pid, mark) for pid, mark, ns, _f, _c in (line.split() for line in open(trace))]
        events.sort()
        forked = {int(m.split(":")[1]): ns for ns, _p, m in events if m.startswith("forked:")}
        ready = {int(p): ns for ns, p, m in events if m == "ready"}
        busy = [(forked[p], ready.get(p, forked[p])) for p in forked]
        links = []
        for ns, p, m in events:
            if m == "accept":
                links.append({"pid": p, "accept": ns})
            elif links and m in ("answered", "tidied") and links[-1]["pid"] == p:
                links[-1][m] = ns
            elif m in ("answered", "tidied"):
                for link in links:
                    if link["pid"] == p:
                        link[m] = ns
        links = [x for x in links if "answered" in x][-len(ends):]
        rows = {"meets a spare forked or rehearsing": [], "meets none": []}
        tidy_rows = {"meets the previous link's tidying": [], "after it": []}
        for i, (link, (t0, t1)) in enumerate(zip(links, ends)):
            a, b = link["accept"], link["answered"]
            hit = any(s < b and e > a for s, e in busy)
            key = "meets a spare forked or rehearsing" if hit else "meets none"
            rows[key].append(((t1 - t0) / 1e6, (b - a) / 1e6))
            if i:
                prev = links[i - 1].get("tidied")
                tidy_rows["meets the previous link's tidying" if prev and prev > a else "after it"].append(
                    ((t1 - t0) / 1e6, (b - a) / 1e6))
        print(f"tree{n} {tree}: {len(links)} links back to back, {len(busy)} spares forked")
        for title, group in (*rows.items(), *tidy_rows.items()):
            if group:
                walls = [w for w, _ in group]
                inside = [x for _, x in group]
                print(f"  {title:36s} n={len(group):3d}  wall median {statistics.median(walls):6.2f} p90 "
                      f"{p90(walls):6.2f} | accept->answered median {statistics.median(inside):6.2f} p90 {p90(inside):6.2f}")
    print(f"uptime after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="*", default=[ROOT])
    ap.add_argument("--link", default="app", choices=("app", "build-script"))
    ap.add_argument("--runs", type=int, default=25)
    ap.add_argument("--linker", default="mold")
    ap.add_argument("--gap-ms", type=float, default=0, help="a pause after each command (default none: back to back)")
    ap.add_argument("--fine", action="store_true", help="finer marks inside the starred stages")
    ap.add_argument("--cpu", action="store_true",
                    help="each stage's CPU time in the server's child (its getrusage at both marks) instead of page faults")
    ap.add_argument("--back-to-back", action="store_true",
                    help="links of one tree one after the other (no cc between): do they meet a spare being "
                         "forked or rehearsing, and what does that cost them?")
    opts = ap.parse_args()
    import bench_overhead as bo
    work = tempfile.mkdtemp(prefix="timeline-")
    os.environ["LINKWRAP_HOME"] = os.path.join(work, "home")
    trees = []
    try:
        for n, tree in enumerate(opts.trees):
            copy = os.path.join(work, f"tree{n}")
            instrument(os.path.abspath(tree), copy, opts.fine, opts.back_to_back)
            trace = os.path.join(work, f"trace{n}")
            open(trace, "w").close()
            trees.append((tree, copy, trace, *start(copy, trace)))
        ws = os.path.join(work, "ws")
        shutil.copytree(os.path.join(ROOT, "examples", "cargo-workspace"), ws,
                        ignore=shutil.ignore_patterns("target", ".cargo"))
        links = bo.capture_links(ws, os.path.join(work, "target"), work)
        from linkwrap.request import args
        from linkwrap.run import run
        from linkwrap.choice.choose import choose
        env = {**os.environ, "LINKWRAP_LINKER": opts.linker}
        argv = links[opts.link]
        req = args.parse(argv, environ=env, cwd=ws)
        dec = choose(req, env).decision
        cmds = {"cc": (run.command(req, dec._replace(linker_flags=(), driver_flags=()), os.path.join(work, "cc-out")),
                       env)}
        for n, (tree, copy, trace, client, sock) in enumerate(trees):
            cmds[n] = ([client, *args.with_output(argv, os.path.join(work, f"out{n}"))], {**env, "LW_TRACE": trace})
        for _ in range(3):
            for cmd, e in cmds.values():
                timed(cmd, e, ws)
        print(f"uptime: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1/5/15 min load), {os.cpu_count()} CPUs; "
              f"{opts.link} link, {opts.linker}, {opts.runs} interleaved rounds")
        if opts.back_to_back:
            return back_to_back(opts, trees, cmds, ws)
        walls = {k: [] for k in cmds}
        rounds = {n: [] for n in range(len(trees))}
        order = random.Random(16)
        for _ in range(opts.runs):
            names = list(cmds)
            order.shuffle(names)
            ends = {}
            for name in names:
                cmd, e = cmds[name]
                t0, t1 = timed(cmd, e, ws)
                walls[name].append((t1 - t0) / 1e6)
                ends[name] = (t0, t1)
                if opts.gap_ms:
                    time.sleep(opts.gap_ms / 1000)
            # Read after the whole round: no pause after a link, whose marks after the answer (its
            # child's) are written by then.
            for n in range(len(trees)):
                marks, faults = {"t0": ends[n][0], "t1": ends[n][1]}, {}
                for line in open(trees[n][2]):  # the last of each: a late mark of the round before comes first
                    _, mark, ns, flt, cpu = line.split()
                    marks[mark] = int(ns)
                    faults[mark] = int(cpu if opts.cpu else flt)
                os.truncate(trees[n][2], 0)
                rounds[n].append((marks, faults))
        print(f"cc {statistics.median(walls['cc']):.1f} ms (median)")
        for n, (tree, *_rest) in enumerate(trees):
            d = [c - a for a, c in zip(walls["cc"], walls[n])]
            print(f"tree{n} {tree}: client {statistics.median(walls[n]):.1f} ms, client - cc per round median "
                  f"{statistics.median(d):+.2f} p90 {p90(d):+.2f}")
        what = "CPU ms of the marking process" if opts.cpu else "page faults"
        print(f"{'stage (ms; ' + what + ')':>26s}" + "".join(f" | tree{n} median   p90 {'  cpu' if opts.cpu else '  flt'}"
                                                               for n in range(len(trees))))
        totals = {n: [0.0] * opts.runs for n in range(len(trees))}
        seen = [m for m in (ORDER if not opts.fine else FINE_ORDER)
                if all(m in r[0] for n in rounds for r in rounds[n][:3])]
        prev = seen[0]
        for name in seen[1:]:
            row = f"{('* ' if (prev, name) in MINE else '') + prev + ' -> ' + name:>26s}"
            for n in range(len(trees)):
                got = [(m[name] - m[prev]) / 1e6 if name in m and prev in m else None for m, _f in rounds[n]]
                if (prev, name) in MINE or opts.fine and ORDER.index(_coarse(name)) > 0 and (
                        _coarse(prev), _coarse(name)) in MINE | {(a, a) for a, _b in MINE}:
                    totals[n] = [a + (b or 0.0) for a, b in zip(totals[n], got)]
                d = [x for x in got if x is not None]
                flt = [f[name] - f[prev] for _m, f in rounds[n] if name in f and prev in f and f[prev] and f[name]]
                if opts.cpu:  # the same process at both marks only (the client's marks carry none)
                    flt = [x / 1000 for x in flt if x >= 0]
                    row += f" | {statistics.median(d):8.2f} {p90(d):6.2f} {statistics.median(flt) if flt else 0:5.2f}"
                else:
                    row += f" | {statistics.median(d):8.2f} {p90(d):6.2f} {statistics.median(flt) if flt else 0:4.0f}"
            print(row)
            prev = name
        print(f"{'* (sum per round)':>26s}" + "".join(
            f" | {statistics.median(totals[n]):8.2f} {p90(totals[n]):6.2f}     " for n in range(len(trees))))
        if len(trees) > 1:
            for n in range(1, len(trees)):
                d = [b - a for a, b in zip(totals[0], totals[n])]
                w = [b - a for a, b in zip(walls[0], walls[n])]
                print(f"* tree{n} - tree0 per round: starred stages median {statistics.median(d):+.2f} ms "
                      f"(p90 {p90(d):+.2f}); client wall median {statistics.median(w):+.2f} (p90 {p90(w):+.2f})")
        print(f"uptime after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        from linkwrap.cli.server import ask
        for tree, copy, trace, client, sock in trees:
            try:
                ask(sock, "stop")
            except Exception:
                pass
        time.sleep(0.5)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
