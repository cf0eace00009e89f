"""Debug info as GNU ld leaves it: references to a dropped COMDAT copy point at the kept copy.

Two C++ objects with the same inline function (-ffunction-sections, -O0: a COMDAT group
each). GNU ld resolves the second object's debug references to its dropped copy to the copy
it kept; a 0 there would end the second unit's .debug_ranges list at its first entry, and
debuggers would lose `b` and `main`. The lists must have GNU ld's shape, and addr2line must
find `main`'s source line through the .symtab address.
"""
import os
import re
import subprocess

import pytest

from . import corpus

D1 = "inline int twice(int x) { return 2 * x; }\nint a(int x) { return twice(x) + 1; }\n"
D2 = "inline int twice(int x) { return 2 * x; }\nint b(int x) { return twice(x) + 2; }\nint main() { return b(1); }\n"


def range_lists(path):
    out = subprocess.run(["readelf", "--debug-dump=Ranges", path], capture_output=True, text=True).stdout
    lists = {}
    for line in out.splitlines():
        m = re.match(r"\s+([0-9a-f]{8}) (?:([0-9a-f]{16}) ([0-9a-f]{16})|<End of list>)", line)
        if m:
            entries = lists.setdefault(m.group(1), [])
            if m.group(2):
                entries.append((int(m.group(2), 16), int(m.group(3), 16)))
    return lists


def test_debug_ranges_of_a_dropped_comdat_copy_name_the_kept_copy(tmp_path):
    (tmp_path / "d1.cpp").write_text(D1)
    (tmp_path / "d2.cpp").write_text(D2)
    subprocess.run(["g++", "-g", "-gdwarf-4", "-O0", "-ffunction-sections", "-c", "d1.cpp", "d2.cpp"],
                   cwd=tmp_path, check=True)
    shim = corpus.shim_dir(str(tmp_path))
    for out, extra in (("ref", []), ("lw", [f"-B{shim}"])):
        subprocess.run(["g++", *extra, "d1.o", "d2.o", "-o", out], cwd=tmp_path, check=True)
    ref, lw = range_lists(str(tmp_path / "ref")), range_lists(str(tmp_path / "lw"))
    assert [len(v) for v in lw.values()] == [len(v) for v in ref.values()] and len(ref) == 2
    assert all(lo for entries in lw.values() for lo, hi in entries)   # no entry at 0
    nm = subprocess.run(["nm", "lw"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    main = next(line.split()[0] for line in nm.splitlines() if line.endswith(" main"))
    where = subprocess.run(["addr2line", "-e", "lw", main], cwd=tmp_path, capture_output=True, text=True).stdout
    assert where.strip().endswith("d2.cpp:3")


# gc drops `dropped` (nothing calls it); its unit's range list and its variables' location lists
# still name it. GNU ld writes 1 into .debug_ranges there (a 0 pair would end the unit's list before
# `kept`) and leaves 0 in .debug_loc. Both relocation paths (the loop and numpy's bulk) must agree.
L1 = ("extern int sink(int);\n"
      "int dropped(int n) { int acc = 0; for (int i = 0; i < n; i++) acc = sink(acc * 3 + i); return acc + n; }\n"
      "int kept(int n) { int acc = 1; for (int i = 0; i < n; i++) acc = sink(acc ^ i); return acc - n; }\n")
L2 = ("int sink(int x) { return x + 1; }\nint kept(int n);\n"
      "int main(int argc, char **argv) { (void)argv; return kept(argc) & 1; }\n")


def lists_shape(path):
    """readelf's range and location lists with the link's own addresses blotted out (the two linkers lay
    code out differently), the tombstones 0 and 1 and every list's length kept."""
    out = subprocess.run(["readelf", "--debug-dump=loc,Ranges", path], capture_output=True, text=True).stdout
    return [re.sub(r"\b(?!0{16}\b|0{15}1\b)[0-9a-f]{16}\b", "ADDR", line) for line in out.splitlines()]


@pytest.mark.parametrize("relocs", ["python", "bulk"])
def test_lists_of_a_function_gc_dropped_keep_gnu_lds_shape(tmp_path, relocs):
    (tmp_path / "l1.c").write_text(L1)
    (tmp_path / "l2.c").write_text(L2)
    subprocess.run(["gcc", "-g", "-gdwarf-4", "-O2", "-ffunction-sections", "-c", "l1.c", "l2.c"],
                   cwd=tmp_path, check=True)
    shim = corpus.shim_dir(str(tmp_path))
    env = {**os.environ, "LINKWRAP_LD_RELOCS": relocs}
    for out, extra in (("ref", []), ("lw", [f"-B{shim}"])):
        subprocess.run(["gcc", *extra, "-Wl,--gc-sections", "l1.o", "l2.o", "-o", out], cwd=tmp_path, check=True,
                       env=env)
    ref, lw = lists_shape(str(tmp_path / "ref")), lists_shape(str(tmp_path / "lw"))
    assert any("0000000000000001 0000000000000001" in line for line in ref)  # the case has a tombstone
    assert lw == ref
    ranges = range_lists(str(tmp_path / "lw"))
    assert any(hi > lo > 1 for entries in ranges.values() for lo, hi in entries)  # kept's range is still there
