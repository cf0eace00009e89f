"""Longer run of the linker mutation fuzzer (tests/ld/mutants.py): class counts and the bugs found.

    python benchmarks/bench_ld_fuzz.py [COUNT [SEED]]     (defaults 2000, 1)
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tests.ld import mutants  # noqa: E402


def main(argv):
    count = int(argv[0]) if argv else 2000
    seed = int(argv[1]) if len(argv) > 1 else 1
    with tempfile.TemporaryDirectory() as work:
        progs = mutants.build(work)
        t = time.monotonic()
        counts, bugs = mutants.run_mutants(work, progs, count, seed)
        took = time.monotonic() - t
    print(f"{count} mutants, seed {seed}, {took:.1f} s")
    for c in mutants.CLASSES:
        print(f"  {c:11} {counts[c]}")
    for what, name, target, detail in bugs:
        print(f"{what} {name} ({target}): {detail}")
    return 1 if any(b[0] == "internal" for b in bugs) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
