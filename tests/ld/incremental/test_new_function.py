"""Edit (c) of issue 36: an input gains (or loses) a function, and the relink patches it.

The new function's code goes in its input's .text chunk, its FDE in the input's .eh_frame chunk
(slack there is a filler record) and .eh_frame_hdr's spare rows, its local symbol into the input's
block of .symtab (.strtab and the section headers after it laid out again). Every relink is
checked three ways: the program prints what the edit makes it print, --incremental-check finds
the output byte-identical to a link from scratch into the same layout, and readelf/objdump agree
with GNU ld's link of the same inputs (the new function's calls land where readelf puts it).
"""
import subprocess

import pytest

from .helpers import Project, call_targets, symbols
from .test_relink import MAIN, lib

NEW = "static __attribute__((noinline)) int extra{k}(int x) {{ return x * {m}; }}\n"


def with_extras(ks, body="2"):
    """lib.c with static functions extra<k> for k in ks, each added into f's result."""
    text = lib(body)
    extra = "".join(NEW.format(k=k, m=k + 3) for k in ks)
    calls = "".join(f" + extra{k}(x)" for k in ks)
    return text.replace("int f(int x) {", extra + "int f(int x) {").replace("helper(x) + 1", f"helper(x) + 1{calls}")


def expected_f(ks, x=3, body=2):
    return x * body + 1 + sum(x * (k + 3) for k in ks)


def _clean(tool, *args):
    r = subprocess.run([tool, *args], capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
    return r.stdout


def _agrees(p, objs, caller="f"):
    """caller's calls go to the functions readelf names at those addresses, as in GNU ld's link."""
    ref = p.reference(objs)
    mine, theirs = symbols(p.path("prog")), symbols(ref)
    names_mine = {v: k for k, v in mine.items()}
    names_ref = {v: k for k, v in theirs.items()}
    got = [names_mine.get(a) for a in call_targets(p.path("prog"), caller)]
    want = [names_ref.get(a) for a in call_targets(ref, caller)]
    assert got == want
    # readelf reads the symbol table, the frames and the headers without a complaint
    syms = _clean("readelf", "-sW", p.path("prog"))
    _clean("readelf", "-SW", "--debug-dump=frames", p.path("prog"))
    return got, syms


@pytest.mark.parametrize("mode", [[], ["-no-pie"], ["-static"]])
def test_a_new_static_function_is_patched_and_identical_to_a_link_from_scratch(tmp_path, mode):
    p = Project(tmp_path, ldflags=mode)
    p.write("main.c", MAIN)
    p.write("lib.c", lib())
    p.compile("main.c", "lib.c")
    assert p.link(["main.o", "lib.o"])[0] == 0
    p.write("lib.c", with_extras([1]))
    p.compile("lib.c")
    rc, why, err = p.link(["main.o", "lib.o"])
    assert (rc, why) == (0, "patched 1 input(s): lib.o"), err
    assert p.run() == (0, f"f={expected_f([1])} g=3 counter=7 lib\n")
    got, syms = _agrees(p, ["main.o", "lib.o"])
    assert "extra1" in got and " extra1" in syms


def test_functions_added_one_after_another_then_one_removed(tmp_path):
    p = Project(tmp_path)
    p.write("main.c", MAIN)
    p.write("lib.c", lib())
    p.compile("main.c", "lib.c")
    assert p.link(["main.o", "lib.o"])[0] == 0
    for ks in ([1], [1, 2], [1, 2, 3], [1, 3], [3]):
        p.write("lib.c", with_extras(ks))
        p.compile("lib.c")
        rc, why, err = p.link(["main.o", "lib.o"])
        assert (rc, why) == (0, "patched 1 input(s): lib.o"), (ks, err)
        assert p.run() == (0, f"f={expected_f(ks)} g=3 counter=7 lib\n")
        got, syms = _agrees(p, ["main.o", "lib.o"])
        assert sorted(n for n in got if n.startswith("extra")) == [f"extra{k}" for k in ks]
        assert ("extra2" in syms) == (2 in ks)


def test_a_new_function_in_its_own_section_goes_in_its_inputs_chunk(tmp_path):
    p = Project(tmp_path, cflags=("-O1", "-ffunction-sections"))
    p.write("main.c", MAIN)
    p.write("lib.c", lib())
    p.compile("main.c", "lib.c")
    assert p.link(["main.o", "lib.o"])[0] == 0
    before = symbols(p.path("prog"))
    for ks in ([1], [1, 2]):
        p.write("lib.c", with_extras(ks))
        p.compile("lib.c")
        rc, why, err = p.link(["main.o", "lib.o"])
        assert (rc, why) == (0, "patched 1 input(s): lib.o"), err
        assert p.run() == (0, f"f={expected_f(ks)} g=3 counter=7 lib\n")
        _agrees(p, ["main.o", "lib.o"])
    assert symbols(p.path("prog"))["main"] == before["main"]      # main.o was not written
