"""What linkwrap adds to a link: wall time through linkwrap minus `cc` with the same linker and
the same arguments, per entry point -- the Python script (a process per link) and the native
client with the warm link server -- on real links:

  app           the bundled example's binary (examples/cargo-workspace)
  build-script  the example's build script
  big           a generated std-only Rust debug link (benchmarks/genproject.py; ~150 MB of inputs)

then a clean `cargo build` of the example and a parallel ninja build of many small C programs,
with and without linkwrap; last, parsing a 1 MB and a 100 MB @response file (--response-files: that alone).

    python3 benchmarks/bench_overhead.py [--runs 21] [--linker mold] [--no-big] [--builds 5]
                                         [--baseline DIR] [--client PATH] [--old-100mb]
    python3 benchmarks/bench_overhead.py --response-files [--runs 21] [--old-100mb]

--baseline DIR adds another linkwrap tree's native client and server (DIR: a checkout, e.g.
`git archive main | tar -x -C DIR`) to the same interleaved rounds, and prints this tree's client
against it, round by round: a comparison the machine's load cannot bias.

Each link: rustc's own command line, captured with a recording linker while the objects are
kept (-C save-temps). `cc` is the link without linkwrap: the caller's own arguments (rustc's
forcing of its rust-lld taken out) with the same linker (linkwrap's -B shim, whose `ld` is it:
each output's .comment is checked) and none of the flags linkwrap adds -- mold and wild fork, as
they do for a user without linkwrap. `cc+flags` is the same with linkwrap's flags for the script
(--no-fork, --threads=N), the baseline these figures were once taken against. `cc again` is `cc`
once more in the same round: its row is the noise floor, what a difference of two runs of one
command looks like on this machine (its p90 is the smallest p90 any other row can have). The commands are
interleaved (cc, cc+flags, script, client; each round in its own shuffled order) after a
warm-up; the figure is the per-round difference against cc: median, p90, and a 95 % confidence
interval of the median (order statistics); then the shift of the tail itself, each command's p90
minus cc's, with a 95 % bootstrap interval. A negative median is a link that is faster through
linkwrap than without it. Not a test: figures for the notes (with `uptime`).
"""
import argparse
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

RECORDER = """#!/bin/sh
# Records rustc's link command lines (one JSON list per line), then links as asked.
{python} -c 'import json, sys; open(sys.argv[1], "a").write(json.dumps(sys.argv[2:]) + "\\n")' "$LINK_LOG" "$@"
exec cc "$@"
"""


def capture_links(ws, target, work):
    """Build the example with a recording linker and -C save-temps: {kind: argv} of its links."""
    rec = os.path.join(work, "record-cc")
    with open(rec, "w") as f:
        f.write(RECORDER.format(python=shlex.quote(sys.executable)))
    os.chmod(rec, 0o755)
    log = os.path.join(work, "links.jsonl")
    env = {**os.environ, "CARGO_TARGET_DIR": target, "LINK_LOG": log, "RUSTFLAGS": "-C save-temps",
           "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER": rec}
    subprocess.run(["cargo", "build", "-q"], cwd=ws, env=env, check=True)
    links = {}
    for line in open(log):
        argv = json.loads(line)
        out = argv[argv.index("-o") + 1]
        if "build_script_build" in os.path.basename(out):
            links["build-script"] = argv
        elif os.path.basename(out).startswith("app-"):
            links["app"] = argv
    return links


def timed(cmd, env, cwd):
    t = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = (time.perf_counter() - t) * 1000
    if done.returncode:
        sys.exit(f"failed: {shlex.join(cmd)}\n{done.stderr.decode()}")
    return elapsed


def median_ci(values):
    """(median, p90, (low, high)): a 95 % interval of the median from the order statistics."""
    s = sorted(values)
    n = len(s)
    half = 1.96 * math.sqrt(n) / 2
    lo, hi = max(0, int(math.floor(n / 2 - half))), min(n - 1, int(math.ceil(n / 2 + half)))
    return statistics.median(s), s[min(n - 1, int(n * 0.9))], (s[lo], s[hi - 1 if hi > lo else hi])


def p90(values):
    s = sorted(values)
    return s[min(len(s) - 1, int(len(s) * 0.9))]


def p90_shift(base, other, resamples=2000):
    """p90(other) - p90(base), and a 95 % bootstrap interval (rounds resampled in pairs): how much
    slower the slow links are. The p90 of the per-round differences above is, on a noisy machine,
    mostly the two runs' own spread (see `cc again`); this compares the tails themselves."""
    import random
    rng = random.Random(90)
    pairs = list(zip(base, other))
    shifts = []
    for _ in range(resamples):
        pick = [rng.choice(pairs) for _ in pairs]
        shifts.append(p90([b for _, b in pick]) - p90([a for a, _ in pick]))
    shifts.sort()
    return p90(other) - p90(base), (shifts[int(resamples * 0.025)], shifts[int(resamples * 0.975) - 1])


def bench_link(label, argv, cwd, env, linker, client, script, runs, work, baseline=None):
    from linkwrap.request import args
    from linkwrap.run import run
    from linkwrap.choice.choose import choose
    env = {**env, "LINKWRAP_LINKER": linker}
    req = args.parse(argv, environ=env, cwd=cwd)
    decision = choose(req, env).decision  # the script's: what the cc+flags column adds
    assert decision.linker and decision.linker.name == linker, decision
    outs = {k: os.path.join(work, f"{label.split()[0]}-{k}")
            for k in ("cc", "cc again", "cc+flags", "script", "client", "baseline")}
    cmds = {"cc": run.command(req, decision._replace(linker_flags=(), driver_flags=()), outs["cc"]),
            "cc again": run.command(req, decision._replace(linker_flags=(), driver_flags=()), outs["cc again"]),
            "cc+flags": run.command(req, decision, outs["cc+flags"]),
            "script": [script, *args.with_output(argv, outs["script"])],
            "client": [client, *args.with_output(argv, outs["client"])]}
    if baseline:
        cmds["baseline"] = [baseline, *args.with_output(argv, outs["baseline"])]
    for name in cmds:  # warm: page cache, linkwrap's caches, the server's first fork
        timed(cmds[name], env, cwd)
        timed(cmds[name], env, cwd)
    for name in ("cc", "client"):
        assert linked_by(outs[name], linker), f"{name} did not link {outs[name]} with {linker}"
    samples = {k: [] for k in cmds}
    import random
    order = random.Random(16)
    for _ in range(runs):
        # Each round in its own order: a link through the server leaves its child tidying at nice 19
        # after the answer, and a forking linker leaves its worker freeing memory; the next command
        # meets them. In a fixed (or rotated) order that would always be the same command.
        names = list(cmds)
        order.shuffle(names)
        for name in names:
            samples[name].append(timed(cmds[name], env, cwd))
    base = statistics.median(samples["cc"])
    print(f"{label:13s} cc {base:7.1f} ms")
    for name in [n for n in cmds if n != "cc"]:
        med, p90, (lo, hi) = median_ci([b - a for a, b in zip(samples["cc"], samples[name])])
        q, (qlo, qhi) = p90_shift(samples["cc"], samples[name])
        print(f"{'':13s} {name:8s} {med:+6.1f} (p90 {p90:+6.1f}, 95% CI {lo:+.1f}..{hi:+.1f}; "
              f"its p90 - cc's p90 {q:+.1f}, 95% CI {qlo:+.1f}..{qhi:+.1f})")
    if baseline:
        med, p90, (lo, hi) = median_ci([b - a for a, b in zip(samples["baseline"], samples["client"])])
        print(f"{'':13s} client - baseline client, per round: median {med:+.1f} ms (p90 {p90:+.1f}, "
              f"95% CI {lo:+.1f}..{hi:+.1f})")
    # linkwrap's own time as its records tell it (start-up + its work, the linker's run excluded):
    # less sensitive to a busy machine's scheduling than the wall-time differences above.
    from linkwrap.store import db
    rows = db.open_store().execute(
        "SELECT entry_point, linker_start, startup_ms, overhead_ms FROM links WHERE output_path IN (?, ?)",
        (outs["script"], outs["client"])).fetchall()
    for entry in ("script", "server"):
        own = [(r[2] or 0) + r[3] for r in rows if r[0] == entry]
        starts = {r[1] for r in rows if r[0] == entry}
        if own:
            print(f"{'':13s} {entry}: linkwrap's own time {statistics.median(own):.1f} ms median over "
                  f"{len(own)} links (start {'/'.join(sorted(starts))})")
    # Their records' memory and CPU: the client's server forks mold and wild and reaps the worker,
    # the script runs them with --no-fork; both figures must be the linker's own.
    for name in [n for n in ("script", "client", "baseline") if n in cmds]:
        got = db.open_store().execute("SELECT peak_rss_kb, user_ms + sys_ms, flags_added FROM links "
                                      "WHERE output_path = ?", (outs[name],)).fetchall()
        if got:
            forks = "--no-fork" if "--no-fork" in (got[-1][2] or "") else "forking"
            print(f"{'':13s} {name} records ({forks}): peak RSS {statistics.median(r[0] for r in got) / 1024:.1f} MiB, "
                  f"user+sys {statistics.median(r[1] for r in got):.1f} ms (medians of {len(got)})")
    for name in [n for n in ("client", "baseline") if n in cmds]:
        parts(name, outs[name], samples)
    breakdown(samples, req, decision, env, cwd, work)


def linked_by(path, linker) -> bool:
    """Whether path's .comment names linker (mold, wild and lld sign their outputs; GNU ld and gold
    do not: for them nothing is checked)."""
    sign = {"mold": b"mold ", "wild": b"Linker: Wild", "lld": b"Linker: LLD", "rust-lld": b"Linker: LLD"}.get(linker)
    if sign is None:
        return True
    done = subprocess.run(["readelf", "-p", ".comment", path], capture_output=True)
    return sign in done.stdout


def parts(name, out, samples):
    """Where a client's wall time goes, per round from its records: the server's accept to the
    link's start (hand-off and child setup: startup_ms), linkwrap's work to the answer (overhead_ms),
    the linker, and the rest (the client's exec, connect, the answer and its exit)."""
    from linkwrap.store import db
    rows = db.open_store().execute("SELECT startup_ms, overhead_ms, wall_ms FROM links WHERE output_path = ? "
                                   "ORDER BY id", (out,)).fetchall()[-len(samples[name]):]
    if len(rows) != len(samples[name]):
        print(f"{'':13s} {name}: {len(rows)} records for {len(samples[name])} links: no breakdown")
        return
    setup = [r[0] or 0.0 for r in rows]
    own = [r[1] for r in rows]
    linker = [r[2] for r in rows]
    rest = [c - a - b - d for c, a, b, d in zip(samples[name], setup, own, linker)]
    med = statistics.median
    print(f"{'':13s} {name}, median/p90 (ms): exec+connect+answer+exit {med(rest):.1f}/{p90(rest):.1f} | "
          f"hand-off+child setup {med(setup):.1f}/{p90(setup):.1f} | linkwrap to the answer "
          f"{med(own):.1f}/{p90(own):.1f} | linker {med(linker):.1f} (cc {med(samples['cc']):.1f}: driver hop + linker)")


def breakdown(samples, req, decision, env, cwd, work, rounds=15):
    """linkwrap's work split by stage, timed in this process on the same link."""
    med = statistics.median
    from linkwrap.request import invocation
    from linkwrap.run import output, run
    from linkwrap import pipeline
    from linkwrap.facts import probe
    from linkwrap import libc
    libc.syscall()  # as the server does before its first link: commit and the history exchange names
    times = {}

    def timing(mod, name, label):
        f = getattr(mod, name)

        def timed_call(*a, **k):
            t = time.perf_counter_ns()
            try:
                return f(*a, **k)
            finally:
                times.setdefault(label, []).append((time.perf_counter_ns() - t) / 1e6)
        setattr(mod, name, timed_call)
        return f

    saved = [(m, n, timing(m, n, label)) for m, n, label in (
        (pipeline, "choose", "choose"), (run, "direct_command", "direct line"), (output, "prepare", "prepare"),
        (output, "commit", "commit"), (run, "spawn", "spawn+linker"), (pipeline, "_leave", "memory"),
        (output, "tidy", "tidy"))]
    answered = []
    out = os.path.join(work, "breakdown-out")
    old = os.getcwd()
    os.chdir(cwd)
    try:
        for i in range(rounds + 2):
            output.defer()
            started = time.perf_counter_ns()
            inv = invocation.Invocation(tuple(args_with_output(req.argv, out)), None, env, cwd, os.getpid(), None,
                                        "server", started)
            pipeline.link(inv, lambda status: answered.append((time.perf_counter_ns() - started) / 1e6))
            output.tidy()
            if i == 1:
                times.clear()
                answered.clear()
    finally:
        os.chdir(old)
        for m, n, f in saved:
            setattr(m, n, f)
    spawn = med(times["spawn+linker"])
    print(f"{'':13s} in one process (ms): to the answer {med(answered) - spawn:.2f} besides the linker: "
          + ", ".join(f"{k} {med(v):.2f}" for k, v in times.items() if k != "spawn+linker")
          + " (memory and tidy come after the answer)")


def args_with_output(argv, out):
    from linkwrap.request import args
    return args.with_output(list(argv), out)


def clean_builds(ws, client, builds, work, linker):
    """A clean `cargo build` of the example, with the native client as linker and without linkwrap."""
    env = {**os.environ, "LINKWRAP_LINKER": linker}
    cases = {"without linkwrap": {}, "through linkwrap": {"CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER": client}}
    times = {k: [] for k in cases}
    for _ in range(builds):
        for name, extra in cases.items():
            target = os.path.join(work, "clean-target")
            shutil.rmtree(target, ignore_errors=True)
            times[name].append(timed(["cargo", "build", "-q"], {**env, **extra, "CARGO_TARGET_DIR": target}, ws))
    print("clean cargo build of the example (medians): " +
          ", ".join(f"{k} {statistics.median(v):.0f} ms" for k, v in times.items()))


def ninja_builds(launcher, builds, work, programs=40):
    """A parallel ninja build (-j2) of `programs` small C programs, each its own link."""
    d = os.path.join(work, "ninja")
    os.makedirs(d, exist_ok=True)
    for i in range(programs):
        with open(os.path.join(d, f"p{i}.c"), "w") as f:
            f.write(f'#include <stdio.h>\nint main(void){{printf("{i}\\n");return 0;}}\n')
    subprocess.run(["sh", "-c", "for f in p*.c; do cc -c $f; done"], cwd=d, check=True)
    times = {}
    for name, prefix in (("without linkwrap", ""), ("through linkwrap", shlex.quote(launcher) + " ")):
        with open(os.path.join(d, f"{name[0]}.ninja"), "w") as f:
            f.write(f"rule link\n  command = {prefix}cc $in -o $out\n")
            for i in range(programs):
                f.write(f"build out-{name[0]}/p{i}: link p{i}.o\n")
        times[name] = []
    for _ in range(builds):
        for name in times:
            shutil.rmtree(os.path.join(d, f"out-{name[0]}"), ignore_errors=True)
            times[name].append(timed(["ninja", "-j2", "-f", f"{name[0]}.ninja"], os.environ, d))
    print(f"ninja -j2, {programs} C links (medians): " +
          ", ".join(f"{k} {statistics.median(v):.0f} ms" for k, v in times.items()))


def response_text(mb, spaced=40, seed=31):
    """About mb MB of a generated response file as rustc writes one (one argument a line, backslash
    and space escaped): objects and rlibs in a target directory, -L and -Wl flags, every `spaced`th
    in a directory with a space (escaped), every 200th quoted, every 500th a backslash in its name."""
    import random
    rng = random.Random(seed)
    crates = ["serde", "syn", "quote", "proc_macro2", "libc", "regex", "tokio", "hashbrown", "memchr", "log"]
    lines, size, i = [], 0, 0
    while size < mb * 1_000_000:
        h = f"{rng.getrandbits(64):016x}"
        base = "/home/user/My\\ Projects/app" if i % spaced == 0 else "/home/user/src/app"
        kind = i % 7
        if kind == 0:
            arg = f"-L{base}/target/release/deps"
        elif kind == 1:
            arg = f"-Wl,-rpath,{base}/target/release/lib{i}"
        elif kind < 4:
            arg = f"{base}/target/release/deps/lib{rng.choice(crates)}-{h}.rlib"
        else:
            arg = f"{base}/target/release/deps/app-{h}.app.{h[:7]}-cgu.{i % 256:02}.rcgu.o"
        if i % 200 == 0:
            arg = "'" + arg.replace("\\ ", " ") + "'"
        elif i % 500 == 1:
            arg = arg.replace("/deps/", "/deps\\\\win\\\\")
        lines.append(arg)
        size += len(arg) + 1
        i += 1
    return "\n".join(lines) + "\n"


def response_files(runs, old_100mb):
    """Parsing a 1 MB and a 100 MB @file (and 100 MB of one whose every path has a space, escaped:
    the parser's dense way): args.expand_response_files (read, decode, split, look for nested
    @files: what each parse of the command line pays), its split alone, and the char-by-char split
    it replaced (tests/request/test_args.py's reference; on 100 MB only with --old-100mb, one run of
    ~10-30 s); then writing it back (run.py's quote_response_arg per argument), new and old."""
    sys.path.insert(0, ROOT)
    from tests.request.test_args import reference_quote_response_arg, reference_split_response_text
    from linkwrap.request import args

    def measure(label, fn, n):
        ms = []
        for _ in range(n):
            t = time.perf_counter()
            fn()
            ms.append((time.perf_counter() - t) * 1000)
        med, p, (lo, hi) = median_ci(ms)
        print(f"  {label:34s} {med:9.1f} ms (p90 {p:.1f}, 95% CI {lo:.1f}..{hi:.1f}; {n} runs)", flush=True)
        return med

    print("response files, in this process (median, p90, 95% CI of the median):")
    with tempfile.TemporaryDirectory() as work:
        for mb, spaced, what in ((1, 40, ""), (100, 40, ""), (100, 1, ", every path with a space")):
            text = response_text(mb, spaced)
            path = os.path.join(work, f"rsp-{mb}-{spaced}")
            with open(path, "w") as f:
                f.write(text)
            n = runs if mb == 1 else max(3, runs // 4)
            old_too = mb == 1 or old_100mb
            parsed = args.expand_response_files(["@" + path], work)  # warm: the page cache, re's patterns
            print(f" {mb} MB{what}: {len(parsed)} arguments, {sum('/My Projects/' in a for a in parsed)} with a "
                  f"space, {text.count(chr(39)) // 2} quoted, {sum(chr(92) in a for a in parsed)} with a backslash")
            measure("expand_response_files(['@file'])", lambda: args.expand_response_files(["@" + path], work), n)
            new = measure("split_response_text", lambda: args.split_response_text(text), n)
            if old_too:
                assert reference_split_response_text(text) == parsed
                old = measure("reference (char by char) split", lambda: reference_split_response_text(text),
                              n if mb == 1 else 1)
                print(f"  {'':34s} {old / new:9.0f}x faster")
            new = measure("quote_response_arg, joined", lambda: "\n".join(map(args.quote_response_arg, parsed)), n)
            if old_too:
                old = measure("reference quote, joined", lambda: "\n".join(map(reference_quote_response_arg, parsed)),
                              n if mb == 1 else 1)
                print(f"  {'':34s} {old / new:9.0f}x faster")
            del text, parsed

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--builds", type=int, default=5, help="clean cargo and ninja builds of each kind")
    ap.add_argument("--linker", default="mold")
    ap.add_argument("--no-big", action="store_true", help="skip the generated ~150 MB link")
    ap.add_argument("--modules", type=int, default=16)
    ap.add_argument("--funcs", type=int, default=34)
    ap.add_argument("--baseline", metavar="DIR", help="another linkwrap tree whose client and server run too")
    ap.add_argument("--client", metavar="PATH", help="the native client to measure: e.g. `$(command -v linkwrap-cc)`, "
                    "the wheel's, that a bare `linker = \"linkwrap-cc\"` runs (default: the one install compiles)")
    ap.add_argument("--response-files", action="store_true", help="only the 1 MB and 100 MB @file parse")
    ap.add_argument("--old-100mb", action="store_true", help="the replaced char-by-char parser on 100 MB too (~30 s)")
    opts = ap.parse_args()
    if opts.response_files:
        print(f"uptime: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f} (1/5/15 min load), "
              f"{os.cpu_count()} CPUs")
        response_files(opts.runs, opts.old_100mb)
        return

    with tempfile.TemporaryDirectory() as work:
        home = os.path.join(work, "home")
        os.environ["LINKWRAP_HOME"] = home
        from linkwrap.install import launcher
        from linkwrap.server import start
        client = opts.client or launcher.fast_script("linkwrap-cc")
        script = launcher.script_path("linkwrap-cc")
        if opts.client:
            launcher.fast_script("linkwrap-cc")  # the script row's entry point
        assert open(client, "rb").read(4) == b"\x7fELF", f"{client} is not a native client"
        from linkwrap.server import lifetime
        wheel = launcher.wheel_script(client)  # its server listens under its own install (client.c)
        server = start.start_detached(lifetime.wheel_install_id(client) if wheel else None)
        baseline = other_tree(opts.baseline) if opts.baseline else None
        if baseline:
            print(f"baseline: {os.path.abspath(opts.baseline)} ({baseline[0]})")
        print(f"uptime: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f} (1/5/15 min load), "
              f"{os.cpu_count()} CPUs; linker {opts.linker}; {opts.runs} interleaved rounds")
        try:
            ws = os.path.join(work, "ws")
            shutil.copytree(os.path.join(ROOT, "examples", "cargo-workspace"), ws,
                            ignore=shutil.ignore_patterns("target", ".cargo"))
            links = capture_links(ws, os.path.join(work, "target"), work)
            print("added wall per link against cc (ms; median, p90, 95% CI of the median):")
            for label in ("app", "build-script"):
                bench_link(label, links[label], ws, os.environ, opts.linker, client, script, opts.runs, work,
                           baseline and baseline[0])
            if not opts.no_big:
                import genproject
                big = genproject.rust(os.path.join(work, "big"), opts.modules, opts.funcs)
                argv, link_env, cwd = genproject.rust_link(big, target_dir=os.path.join(work, "big-target"))
                mb = genproject.input_bytes(argv, cwd) / 1e6
                bench_link(f"big {mb:.0f}MB", argv, cwd, {**os.environ, **link_env}, opts.linker, client, script,
                           opts.runs, work, baseline and baseline[0])
            clean_builds(ws, client, opts.builds, work, opts.linker)
            launch = launcher.fast_script("linkwrap-launch")
            ninja_builds(launch, opts.builds, work)
            response_files(opts.runs, opts.old_100mb)
            print(f"uptime after: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f}")
        finally:
            from linkwrap.cli.server import ask
            from linkwrap.server import lifetime
            ask(os.path.join(lifetime.run_dir(), lifetime.socket_name(lifetime.world_key())), "stop")
            os.waitpid(server, 0)
            if baseline:
                ask(baseline[1], "stop")


def other_tree(tree, **extra_env):
    """The native client of the linkwrap at tree, written into this LINKWRAP_HOME, and its server
    started (with extra_env): -> (client, socket path). Its socket is its own (the install is part
    of the key)."""
    env = {**os.environ, "PYTHONPATH": os.path.abspath(tree), **extra_env}
    # lifetime: server.py's in a tree from before its split
    code = ("import os; from linkwrap.install import launcher; from linkwrap.server import start\n"
            "try:\n    from linkwrap.server import lifetime as s\nexcept ImportError:\n"
            "    from linkwrap.server import server as s\n"
            "print(launcher.fast_script('linkwrap-cc')); start.start_detached(); "
            "print(os.path.join(s.run_dir(), s.socket_name(s.world_key())))")
    client, sock = subprocess.run([sys.executable, "-c", code], env=env, cwd=tree, check=True,
                                  capture_output=True, text=True).stdout.split("\n")[:2]
    assert open(client, "rb").read(4) == b"\x7fELF", f"the baseline's native client did not compile: {client}"
    deadline = time.monotonic() + 60
    while not os.path.exists(sock) and time.monotonic() < deadline:
        time.sleep(0.1)
    return client, sock


if __name__ == "__main__":
    main()
