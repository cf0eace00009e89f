"""The spare (patch.py): the output before the last relink, brought up to date by copying only the
ranges that relink wrote, and patched instead of a fresh copy of the whole output. Every relink
is checked by --incremental-check and the program's output; a spare someone else holds (a hard
link, a running program) is never written."""
import os
import subprocess

from .helpers import Project
from .test_relink import MAIN, lib

OBJS = ["main.o", "lib.o"]


def _project(tmp_path):
    p = Project(tmp_path)
    p.write("main.c", MAIN)
    p.write("lib.c", lib())
    p.compile("main.c", "lib.c")
    assert p.link(OBJS)[0] == 0
    return p


def _edit(p, k):
    """The k-th edit: helper's multiplier k + 3 (f(3) = 3 * (k + 3) + 1)."""
    p.write("lib.c", lib(str(k + 3)))
    p.compile("lib.c")
    rc, why, err = p.link(OBJS, extra=["-Wl,--incremental-stats"])
    assert (rc, why) == (0, "patched 1 input(s): lib.o"), err
    assert p.run() == (0, f"f={3 * (k + 3) + 1} g=3 counter=7 lib\n")
    return "copy the output (spare)" in err


def test_relinks_after_the_first_patch_the_spare_and_stay_identical(tmp_path):
    p = _project(tmp_path)
    used = [_edit(p, k) for k in range(5)]
    # the first relink after the full link has no spare; every later one has one
    assert used == [False, True, True, True, True]


def test_a_hard_linked_old_output_is_not_used_as_the_spare(tmp_path):
    p = _project(tmp_path)
    assert not _edit(p, 0)
    os.link(p.path("prog"), p.path("kept"))     # output 1, which the next relink keeps as its spare
    kept = open(p.path("kept"), "rb").read()
    assert _edit(p, 1)                           # spare: the full link's output, nobody else's
    assert not _edit(p, 2)                       # spare: output 1, also named kept: copied instead
    assert _edit(p, 3)
    assert open(p.path("kept"), "rb").read() == kept
    assert p.run("kept") == (0, "f=10 g=3 counter=7 lib\n")


def test_a_running_old_output_is_not_used_as_the_spare(tmp_path):
    p = Project(tmp_path)
    p.write("main.c", '#include <stdio.h>\n#include <unistd.h>\nextern int f(void);\n'
                      'int main(void){ read(0, (char[1]){0}, 1); printf("%d\\n", f()); return 0; }\n')
    p.write("lib.c", "int f(void) { return 1; }\n")
    p.compile("main.c", "lib.c")
    assert p.link(OBJS)[0] == 0

    def edit(k):
        p.write("lib.c", f"int f(void) {{ return {k}; }}\n")
        p.compile("lib.c")
        rc, why, err = p.link(OBJS, extra=["-Wl,--incremental-stats"])
        assert (rc, why) == (0, "patched 1 input(s): lib.o"), err
        assert p.run() == (0, f"{k}\n")
        return "copy the output (spare)" in err
    assert not edit(2)
    running = subprocess.Popen([p.path("prog")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert edit(3)            # the spare is the full link's output, not the running one
        assert not edit(4)        # the spare would be the running program's file: copied instead
        out, _ = running.communicate("x", timeout=30)
    finally:
        running.kill()
    assert out == "2\n"
