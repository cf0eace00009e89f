"""What the reading side costs with many records: finding a build's project at ingestion,
scoping to the current project, the HTML page, and `log export` in both formats.

    python benchmarks/bench_report.py [BUILDS] [LINKS_PER_BUILD]

Runs in a private LINKWRAP_HOME on records made here: BUILDS builds (default 200) of
LINKS_PER_BUILD links (default 20), spread over 4 projects (real directories with a
Cargo.toml, so project_of walks and reads what it would). Medians of 5 runs each;
print `uptime` beside the figures, the machine is shared.
"""
import atexit
import io
import os
import shutil
import statistics
import sys
import tempfile
import time


def median_ms(fn, runs=5):
    times = []
    for _ in range(runs):
        t = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - t) / 1e6)
    return statistics.median(times), min(times), max(times)


def main():
    n_builds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    per_build = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    root = tempfile.mkdtemp(prefix="bench-report-")
    atexit.register(shutil.rmtree, root, True)  # its inputs and outputs (up to ~1 GB) go with it
    os.environ["LINKWRAP_HOME"] = os.path.join(root, "home")
    projects = []
    for p in range(4):
        d = os.path.join(root, f"p{p}", "crates", "app")
        os.makedirs(d)
        with open(os.path.join(root, f"p{p}", "Cargo.toml"), "w") as f:
            f.write('[workspace]\nmembers = ["crates/app"]\n')
        with open(os.path.join(d, "Cargo.toml"), "w") as f:
            f.write('[package]\nname = "app"\nversion = "0.1.0"\n')
        projects.append(os.path.join(root, f"p{p}"))

    from linkwrap.facts import build

    from linkwrap.record import record
    from linkwrap.store import db, spool
    from linkwrap.cli import scope

    each = []
    for _ in range(5):
        t = time.perf_counter_ns()
        for _ in range(200):
            build.project_of(os.path.join(projects[0], "crates", "app"), ["cargo", "build"])
        each.append((time.perf_counter_ns() - t) / 200 / 1000)
    print(f"project_of() for a Cargo member (walks up, reads 2 manifests): median {statistics.median(each):.0f} µs "
          "per build, at ingestion only")

    state = os.environ["LINKWRAP_HOME"]
    now = time.time() - 86400
    for b in range(n_builds):
        proj = projects[b % 4]
        for i in range(per_build):
            rec = {"v": record.FORMAT, "uid": f"{b}-{i}", "started_unix": now + b * 60 + i * 0.05,
                   "build_key": f"cargo:{b}", "build_tool": "cargo", "build_command": "cargo build",
                   "build_cwd": proj, "cwd": proj, "output_path": f"{proj}/target/debug/deps/out{i}-0123",
                   "crate_name": f"out{i}", "crate_kind": "bin", "linker": "mold", "linker_version": "mold 1.10.1",
                   "write_mode": "fresh", "fs_type": "ext4", "kernel_release": "6.1.0", "wall_ms": 50.0 + i,
                   "user_ms": 30.0, "sys_ms": 10.0, "peak_rss_kb": 20000 + i, "exit_status": 0, "fell_back": False,
                   "overhead_ms": 2.0, "startup_ms": 25.0, "input_bytes": 10_000_000, "output_bytes": 4_000_000,
                   "reasons": ("mold 1.10.1: first installed",), "flags_added": ("--no-fork",), "driver": "cc"}
            record.append(state, record.encode(rec))
    t = time.perf_counter_ns()
    conn = db.open_store()
    ingest_ms = (time.perf_counter_ns() - t) / 1e6
    total = n_builds * per_build
    print(f"ingest {total} records of {n_builds} builds, projects found: {ingest_ms:.0f} ms "
          f"({ingest_ms / total * 1000:.0f} µs per record)")

    from linkwrap.report import export, html, summary
    from linkwrap.store import queries

    class Args:
        all_projects = False

    cwd = os.path.join(projects[1], "crates", "app")
    figures = {
        "current project from the working directory": lambda: scope.resolve(conn, Args(), cwd),
        "summary --all of one project (50 builds)": lambda: summary.summarize(
            conn, queries.all_builds(conn, scope.resolve(conn, Args(), cwd)[0])),
        "report: the HTML page of the last 20 builds": lambda: html.page(
            summary.summarize(conn, queries.all_builds(conn, projects[1])[-20:]), generated_utc="now",
            machine=export.machine()),
        f"log export --all-projects, jsonl ({total} links)": lambda: export.write(conn, io.StringIO()),
        f"log export --all-projects, otlp ({total} links)": lambda: export.write(conn, io.StringIO(), fmt="otlp"),
    }
    for label, fn in figures.items():
        med, lo, hi = median_ms(fn)
        print(f"{label}: median {med:.1f} ms (min {lo:.1f}, max {hi:.1f}, 5 runs)")
    with open("/proc/loadavg") as f:
        print(f"load average: {' '.join(f.read().split()[:3])}")


if __name__ == "__main__":
    main()
