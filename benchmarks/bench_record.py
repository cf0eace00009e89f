"""What recording costs: record.save per link (median), and ingesting the spool per 1000 records.

    python benchmarks/bench_record.py

Runs in a private LINKWRAP_HOME. save() is timed in-process with realistic
inputs (a cargo-like link with 120 inputs); the import cost of the record
module is measured in fresh interpreters (which on this machine also pay the
~25 ms site .pth, subtracted by timing `import os` the same way).
"""
import atexit
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    home = tempfile.mkdtemp(prefix="bench-record-")
    atexit.register(shutil.rmtree, home, True)  # its inputs and outputs (up to ~1 GB) go with it
    os.environ["LINKWRAP_HOME"] = home
    from linkwrap.request import args
    from linkwrap.choice import policy
    from linkwrap.record import record
    from linkwrap.run.run import Outcome

    inputs = [f"/w/target/debug/deps/libdep{i}-0123456789abcdef.rlib" for i in range(120)]
    req = args.parse(["-m64", "main.o", *inputs, "-o", "/w/target/debug/deps/app-0123"], "cc",
                     {}, cwd="/w")
    decision = policy.as_asked("bench")
    out = Outcome(0, 120.0, 100.0, 20.0, 150_000, b"", b"", ("cc", *req.args), policy.FRESH, 5_000_000,
                  "mold 1.10.1", "driver")
    env = {"CARGO_CRATE_NAME": "app", "CARGO_PKG_NAME": "app", "CARGO_BIN_NAME": "app"}
    os.environ.update(env)

    times = []
    for _ in range(2000):
        t = time.perf_counter_ns()
        record.save(req, None, decision, out, started_ns=t - 130_000_000)
        times.append((time.perf_counter_ns() - t) / 1e6)
    spool_bytes = os.path.getsize(os.path.join(home, record.SPOOL))
    print(f"record.save per link: median {statistics.median(times):.3f} ms, "
          f"p90 {statistics.quantiles(times, n=10)[-1]:.3f} ms "
          f"({spool_bytes / 2000:.0f} bytes per record with a 125-argument argv; no probe given, so the "
          f"120 input sizes are stat()ed, as when the probe faulted)")

    # The two per-link additions of issue 5's follow-up: the start-up read and a fall-back's first error.
    stderr = b"mold: fatal: unknown command line option: --frobnicate\ncollect2: error: ld returned 1 exit status\n"
    # Every record asks whether the driver compiled too (args.compiles); its answer is kept per command line.
    from linkwrap.run import direct

    def fresh(argv):
        args._compiled = (None, False)
        return args.compiles(argv)

    rustc_like = ["-m64", *[f"/w/target/debug/deps/app-0123.app.{i}-cgu.0.rcgu.o" for i in range(16)], *inputs,
                  *[f"-Wl,-Bstatic{i}" for i in range(200)], "-o", "/w/target/debug/deps/app-0123"]
    for label, fn in (("startup_ms() (/proc/self/stat + CLOCK_BOOTTIME)", lambda: record.startup_ms(1_000_000)),
                      ("first_error() of a 2-line stderr (fall-backs only)", lambda: record.first_error(stderr)),
                      ("args.compiles() of the 125-argument link, first ask", lambda: fresh(req.args)),
                      (f"args.compiles() of a {len(rustc_like)}-argument rustc-like link, first ask",
                       lambda: fresh(rustc_like)),
                      ("  the same, asked again (learn, then the record)", lambda: args.compiles(rustc_like)),
                      (f"  the full walk of the {len(rustc_like)} arguments it saves",
                       lambda: args._walk(rustc_like, direct._SOURCE_SUFFIXES))):
        each = []
        for _ in range(5):
            t = time.perf_counter_ns()
            for _ in range(2000):
                fn()
            each.append((time.perf_counter_ns() - t) / 2000 / 1000)
        print(f"{label}: median {statistics.median(each):.1f} µs per call")

    from linkwrap.store import db, spool
    conn = db.connect()
    per_k = []
    for _ in range(5):
        for _ in range(1000):
            record.save(req, None, decision, out, started_ns=time.perf_counter_ns())
        t = time.perf_counter()
        n = spool.ingest(conn, home)
        per_k.append((time.perf_counter() - t) * 1000 * 1000 / n)
    print(f"ingestion per 1000 records: median {statistics.median(per_k):.1f} ms "
          f"(into a database of up to {conn.execute('SELECT count(*) FROM links').fetchone()[0]} rows)")

    # Import cost on the link path, from -X importtime (microseconds, cumulative), with
    # bytecode cached as an installed package has it (this sandbox sets PYTHONDONTWRITEBYTECODE).
    code = "import linkwrap.record.record, linkwrap.facts.build"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": os.path.join(home, "pyc")}
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], env=env,
                          capture_output=True, text=True, check=True)
    cumulative = {line.rsplit("|", 1)[1].strip(): int(line.split("|")[1]) for line in done.stderr.splitlines()
                  if line.startswith("import time:") and line.split("|")[1].strip().isdigit()}
    print(f"import of linkwrap.record.record: {cumulative['linkwrap.record.record'] / 1000:.2f} ms, "
          f"linkwrap.facts.build: {cumulative['linkwrap.facts.build'] / 1000:.2f} ms (-X importtime, bytecode cached)")

if __name__ == "__main__":
    main()
