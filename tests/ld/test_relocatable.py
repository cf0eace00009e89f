"""-r (relocatable.py): a partial link GNU ld and linkwrap.ld can both finish, or a named refusal.

The behaviour corpus (relocatable case) compares symbols with GNU ld's -r and runs the program
GNU ld makes of it (relocatable_cxx: the same for C++); here: linkwrap.ld's -r output finished
by linkwrap.ld itself, a -r of a -r, one copy of each COMDAT group, and what -r refuses.
"""
import os
import subprocess

from . import corpus

A = '#include <stdio.h>\nint b_value(void);\nstatic const char *s = "twice";\nint main(void) { printf("%s %d\\n", s, b_value()); return 0; }\n'
B = 'static int hidden = 40;\nint b_value(void) { return hidden + 2; }\n'


def _objs(tmp_path):
    (tmp_path / "a.c").write_text(A)
    (tmp_path / "b.c").write_text(B)
    subprocess.run(["gcc", "-O1", "-c", "a.c", "b.c"], cwd=tmp_path, check=True)


def _ld(args, cwd):
    return subprocess.run([corpus.linkwrap_ld(), *args], capture_output=True, text=True, cwd=cwd)


def test_partial_link_finished_by_linkwrap_ld_and_of_a_partial_link(tmp_path):
    _objs(tmp_path)
    shim = corpus.shim_dir(str(tmp_path))
    assert _ld(["-r", "-o", "ab.o", "a.o", "b.o"], tmp_path).returncode == 0
    assert _ld(["-r", "-o", "ab2.o", "ab.o"], tmp_path).returncode == 0
    for obj in ("ab.o", "ab2.o"):
        r = subprocess.run(["gcc", f"-B{shim}", obj, "-o", obj + ".prog"], capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        run = subprocess.run([str(tmp_path / (obj + ".prog"))], capture_output=True, text=True)
        assert run.stdout == "twice 42\n"
    mode = os.stat(tmp_path / "ab.o").st_mode & 0o111
    assert mode == 0, "a relocatable object is not executable"


def test_comdat_groups_stay_groups_the_first_copy_kept(tmp_path):
    src = "template <class T> T twice(T x) { return 2 * x; }\nint %s(int x) { return twice(x) + %d; }\n"
    (tmp_path / "c1.cpp").write_text(src % ("f1", 1))
    (tmp_path / "c2.cpp").write_text(src % ("f2", 2))
    subprocess.run(["g++", "-O0", "-c", "c1.cpp", "c2.cpp"], cwd=tmp_path, check=True)
    assert _ld(["-r", "-o", "c.o", "c1.o", "c2.o"], tmp_path).returncode == 0
    groups = subprocess.run(["readelf", "-gW", "c.o"], capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert groups.count("[_Z5twiceIiET_S0_]") == 1, groups     # one copy of the template
    ref = subprocess.run(["readelf", "-gW", "c1.o"], capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert groups.count("COMDAT group section") == ref.count("COMDAT group section")


def test_shared_libraries_are_named(tmp_path):
    _objs(tmp_path)
    subprocess.run(["gcc", "-shared", "-fPIC", "b.c", "-o", "libb.so"], cwd=tmp_path, check=True)
    r = _ld(["-r", "-o", "x.o", "a.o", "libb.so"], tmp_path)
    assert r.returncode == 1 and r.stderr == "linkwrap-ld: not supported yet: -r with a shared library (libb.so)\n"
