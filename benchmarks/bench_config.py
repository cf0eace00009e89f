"""What reading the configuration adds to one link: median cost of config.load().

    python benchmarks/bench_config.py [--runs 2000] [--fresh 15]

Warm = same process, after a few calls: what every link pays once its
interpreter is up (stat calls, the marshal cache read, the merge), measured
without any file, with a project file, and with a user file plus a project
file. A link runs in a fresh process, so the same loads are also timed in
fresh interpreters (import of config included): with the cache warm (no
TOML parser), and cold, with the cache removed before each run, which pays
the tomllib import and a parse. Everything uses a private LINKWRAP_HOME and
a project directory under a temporary directory.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import median_us  # noqa: E402

PROJECT_TEXT = """\
prefer = ["mold", "lld"]
forbid = ["gold"]
[linkers.mold]
extra_flags = ["--icf=all"]
[profile.release]
in_place = false
"""
USER_TEXT = 'record = true\n[linkers.lld]\nextra_flags = ["-O2"]\n'

# Timed in a fresh interpreter: the import of config, then one load (ns); whether tomllib came in.
FRESH = """
import sys, time
from linkwrap.request import args
request = args.parse(["m.o", "-o", "target/release/deps/app-1"], driver="cc", environ={}, cwd=sys.argv[1])
t0 = time.perf_counter_ns()
from linkwrap.request import config
t1 = time.perf_counter_ns()
config.load(request, {})
t2 = time.perf_counter_ns()
print("tomllib" in sys.modules, t1 - t0, t2 - t1)
"""


def fresh_us(cwd, env, runs, cold):
    """Medians (us) of importing config and of the first load in fresh interpreters;
    cold removes the cache before each run."""
    cache = os.path.join(env["LINKWRAP_HOME"], "cache", "config.marshal")
    subprocess.run([sys.executable, "-c", FRESH, cwd], env=env, capture_output=True, check=True)  # .pyc, cache
    imports, loads, parsed = [], [], set()
    for _ in range(runs):
        if cold and os.path.exists(cache):
            os.unlink(cache)
        proc = subprocess.run([sys.executable, "-c", FRESH, cwd], env=env, capture_output=True, text=True,
                              check=True)
        imported, import_ns, load_ns = proc.stdout.split()
        parsed.add(imported)
        imports.append(int(import_ns))
        loads.append(int(load_ns))
    return statistics.median(imports) / 1000, statistics.median(loads) / 1000, parsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--fresh", type=int, default=15, help="fresh interpreters per figure")
    opts = parser.parse_args()

    tmp = tempfile.mkdtemp(prefix="bench-config-")
    try:
        home = os.path.join(tmp, "home")
        os.makedirs(os.path.join(home, "config"))
        os.environ["LINKWRAP_HOME"] = home
        bare = os.path.join(tmp, "bare", "src")
        proj = os.path.join(tmp, "proj", "src")
        for d in (bare, proj):
            os.makedirs(d)
            os.mkdir(os.path.join(os.path.dirname(d), ".git"))
        with open(os.path.join(os.path.dirname(proj), "linkwrap.toml"), "w") as f:
            f.write(PROJECT_TEXT)

        from linkwrap.request import args, config

        def loader(cwd):
            request = args.parse(["m.o", "-o", "target/release/deps/app-1"], driver="cc", environ={}, cwd=cwd)
            return lambda: config.load(request, {})

        rows = []
        rows.append(("warm, no file", *median_us(loader(bare), opts.runs)))
        rows.append(("warm, project file", *median_us(loader(proj), opts.runs)))
        assert config.load(args.parse(["-o", "x"], cwd=proj, environ={}), {}).prefer == ("mold", "lld")
        user = os.path.join(home, "config", "linkwrap.toml")
        with open(user, "w") as f:
            f.write(USER_TEXT)
        rows.append(("warm, user + project file", *median_us(loader(proj), opts.runs)))
        os.unlink(user)
        print(f"config.load(), same process ({opts.runs} runs): median / p90")
        for name, med, p90 in rows:
            print(f"  {name:28s} {med:8.1f} us  {p90:8.1f} us")

        env = {**os.environ, "LINKWRAP_HOME": home}
        # An installed package has its .pyc; with PYTHONDONTWRITEBYTECODE (set in this sandbox)
        # an edited module would be compiled again in every fresh interpreter.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        print(f"\nfresh interpreters ({opts.fresh} each), medians: import config | first config.load()")
        for name, cwd, cold in (("no file", bare, False), ("project file, cache warm", proj, False),
                                ("project file, cache cold", proj, True)):
            imp, load, parsed = fresh_us(cwd, env, opts.fresh, cold)
            print(f"  {name:28s} {imp:8.1f} us | {load:8.1f} us  (tomllib imported: {' / '.join(sorted(parsed))})")
        print("\n(fresh-interpreter figures exclude interpreter start-up; this machine's site .pth adds"
              " ~25 ms to each start, an artefact of the sandbox)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
