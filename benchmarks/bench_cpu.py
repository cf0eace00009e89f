"""The CPU a link costs through the warm server, linkwrap's own part apart from the linker's.

    python3 benchmarks/bench_cpu.py [--links 40] [--rounds 3] [--linker mold] [--baseline DIR]

On two cores the CPU linkwrap spends beside a link is paid in wall time as soon as links overlap
(a parallel ninja or cargo build), and a spare prepared in the background lands on the next link
even when they do not. Wall time on a quiet machine hides it, so this counts CPU instead:

  cc        `cc -fuse-ld=<linker>` per link: getrusage(RUSAGE_CHILDREN) of this process, a child
            subreaper (a forking linker's worker is counted, as the server's child counts it)
  client    the native client (its RUSAGE_CHILDREN) plus the server's whole tree: the server's
            utime+stime+cutime+cstime and the same of every live child of it (spares, and children
            still holding linkers they reaped), read from /proc before and after the links
  linker    the linkers' own user+sys as the records give them (wait4 in the server's child)
  own       client - linker: what linkwrap itself costs per link

Each round links --links tiny C programs one after another with each command (the commands in
their own shuffled order per round), a pause after each link so that the server's work after the
answer, and its next spare, finish within the measured window (the pause costs no CPU). Figures
are per link, medians over the rounds. --baseline DIR adds another linkwrap tree's client and
server (a checkout or `git archive` of it), so two trees compare in the same rounds. Not a test:
figures for the notes (with `uptime`).
"""
import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")
PAUSE_S = 0.05
KEEP = set()  # this process's children that are not a link's: the server it started


def children_cpu_ms() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.ru_utime + r.ru_stime) * 1000


def tree_cpu_ms(pid) -> float:
    """The server's CPU and its reaped descendants', plus each live child's own and reaped (ms)."""
    def fields(p):
        with open(f"/proc/{p}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    total = sum(int(x) for x in fields(pid)[11:15])
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == pid:
            continue
        try:
            v = fields(p)
        except OSError:
            continue
        if int(v[1]) == pid:
            total += sum(int(x) for x in v[11:15])
    return total * TICK_MS


def server_pid(sock) -> int:
    """The pid a server writes into its socket's lock file ("<pid> <version>") once it listens."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with open(sock + ".lock") as f:
                words = f.read().split()
        except FileNotFoundError:
            words = []
        if words:
            return int(words[0])
        time.sleep(0.05)
    sys.exit(f"no server at {sock} within 60 s")


def gone(pids, bound_s=30) -> None:
    """Wait until the servers and their children have ended: a spare's last act may be to remove
    the private directory it made beside the last output, in this benchmark's directory."""
    deadline = time.monotonic() + bound_s
    pids = set(pids)
    while time.monotonic() < deadline:
        alive = set()
        for p in os.listdir("/proc"):
            if p.isdigit():
                try:
                    with open(f"/proc/{p}/stat") as f:
                        v = f.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(p) in pids and v[0] != "Z" or int(v[1]) in pids:
                    alive.add(int(p))
        if not alive:
            return
        time.sleep(0.05)


def programs(d, n):
    os.makedirs(d, exist_ok=True)
    for i in range(n):
        with open(os.path.join(d, f"p{i}.c"), "w") as f:
            f.write(f"int main(void){{return {i % 7};}}\n")
    subprocess.run(["sh", "-c", "for f in p*.c; do cc -c $f; done"], cwd=d, check=True)


def linker_ms(prefix, n) -> float:
    """The linkers' own user+sys (ms) summed over the records of outputs named <prefix><i>."""
    from linkwrap.store import db
    rows = db.open_store().execute("SELECT output_path, user_ms + sys_ms FROM links").fetchall()
    names = {f"{prefix}{i}" for i in range(n)}
    latest = {}
    for path, ms in rows:  # the newest record of each output: this round's
        if os.path.basename(path or "") in names:
            latest[os.path.basename(path)] = ms or 0.0
    if len(latest) != n:
        sys.exit(f"{len(latest)} records for {n} links of {prefix}: the links did not go through the server")
    return sum(latest.values())


def subreaper() -> None:
    """Orphans come to this process: mold's and wild's worker, which outlives the linker's first
    process, is then waited for and counted in cc's figure, as the server's child counts it."""
    import ctypes
    if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        sys.exit("cannot become a child subreaper: cc's figure would miss a forking linker's worker")


def reap_orphans(keep=()) -> None:
    """Wait for every child of this process but keep (the servers, when this process started them)."""
    me = os.getpid()
    while True:
        left = []
        for p in os.listdir("/proc"):
            if p.isdigit() and int(p) not in keep:
                try:
                    with open(f"/proc/{p}/stat") as f:
                        if int(f.read().rsplit(")", 1)[1].split()[1]) == me:
                            left.append(int(p))
                except OSError:
                    continue
        if not left:
            return
        for pid in left:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def one_round(name, cmd, d, n, pid):
    """-> (cpu per link, wall per link) in ms for n links with cmd."""
    before_tree = tree_cpu_ms(pid) if pid else 0.0
    before = children_cpu_ms()
    wall = 0.0
    for i in range(n):
        t = time.perf_counter()
        subprocess.run([*cmd, f"p{i}.o", "-o", f"{name}-{i}"], cwd=d, check=True)
        wall += time.perf_counter() - t
        reap_orphans(KEEP)
        time.sleep(PAUSE_S)
    time.sleep(0.3)  # the last link's record, tidying and next spare
    cpu = children_cpu_ms() - before + ((tree_cpu_ms(pid) - before_tree) if pid else 0.0)
    return cpu / n, wall * 1000 / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--linker", default="mold")
    ap.add_argument("--baseline", metavar="DIR", help="another linkwrap tree whose client and server run too")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cpu") as work:
        os.environ["LINKWRAP_HOME"] = os.path.join(work, "home")
        os.environ["LINKWRAP_LINKER"] = opts.linker
        from linkwrap.install import launcher
        from linkwrap.server import lifetime, start
        from bench_overhead import other_tree
        client = launcher.fast_script("linkwrap-cc")
        assert open(client, "rb").read(4) == b"\x7fELF", "the native client did not compile"
        KEEP.add(start.start_detached())
        sock = os.path.join(lifetime.run_dir(), lifetime.socket_name(lifetime.world_key()))
        trees = {"client": (client, sock)}
        if opts.baseline:
            trees["baseline"] = other_tree(opts.baseline)
        reap_orphans(KEEP)  # the baseline's starter
        subreaper()
        pids = {k: server_pid(s) for k, (_, s) in trees.items()}
        d = os.path.join(work, "c")
        programs(d, opts.links)
        cmds = {"cc": ["cc", f"-fuse-ld={opts.linker}"], **{k: [c] for k, (c, _) in trees.items()}}
        load = os.getloadavg()
        print(f"uptime: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} (1/5/15 min load), {os.cpu_count()} CPUs; "
              f"linker {opts.linker}; {opts.links} tiny C links per command per round, {opts.rounds} rounds")
        for name, cmd in cmds.items():  # warm: page cache, the servers' first spares, the direct line
            subprocess.run([*cmd, "p0.o", "-o", f"warm-{name}"], cwd=d, check=True)
        reap_orphans(KEEP)
        time.sleep(0.5)
        figures = {k: [] for k in cmds}
        order = random.Random(16)
        try:
            for _ in range(opts.rounds):
                names = list(cmds)
                order.shuffle(names)
                for name in names:
                    cpu, wall = one_round(name, cmds[name], d, opts.links, pids.get(name))
                    linker = linker_ms(f"{name}-", opts.links) / opts.links if name != "cc" else None
                    figures[name].append((cpu, wall, linker))
        finally:
            from linkwrap.cli.server import ask
            for _, s in trees.values():
                ask(s, "stop")
            gone(pids.values())
        med = statistics.median
        print("per link (ms, medians over rounds): CPU (- cc's) | linker's own CPU | linkwrap's own CPU | wall")
        for name, rows in figures.items():
            cpu, wall = med(r[0] for r in rows), med(r[1] for r in rows)
            if name == "cc":
                print(f"  {name:9s} {cpu:6.1f} |   (driver, collect2, linker) | {'':6s} | {wall:5.1f}")
            else:
                linker = med(r[2] for r in rows)
                own = med(r[0] - r[2] for r in rows)
                more = cpu - med(r[0] for r in figures["cc"])
                print(f"  {name:9s} {cpu:6.1f} ({more:+5.1f}) | {linker:6.1f} | {own:6.1f} | {wall:5.1f}")
        load = os.getloadavg()
        print(f"uptime after: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")


if __name__ == "__main__":
    main()
