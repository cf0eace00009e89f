"""A RECORDING STAND-IN for the wild linker (wild cannot be installed here).

It is not wild. It models what shared/reference/linkers.md §1 says wild does with
its command line, by version (WILD_STANDIN_VERSION, default 0.10.0):
- `--version` prints wild's version string of that era and exits;
- since 0.6.0 an unknown option is fatal ("unrecognized option(s)");
- `--threads` takes its value only as `--threads=N`; `--threads N` makes N an input file;
- the linkwrap-relevant flags exist only from the version that added them;
- before 0.9 (no linker-plugin support) `-plugin X` gets wild 0.8.0's warning on stdout
  (`WARNING: wild: --plugin X is not yet supported`, seen with the real 0.8.0).
It appends its argv (one JSON line) to WILD_STANDIN_LOG, then links for real with
ld.lld-16 so that the program can be run, dropping the wild-only flags.
"""
import json
import os
import sys

VERSION = tuple(int(x) for x in os.environ.get("WILD_STANDIN_VERSION", "0.10.0").split("."))

# flag -> first wild release that accepts it (reference §1.1)
WILD_FLAGS = {
    "--no-fork": (0, 3, 0),
    "--no-threads": (0, 3, 0),
    "--update-in-place": (0, 4, 0),
    "--no-update-in-place": (0, 8, 0),
    "--mmap-output-file": (0, 7, 0),
    "--no-mmap-output-file": (0, 7, 0),
    "--time": (0, 2, 0),
}
WILD_ONLY = {"--no-fork", "--no-threads", "--update-in-place", "--no-update-in-place",
             "--mmap-output-file", "--no-mmap-output-file", "--time"}
# What gcc 12's collect2 passes: GNU ld options wild implements (not a complete list).
GNU_FLAGS_WITH_VALUE = {"-o", "-m", "-L", "-l", "-z", "-e", "-dynamic-linker", "-plugin", "-u", "-T", "-soname", "-rpath", "-Map"}
GNU_PREFIXES = ("-plugin-opt=", "-L", "-l", "--build-id", "--hash-style=", "--eh-frame-hdr", "-pie", "-no-pie",
                "--as-needed", "--no-as-needed", "-Bstatic", "-Bdynamic", "--gc-sections", "-static", "-shared",
                "--start-group", "--end-group", "-O", "--strip-debug", "-s", "--version-script=", "-soname=",
                "--no-undefined-version", "-z", "--push-state", "--pop-state", "-export-dynamic", "--export-dynamic",
                "-rpath=", "-E", "--whole-archive", "--no-whole-archive", "-plugin", "-fuse-ld", "--dynamic-list=",
                "-Bsymbolic", "-x", "--sort-common", "--fatal-warnings", "--color-diagnostics", "-nostdlib")


def fail(msg):
    sys.stderr.write(f"wild: error: {msg}\n")
    sys.exit(1)


def main(argv):
    if argv == ["--version"] or (argv and argv[0] == "--version"):
        v = ".".join(map(str, VERSION))
        print(f"Wild version {v} (compatible with GNU linkers)" if VERSION < (0, 9) else f"Wild {v} (compatible with GNU linkers)")
        return 0
    log = os.environ.get("WILD_STANDIN_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps({"version": VERSION, "argv": argv}) + "\n")
    unknown, passed, i = [], [], 0
    while i < len(argv):
        a = argv[i]
        base = a.split("=", 1)[0] if a.startswith("--") else a
        if a.startswith("--threads="):
            if not a[len("--threads="):].isdigit():
                fail(f"invalid thread count {a}")
        elif a == "--threads" and i + 1 < len(argv) and argv[i + 1].isdigit() and not os.path.exists(argv[i + 1]):
            fail(f"cannot open {argv[i + 1]}: No such file or directory")  # `--threads 2`: 2 is an input
        elif base in WILD_FLAGS:
            if VERSION < WILD_FLAGS[base]:
                unknown.append(a)
        elif a.startswith("-") and a not in GNU_FLAGS_WITH_VALUE and not a.startswith(GNU_PREFIXES):
            unknown.append(a)
        if a == "-plugin" and i + 1 < len(argv) and VERSION < (0, 9, 0):
            print(f"WARNING: wild: --plugin {argv[i + 1]} is not yet supported", flush=True)
        if a in GNU_FLAGS_WITH_VALUE and i + 1 < len(argv):
            passed += [a, argv[i + 1]]
            i += 2
            continue
        if base not in WILD_ONLY:
            passed.append(a)
        i += 1
    if unknown and VERSION >= (0, 6, 0):
        fail("unrecognized option(s): " + " ".join(unknown))
    os.execvp("ld.lld-16", ["ld.lld", *passed])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
