"""A parallel build of tiny C programs with and without linkwrap, the same linker both ways: wall
time and the CPU every link cost, whoever spent it.

    python3 benchmarks/bench_parallel.py [--builds 15] [--programs 40] [-j 2] [TREE...]

On two CPUs a build that links two programs at a time pays linkwrap's own CPU in wall time, so
this counts all of it: `cc` is ninja's children (the shell, the driver, collect2, GNU ld); through
linkwrap it is ninja's children (the shell, the native client) and the server's whole tree (its
parent, its children, the linkers they reaped), read from /proc before and after each build. The
linker is GNU ld both ways: wild's directory is taken off PATH, so the small-link rule chooses GNU
ld (docs/policy.md 1.3), and every record is checked to say so. Each TREE (default: this checkout;
e.g. also a `git archive` of another commit) gets its own client, server and LINKWRAP_HOME; the
builds (`cc`, then each tree) run in a shuffled order per round after a warm-up build each. Printed:
medians of wall and of CPU per link, and each tree's per-build difference against `cc` with a 95 %
interval of its median (order statistics). Not a test: figures for the notes (with `uptime`).
"""
import argparse
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


def median_ci(xs):
    """(median, low, high): a 95 % interval of the median from order statistics."""
    from bench_overhead import median_ci as ci
    m, _p90, (lo, hi) = ci(xs)
    return m, lo, hi


def without_wild(path):
    """PATH without the directories that hold a `wild`."""
    return os.pathsep.join(d for d in path.split(os.pathsep) if d and not os.path.exists(os.path.join(d, "wild")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="*", default=[ROOT])
    ap.add_argument("--builds", type=int, default=15)
    ap.add_argument("--programs", type=int, default=40)
    ap.add_argument("-j", dest="jobs", default="2")
    opts = ap.parse_args()
    import bench_cpu as bc
    from bench_overhead import other_tree
    work = tempfile.mkdtemp(prefix="bench-parallel-")
    os.environ["PATH"] = without_wild(os.environ["PATH"])
    os.environ.pop("LINKWRAP_LINKER", None)
    servers = []
    try:
        for n, tree in enumerate(opts.trees):
            home = os.path.join(work, f"home{n}")
            os.environ["LINKWRAP_HOME"] = home  # the same install twice needs two: the socket is the install's
            client, sock = other_tree(tree)
            servers.append((tree, client, sock, bc.server_pid(sock), home))
        d = os.path.join(work, "n")
        os.makedirs(d)
        for i in range(opts.programs):
            with open(os.path.join(d, f"p{i}.c"), "w") as f:
                f.write(f'#include <stdio.h>\nint main(void){{printf("{i}\\n");return 0;}}\n')
        subprocess.run("for f in p*.c; do cc -c $f; done", shell=True, cwd=d, check=True)
        kinds = {"cc": ("cc", None, None)}
        for n, (tree, client, sock, pid, home) in enumerate(servers):
            kinds[f"tree{n}"] = (shlex.quote(client), pid, home)
        for name, (cmd, _, _) in kinds.items():
            with open(os.path.join(d, f"{name}.ninja"), "w") as f:
                f.write(f"rule link\n  command = {cmd} $in -o $out\n")
                for i in range(opts.programs):
                    f.write(f"build out-{name}/p{i}: link p{i}.o\n")
        load = os.getloadavg()
        print(f"uptime: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1/5/15 min load), {os.cpu_count()} CPUs; "
              f"ninja -j{opts.jobs} of {opts.programs} hello-world C programs, GNU ld both ways, "
              f"{opts.builds} interleaved builds each")
        figures = {k: [] for k in kinds}
        order = random.Random(16)
        for b in range(opts.builds + 1):  # the first: warm-up
            names = list(kinds)
            order.shuffle(names)
            for name in names:
                _, pid, home = kinds[name]
                shutil.rmtree(os.path.join(d, f"out-{name}"), ignore_errors=True)
                time.sleep(0.5)  # the last build's tidying and spares are done
                env = {**os.environ, **({"LINKWRAP_HOME": home} if home else {})}
                before = bc.tree_cpu_ms(pid) if pid else 0.0
                t = time.perf_counter()
                p = subprocess.Popen(["ninja", f"-j{opts.jobs}", "-f", f"{name}.ninja"], cwd=d, env=env,
                                     stdout=subprocess.DEVNULL)
                _, status, ru = os.wait4(p.pid, 0)
                wall = (time.perf_counter() - t) * 1000
                if status:
                    sys.exit(f"the {name} build failed")
                time.sleep(0.5)
                server = bc.tree_cpu_ms(pid) - before if pid else 0.0
                if b:
                    figures[name].append((wall, ((ru.ru_utime + ru.ru_stime) * 1000 + server) / opts.programs))
        for n, (tree, client, sock, pid, home) in enumerate(servers):
            os.environ["LINKWRAP_HOME"] = home
            from linkwrap.store import db
            linkers = {r[0] for r in db.open_store().execute("SELECT linker FROM links").fetchall()}
            if linkers != {"bfd"}:
                sys.exit(f"tree{n}: its links ran {sorted(map(str, linkers))}, not GNU ld alone")
        med = statistics.median
        for name, rows in figures.items():
            label = "cc (without linkwrap)" if name == "cc" else f"{name} {servers[int(name[4:])][0]}"
            line = f"  {label:40s} wall {med(r[0] for r in rows):5.0f} ms, CPU per link {med(r[1] for r in rows):6.2f} ms"
            if name != "cc":
                w = median_ci([a[0] - c[0] for a, c in zip(rows, figures["cc"])])
                c = median_ci([a[1] - c[1] for a, c in zip(rows, figures["cc"])])
                line += (f" | against cc per build: wall {w[0]:+.0f} ms (95% CI {w[1]:+.0f}..{w[2]:+.0f}), "
                         f"CPU per link {c[0]:+.2f} ms ({c[1]:+.2f}..{c[2]:+.2f})")
            print(line)
        load = os.getloadavg()
        print(f"uptime after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    finally:
        from linkwrap.cli.server import ask
        for tree, client, sock, pid, home in servers:
            ask(sock, "stop")
        bc.gone([s[3] for s in servers])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
