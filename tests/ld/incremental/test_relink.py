"""ld --incremental on real gcc objects: a full link with slack, then edit-relinks that patch it.

Every relink is checked three ways: the program prints what the edit makes it print, the
incremental check (a from-scratch link into the same layout) finds the outputs byte-identical
(--incremental-check: it exits 1 otherwise), and nm/objdump of the patched output agree with GNU
ld's link of the same inputs about what calls what (symbols at addresses nm gives, calls to them).
"""
import os

import pytest

from .helpers import Project, call_targets, symbols

MAIN = """#include <stdio.h>
extern int f(int);
extern int g(int);
extern int counter;
extern const char *name(void);
int main(void) { printf("f=%d g=%d counter=%d %s\\n", f(3), g(4), counter, name()); return 0; }
"""

LIB = """int counter = 7;
static int helper(int x) { return x * BODY; }
int f(int x) { return helper(x) + 1; }
__attribute__((noinline)) int g(int x) { return x - 1; }
const char *name(void) { return "lib"; }
"""


def lib(body="2", extra=""):
    return LIB.replace("BODY", body) + extra


def _project(tmp_path, **kw):
    p = Project(tmp_path, **kw)
    p.write("main.c", MAIN)
    p.write("lib.c", lib())
    p.compile("main.c", "lib.c")
    return p


def _consistent(p, out="prog"):
    """main's calls go to f and g where nm puts them, as in GNU ld's link of the same inputs."""
    ref = p.reference(["main.o", "lib.o"])
    mine, theirs = symbols(p.path(out)), symbols(ref)
    calls_mine = call_targets(p.path(out), "main")
    calls_ref = call_targets(ref, "main")
    names_ref = {v: k for k, v in theirs.items()}
    names_mine = {v: k for k, v in mine.items()}
    want = [names_ref.get(a) for a in calls_ref if a in names_ref]
    got = [names_mine.get(a) for a in calls_mine if a in names_mine]
    assert got == want and {"f", "g"} <= set(got)


@pytest.mark.parametrize("mode", [[], ["-no-pie"], ["-static"], ["-static-pie"]])
def test_an_edit_inside_a_function_is_patched_and_identical_to_a_link_from_scratch(tmp_path, mode):
    p = _project(tmp_path, ldflags=mode)
    rc, why, err = p.link(["main.o", "lib.o"])
    assert rc == 0, err
    assert why == "full: no incremental state beside the output"
    assert p.run() == (0, "f=7 g=3 counter=7 lib\n")
    p.write("lib.c", lib("5"))
    p.compile("lib.c")
    rc, why, err = p.link(["main.o", "lib.o"])
    assert rc == 0, err
    assert why == "patched 1 input(s): lib.o"
    assert p.run() == (0, "f=16 g=3 counter=7 lib\n")
    _consistent(p)


def test_a_function_that_grows_moves_the_next_and_every_reference_to_it_follows(tmp_path):
    p = _project(tmp_path)
    assert p.link(["main.o", "lib.o"])[0] == 0
    before = symbols(p.path("prog"))
    body = "2 + (x ^ 3) * (x | 9) - (x << 2) / (x + 11)"
    p.write("lib.c", lib(body))
    p.compile("lib.c")
    rc, why, err = p.link(["main.o", "lib.o"])
    assert rc == 0, err
    assert why == "patched 1 input(s): lib.o"
    after = symbols(p.path("prog"))
    assert after["g"] != before["g"]          # g moved inside lib.o's chunk: main.o's call follows
    assert after["main"] == before["main"]    # main.o was not written
    x = 3
    assert p.run() == (0, f"f={x * (2 + (x ^ 3) * (x | 9) - (x << 2) // (x + 11)) + 1} g=3 counter=7 lib\n")
    _consistent(p)


def test_relinks_in_a_row_each_start_from_the_last(tmp_path):
    p = _project(tmp_path)
    assert p.link(["main.o", "lib.o"])[0] == 0
    for k in range(3, 7):
        p.write("lib.c", lib(str(k)))
        p.compile("lib.c")
        rc, why, err = p.link(["main.o", "lib.o"])
        assert (rc, why) == (0, "patched 1 input(s): lib.o"), err
        assert p.run() == (0, f"f={3 * k + 1} g=3 counter=7 lib\n")


def test_an_unchanged_relink_writes_nothing(tmp_path):
    p = _project(tmp_path)
    assert p.link(["main.o", "lib.o"])[0] == 0
    ino = os.stat(p.path("prog")).st_ino
    rc, why, err = p.link(["main.o", "lib.o"])
    assert (rc, why) == (0, "patched 0 input(s)"), err
    assert os.stat(p.path("prog")).st_ino == ino
    # and leaves no second name of the output behind (rename onto a link of the same inode is a no-op)
    names = sorted(os.listdir(p.path(".prog.lwinc")))
    assert len(names) == 4 and names[0] == "base" and names[1].startswith("blobs-") and names[2:] == ["last", "state"]


def test_debug_info_is_patched_and_gdb_style_readers_find_the_new_lines(tmp_path):
    p = Project(tmp_path, cflags=("-O1", "-g"))
    p.write("main.c", MAIN)
    p.write("lib.c", lib())
    p.compile("main.c", "lib.c")
    assert p.link(["main.o", "lib.o"])[0] == 0
    p.write("lib.c", lib("9"))
    p.compile("lib.c")
    rc, why, err = p.link(["main.o", "lib.o"])
    assert (rc, why) == (0, "patched 1 input(s): lib.o"), err
    assert p.run() == (0, "f=28 g=3 counter=7 lib\n")
    import subprocess
    addr = symbols(p.path("prog"))["f"]
    line = subprocess.run(["addr2line", "-e", p.path("prog"), hex(addr)], capture_output=True, text=True).stdout
    assert line.strip().endswith("lib.c:3")


def test_a_hard_linked_old_output_keeps_its_bytes(tmp_path):
    p = _project(tmp_path)
    assert p.link(["main.o", "lib.o"])[0] == 0
    os.link(p.path("prog"), p.path("kept"))
    old = open(p.path("kept"), "rb").read()
    p.write("lib.c", lib("5"))
    p.compile("lib.c")
    assert p.link(["main.o", "lib.o"])[1] == "patched 1 input(s): lib.o"
    assert open(p.path("kept"), "rb").read() == old
    assert p.run("kept") == (0, "f=7 g=3 counter=7 lib\n")
    assert p.run() == (0, "f=16 g=3 counter=7 lib\n")


def test_a_running_old_output_keeps_running_its_old_code(tmp_path):
    import subprocess
    p = Project(tmp_path)
    p.write("main.c", '#include <stdio.h>\n#include <unistd.h>\nextern int f(void);\n'
                      'int main(void){ read(0, (char[1]){0}, 1); printf("%d\\n", f()); return 0; }\n')
    p.write("lib.c", "int f(void) { return 1; }\n")
    p.compile("main.c", "lib.c")
    assert p.link(["main.o", "lib.o"])[0] == 0
    running = subprocess.Popen([p.path("prog")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        p.write("lib.c", "int f(void) { return 2; }\n")
        p.compile("lib.c")
        assert p.link(["main.o", "lib.o"])[1] == "patched 1 input(s): lib.o"
        out, _ = running.communicate("x", timeout=30)
    finally:
        running.kill()
    assert out == "1\n"
    assert p.run() == (0, "2\n")


def test_cargo_removes_the_output_before_it_links_the_base_is_copied(tmp_path):
    p = _project(tmp_path)
    assert p.link(["main.o", "lib.o"])[0] == 0
    os.unlink(p.path("prog"))
    p.write("lib.c", lib("5"))
    p.compile("lib.c")
    rc, why, err = p.link(["main.o", "lib.o"])
    assert (rc, why) == (0, "patched 1 input(s): lib.o"), err
    assert p.run() == (0, "f=16 g=3 counter=7 lib\n")


CXX_MAIN = """#include <cstdio>
#include "t.h"
int use_a();
int main() { Box<int> b{4}; std::printf("%d %d\\n", b.twice(), use_a()); return 0; }
"""
CXX_A = """#include "t.h"
#include <stdexcept>
int use_a() { Box<int> b{BODY}; try { if (b.twice() > 100) throw std::runtime_error("big"); }
              catch (const std::exception &) { return -1; } return b.twice(); }
"""
CXX_T = "template <class T> struct Box { T v; T twice() const { return v * 2; } };\n"


def test_cxx_objects_sharing_an_inline_function_comdat_are_patched(tmp_path):
    p = Project(tmp_path, driver="g++", cflags=("-O0", "-g"))
    p.write("t.h", CXX_T)
    p.write("main.cc", CXX_MAIN)
    p.write("a.cc", CXX_A.replace("BODY", "5"))
    p.compile("main.cc", "a.cc")
    assert p.link(["main.o", "a.o"])[0] == 0
    assert p.run() == (0, "8 10\n")
    for body, want in (("6", "8 12\n"), ("60", "8 -1\n")):
        p.write("a.cc", CXX_A.replace("BODY", body))
        p.compile("a.cc")
        rc, why, err = p.link(["main.o", "a.o"])
        assert (rc, why) == (0, "patched 1 input(s): a.o"), err
        assert p.run() == (0, want)     # the exception is thrown and caught: .eh_frame_hdr is right


def test_the_environment_asks_for_it_where_a_shim_cannot_pass_a_flag(tmp_path):
    import subprocess
    p = _project(tmp_path)
    env = {**os.environ, "LINKWRAP_LD_INCREMENTAL": "1"}
    for body, want in (("2", "f=7"), ("5", "f=16")):
        p.write("lib.c", lib(body))
        p.compile("lib.c")
        subprocess.run(["gcc", f"-B{p.shim}", "main.o", "lib.o", "-o", "prog"], cwd=p.root, env=env, check=True)
        assert p.run()[1].startswith(want)
    with open(os.path.join(p.root, ".prog.lwinc", "last")) as f:
        assert f.read() == "patched 1 input(s): lib.o\n"


def test_a_codegen_unit_cargo_hard_links_from_its_cache_is_neither_hashed_nor_patched(tmp_path):
    """Cargo's incremental builds name each object anew (a per-build salt) but hard-link the codegen
    units rustc did not rebuild from its cache: the same inode, size and mtime say "the same file"
    with no byte read; a rewritten one with the same bytes is hashed; an edited one is patched."""
    p = _project(tmp_path)
    os.link(p.path("main.o"), p.path("k-0123.main.s1.rcgu.o"))
    os.link(p.path("lib.o"), p.path("k-0123.lib.s1.rcgu.o"))
    first = ["k-0123.main.s1.rcgu.o", "k-0123.lib.s1.rcgu.o"]
    assert p.link(first)[0] == 0
    os.link(p.path("lib.o"), p.path("k-0123.lib.s2.rcgu.o"))              # reused: hard-linked
    with open(p.path("main.o"), "rb") as f, open(p.path("k-0123.main.s2.rcgu.o"), "wb") as g:
        g.write(f.read())                                                    # rebuilt, same bytes
    second = ["k-0123.main.s2.rcgu.o", "k-0123.lib.s2.rcgu.o"]
    rc, why, err = p.link(second, extra=["-Wl,--incremental-stats"])
    assert (rc, why) == (0, "patched 0 input(s)"), err
    assert _inputs(err) == ("all but 1", 1, 0)       # crt files and libc: the same files too
    p.write("lib.c", lib("5"))
    p.compile("lib.c")
    os.link(p.path("lib.o"), p.path("k-0123.lib.s3.rcgu.o"))
    os.link(p.path("k-0123.main.s2.rcgu.o"), p.path("k-0123.main.s3.rcgu.o"))
    rc, why, err = p.link(["k-0123.main.s3.rcgu.o", "k-0123.lib.s3.rcgu.o"], extra=["-Wl,--incremental-stats"])
    assert (rc, why) == (0, "patched 1 input(s): k-0123.lib.s3.rcgu.o"), err
    assert _inputs(err) == ("all but 1", 0, 1)
    assert p.run() == (0, "f=16 g=3 counter=7 lib\n")


def _inputs(err):
    """--incremental-stats' "of N inputs A the same files, B the same bytes, C patched"."""
    import re
    n, a, b, c = map(int, re.search(r"of (\d+) inputs (\d+) the same files, (\d+) the same bytes, "
                                    r"(\d+) patched", err).groups())
    return ("all but 1" if a == n - 1 else a), b, c


def test_a_patch_megabytes_from_the_build_id_note_gives_the_build_id_of_a_link_from_scratch(tmp_path):
    """The build id is a digest of 1 MiB chunks' digests; a relink hashes again only the chunks it
    wrote. Megabytes of code before and after lib.o put its patch in a chunk of its own, away from
    the note and the tables at the end: a chunk left out would leave a build id the check (a link
    from scratch into the same layout) does not give."""
    p = _project(tmp_path)
    for name, size in (("pad1", 1500000), ("pad2", 3000000)):
        p.write(f"{name}.c", f'__asm__(".text\\n.globl {name}\\n{name}: .fill {size}, 1, 0x90\\nret\\n");\n')
        p.compile(f"{name}.c")
    objs = ["main.o", "pad1.o", "lib.o", "pad2.o"]
    assert p.link(objs)[0] == 0
    before = _build_id(p.path("prog"))
    p.write("lib.c", lib("5"))
    p.compile("lib.c")
    rc, why, err = p.link(objs)                       # --incremental-check: exit 1 on any difference
    assert (rc, why) == (0, "patched 1 input(s): lib.o"), err
    at = symbols(p.path("prog"))
    chunk = 1 << 20
    assert at["f"] // chunk not in (0, os.path.getsize(p.path("prog")) // chunk)
    after = _build_id(p.path("prog"))
    assert before and after and before != after
    assert p.run() == (0, "f=16 g=3 counter=7 lib\n")


def _build_id(path):
    import re
    import subprocess
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, check=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m and m.group(1)
