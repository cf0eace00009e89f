"""Every reason a relink is a full incremental link instead, each asserted by the reason it gives
(--incremental-why, what explain shows), with the program right and the check passing after it;
and a relink killed at each of its steps leaves an old output that runs and a state the next link
accepts or rebuilds."""
import os
import signal
import subprocess
import time

import pytest

from .helpers import Project
from .test_relink import MAIN, lib

BIG = " + ".join(f"(x * {k} ^ (x >> {k % 7}))" for k in range(1, 60))


def _start(tmp_path, cflags=("-O1",), ldflags=()):
    p = Project(tmp_path, cflags=cflags, ldflags=ldflags)
    p.write("main.c", MAIN)
    p.write("lib.c", lib())
    p.compile("main.c", "lib.c")
    rc, why, err = p.link(["main.o", "lib.o"])
    assert rc == 0, err
    return p


def _relink(p, objs=("main.o", "lib.o"), extra=()):
    rc, why, err = p.link(list(objs), extra=extra)
    assert rc == 0, err      # the full link passes the check too
    return why


EDITS = {
    "a new global symbol more": lib(extra="int more(int x) { return x + 2; }\n"),
    "outgrew its chunk": lib(BIG),
    "its merged strings or constants (.rodata.str1.1) changed": lib().replace('"lib"', '"library"'),
    "what it references in other inputs changed": lib().replace("helper(x) + 1", "helper(x) + g(x)"),
}


@pytest.mark.parametrize("reason", sorted(EDITS))
def test_an_edit_the_relink_cannot_patch_is_a_full_link_with_its_reason(tmp_path, reason):
    p = _start(tmp_path)
    p.write("lib.c", EDITS[reason])
    p.compile("lib.c")
    why = _relink(p)
    assert why.startswith("full: lib.o: ") and reason in why, why
    assert p.run()[0] == 0
    assert p.run()[1].startswith("f=")
    # and the state the full link left is patched by the next edit
    p.write("lib.c", EDITS[reason].replace("return x - 1", "return x - 2"))
    p.compile("lib.c")
    assert _relink(p) == "patched 1 input(s): lib.o"
    assert "g=2 " in p.run()[1]


def test_other_options_are_a_full_link(tmp_path):
    p = _start(tmp_path)
    assert _relink(p, extra=["-Wl,-z,now"]) == "full: the link's options changed"


def test_an_added_input_is_a_full_link(tmp_path):
    p = _start(tmp_path)
    p.write("extra.c", "int extra_unused = 3;\n")
    p.compile("extra.c")
    assert _relink(p, ("main.o", "lib.o", "extra.o")) == "full: an input was added or removed (extra.o)"


def test_a_changed_archive_is_a_full_link(tmp_path):
    p = Project(tmp_path)
    p.write("main.c", MAIN)
    p.write("lib.c", lib())
    p.compile("main.c", "lib.c")
    subprocess.run(["ar", "rcs", "libx.a", "lib.o"], cwd=p.root, check=True)
    assert p.link(["main.o", "libx.a"])[0] == 0
    p.write("lib.c", lib("5"))
    p.compile("lib.c")
    os.unlink(p.path("libx.a"))
    subprocess.run(["ar", "rcs", "libx.a", "lib.o"], cwd=p.root, check=True)
    rc, why, err = p.link(["main.o", "libx.a"])
    assert (rc, why) == (0, "full: libx.a: a library or archive changed"), err
    assert p.run() == (0, "f=16 g=3 counter=7 lib\n")
    assert not [n for n in os.listdir(os.path.join(p.root, ".prog.lwinc")) if n.endswith(".tmp")]


def test_an_output_replaced_behind_the_states_back_is_a_full_link(tmp_path):
    p = _start(tmp_path)
    subprocess.run(["cp", "--remove-destination", p.path("main.o"), p.path("prog")], check=True)
    os.unlink(os.path.join(p.root, ".prog.lwinc", "base"))     # else the relink copies the base
    p.write("lib.c", lib("5"))
    p.compile("lib.c")
    assert _relink(p) == "full: the output on disk is not the one the incremental state describes"
    assert p.run() == (0, "f=16 g=3 counter=7 lib\n")
    assert not [n for n in os.listdir(os.path.join(p.root, ".prog.lwinc")) if n.endswith(".tmp")]


def test_a_damaged_state_is_a_full_link(tmp_path):
    p = _start(tmp_path)
    state = os.path.join(p.root, ".prog.lwinc", "state")
    data = open(state, "rb").read()
    with open(state, "wb") as f:
        f.write(data[:12] + b"\xff" * 40)
    assert _relink(p) == "full: the incremental state is damaged"
    with open(state, "wb") as f:
        f.write(b"LWINC 0\n" + data[8:])
    assert _relink(p) == "full: the incremental state has another format version"


def test_a_state_directory_that_is_a_symlink_is_not_followed(tmp_path):
    p = _start(tmp_path)
    d = os.path.join(p.root, ".prog.lwinc")
    os.rename(d, d + ".elsewhere")
    os.symlink(d + ".elsewhere", d)
    assert _relink(p) == "full: no incremental state beside the output"
    assert os.path.islink(d)     # left as it was; no state written through it


def test_liveness_that_changes_under_gc_sections_is_a_full_link(tmp_path):
    p = Project(tmp_path, cflags=("-O1", "-ffunction-sections", "-fno-toplevel-reorder"),
                ldflags=("-Wl,--gc-sections",))
    p.write("main.c", MAIN)
    src = lib(extra="__attribute__((noinline)) int h(int x) { return x * 3; }\n")
    src = src.replace("helper(x) + 1", "helper(x) + g(0)REST")
    p.write("lib.c", src.replace("REST", " + h(1)"))
    src = src.replace("REST", "")
    p.compile("main.c", "lib.c")
    assert p.link(["main.o", "lib.o"])[0] == 0
    assert p.run() == (0, "f=8 g=3 counter=7 lib\n")
    p.write("lib.c", src)
    p.compile("lib.c")
    why = _relink(p)
    assert why == "full: lib.o: which of its sections are live changed (--gc-sections)", why
    assert p.run() == (0, "f=5 g=3 counter=7 lib\n")


def test_a_debug_section_that_changes_size_is_a_full_link(tmp_path):
    p = _start(tmp_path, cflags=("-O0", "-g"))
    # a local with a name short enough to be inline (DW_FORM_string): .debug_info grows, .debug_str not
    p.write("lib.c", lib().replace("return x * 2; }", "int g = x * 2; return g; }"))
    p.compile("lib.c")
    why = _relink(p)
    assert why.startswith("full: lib.o: .debug_") and "changed size where it has no slack" in why, why


def test_shared_objects_are_linked_in_full_and_say_so(tmp_path):
    p = Project(tmp_path, cflags=("-O1", "-fPIC"), ldflags=("-shared",))
    p.write("lib.c", lib())
    p.compile("lib.c")
    rc, why, err = p.link(["lib.o"], out="libx.so")
    assert (rc, why) == (0, "full: -r and -shared outputs are linked in full"), err
    rc, why, err = p.link(["lib.o"], out="libx.so")
    assert (rc, why) == (0, "full: -r and -shared outputs are linked in full"), err


def _stopped_linker(root, proc):
    """The linkwrap-ld process that stopped itself (LINKWRAP_INCREMENTAL_PAUSE), once it has."""
    for _ in range(600):
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                stat = open(f"/proc/{pid}/stat").read()
                cmd = open(f"/proc/{pid}/cmdline", "rb").read()
                cwd = os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                continue
            if b"--incremental" in cmd and cwd == root and stat.rsplit(")", 1)[1].split()[0] == "T":
                return int(pid)
        if proc.poll() is not None:
            raise AssertionError("the link ended without stopping")
        time.sleep(0.05)
    raise AssertionError("no stopped linker")


@pytest.mark.parametrize("step", ["copied", "patched", "renamed"])
def test_a_relink_killed_at_each_step_leaves_a_good_output_and_a_usable_state(tmp_path, step):
    p = _start(tmp_path)
    p.write("lib.c", lib("5"))
    p.compile("lib.c")
    env = {**os.environ, "LINKWRAP_INCREMENTAL_PAUSE": step}
    proc = subprocess.Popen(["gcc", f"-B{p.shim}", "main.o", "lib.o", "-Wl,--incremental,--incremental-why",
                             "-o", "prog"], cwd=p.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.kill(_stopped_linker(p.root, proc), signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode != 0
    # the output is the old program (killed before the rename) or the new one (after it)
    assert p.run() == (0, "f=16 g=3 counter=7 lib\n" if step == "renamed" else "f=7 g=3 counter=7 lib\n")
    assert not [n for n in os.listdir(p.root) if n.endswith(".tmp")]   # debris only in the state's directory
    # killed after the rename, before the state was written: the state describes the base (the old
    # output), which the relink copies and patches again
    assert _relink(p) == "patched 1 input(s): lib.o"
    assert p.run() == (0, "f=16 g=3 counter=7 lib\n")
    assert not [n for n in os.listdir(os.path.join(p.root, ".prog.lwinc")) if n.endswith(".tmp")]
