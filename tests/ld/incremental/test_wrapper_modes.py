"""The two modes the wrapper runs (issue 36 item 4): --incremental-patch-only patches or, when it
cannot, writes nothing and exits CANNOT_PATCH (the wrapper then runs its fastest full linker);
--incremental-base-only builds the state and its base from a link's saved inputs (hard links at
other paths, recorded under their real names) and leaves the output alone, and the next real
relink patches a copy of that base. Every relink: the program's output and --incremental-check."""
import os
import shutil
import subprocess

from linkwrap.ld.incremental.main import CANNOT_PATCH, arg_paths
from linkwrap.ld.incremental.state import state_dir
from linkwrap.ld.options import parse_args

from .helpers import WHY, Project
from .test_fallbacks import EDITS
from .test_relink import MAIN, lib

OBJS = ["main.o", "lib.o"]


def _project(tmp_path):
    p = Project(tmp_path)
    p.write("main.c", MAIN)
    p.write("lib.c", lib())
    p.compile("main.c", "lib.c")
    return p


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _snapshot(p, out="prog"):
    """The output's bytes and every file of its state directory, by name."""
    d = state_dir(p.path(out))
    files = {n: _read(os.path.join(d, n)) for n in sorted(os.listdir(d))} if os.path.isdir(d) else {}
    return _read(p.path(out)), files


def _gnu_ld_args(p, objs, out="prog"):
    """The linker arguments gcc gives for objs, recorded by a shim that then runs GNU ld: the
    output is a foreign full link, as the wrapper's fastest linker leaves it."""
    # in the shim's own directory for the while (gcc adds -L<the -B directory>: the options then
    # are the ones the incremental links through the shim give)
    ld = os.path.join(p.shim, "ld")
    real_ld = shutil.which("ld")
    keep = os.readlink(ld)
    os.unlink(ld)
    try:
        with open(ld, "w") as f:
            f.write(f'#!/bin/sh\nprintf "%s\\0" "$@" > "{p.path("ld-args")}"\nexec "{real_ld}" "$@"\n')
        os.chmod(ld, 0o755)
        subprocess.run([p.driver, f"-B{p.shim}", *objs, "-o", out], cwd=p.root, check=True)
    finally:
        os.unlink(ld)
        os.symlink(keep, ld)
    return _read(p.path("ld-args")).decode().split("\0")[:-1]


def _ld(p, args):
    from .. import corpus
    return subprocess.run([corpus.linkwrap_ld(), *args], cwd=p.root, capture_output=True, text=True)


def test_patch_only_refuses_an_input_added_and_writes_nothing(tmp_path):
    p = _project(tmp_path)
    p.write("more.c", "int more(int x) { return x + 2; }\n")
    p.compile("more.c")
    assert p.link(OBJS)[0] == 0
    before = _snapshot(p)
    # as the wrapper runs it: linkwrap-ld itself (gcc's collect2 makes every failure its exit 1)
    args = _gnu_ld_args(p, OBJS + ["more.o"], out="elsewhere")
    args[args.index("-o") + 1] = "prog"
    r = _ld(p, ["--incremental", "--incremental-patch-only", *args])
    assert r.returncode == CANNOT_PATCH, r.stderr
    assert r.stderr == "linkwrap-ld: incremental: cannot patch: an input was added or removed (more.o)\n"
    assert _snapshot(p) == before
    # and through gcc -B: the same line, "ld returned 3"
    rc, why, err = p.link(OBJS + ["more.o"], extra=["-Wl,--incremental-patch-only"])
    assert rc != 0 and why == "cannot patch: an input was added or removed (more.o)"
    assert f"ld returned {CANNOT_PATCH} exit status" in err
    assert _snapshot(p) == before
    assert p.run() == (0, "f=7 g=3 counter=7 lib\n")


def test_patch_only_without_a_state_refuses(tmp_path):
    p = _project(tmp_path)
    rc, why, err = p.link(OBJS, extra=["-Wl,--incremental-patch-only"])
    assert rc != 0 and f"ld returned {CANNOT_PATCH} exit status" in err, err
    assert why == "cannot patch: no incremental state beside the output"
    assert not os.path.exists(p.path("prog")) and not os.path.exists(state_dir(p.path("prog")))


def test_patch_only_patches_what_it_can(tmp_path):
    p = _project(tmp_path)
    assert p.link(OBJS)[0] == 0
    p.write("lib.c", lib("5"))
    p.compile("lib.c")
    rc, why, err = p.link(OBJS, extra=["-Wl,--incremental-patch-only"])
    assert rc == 0, err
    assert why == "patched 1 input(s): lib.o"
    assert p.run() == (0, "f=16 g=3 counter=7 lib\n")


def test_after_a_refusal_and_a_foreign_full_link_the_next_relink_patches_the_base(tmp_path):
    p = _project(tmp_path)
    assert p.link(OBJS)[0] == 0
    reason = "a new global symbol more"
    p.write("lib.c", EDITS[reason])
    p.compile("lib.c")
    rc, why, err = p.link(OBJS, extra=["-Wl,--incremental-patch-only"])
    assert rc != 0 and why.startswith("cannot patch: ") and reason in why, err
    _gnu_ld_args(p, OBJS)                # what the wrapper does then: its full linker writes prog
    foreign = _read(p.path("prog"))
    assert p.run()[0] == 0
    # an edit the state (the older base) can patch: the base is copied, the foreign file replaced
    p.write("lib.c", lib("5"))
    p.compile("lib.c")
    rc, why, err = p.link(OBJS, extra=["-Wl,--incremental-patch-only"])
    assert rc == 0, err
    assert why == "patched 1 input(s): lib.o"
    assert p.run() == (0, "f=16 g=3 counter=7 lib\n")
    assert _read(p.path("prog")) != foreign


def test_a_base_built_from_saved_inputs_is_patched_by_the_next_real_relink(tmp_path):
    p = _project(tmp_path)
    args = _gnu_ld_args(p, OBJS)
    foreign = _read(p.path("prog"))
    # the wrapper's saved inputs: hard links of the very files, at other paths
    saved = p.path("saved")
    os.mkdir(saved)
    copies = {}
    for o in OBJS:
        os.link(p.path(o), os.path.join(saved, o))
        copies[o] = os.path.join(saved, o)
    saved_args = [copies.get(a, a) for a in args]
    real = dict(zip(arg_paths(parse_args(saved_args)), arg_paths(parse_args(args))))
    names = p.path("names")
    with open(names, "w") as f:
        f.writelines(real[a] + "\n" for a in arg_paths(parse_args(saved_args)))
    r = _ld(p, ["--incremental", "--incremental-base-only", f"--incremental-names={names}", *saved_args])
    assert r.returncode == 0, r.stderr
    assert _read(p.path("prog")) == foreign              # the output on disk left alone
    assert os.path.isfile(os.path.join(state_dir(p.path("prog")), "base"))
    for o in OBJS:
        os.unlink(copies[o])
    # the real relink of prog, by the real names: the base is patched
    p.write("lib.c", lib("5"))
    p.compile("lib.c")
    rc, why, err = p.link(OBJS)
    assert rc == 0, err                                    # --incremental-check: byte-identical
    assert why == "patched 1 input(s): lib.o"
    assert p.run() == (0, "f=16 g=3 counter=7 lib\n")


def test_base_only_needs_the_names_of_every_input(tmp_path):
    p = _project(tmp_path)
    args = _gnu_ld_args(p, OBJS)
    before = _read(p.path("prog"))
    names = p.path("names")
    with open(names, "w") as f:
        f.write("main.o\n")
    r = _ld(p, ["--incremental", "--incremental-base-only", f"--incremental-names={names}", *args])
    assert r.returncode == 1
    assert "names 1 inputs" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert _read(p.path("prog")) == before
    assert WHY.search(r.stderr) is None
