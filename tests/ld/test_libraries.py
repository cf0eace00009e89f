"""-l search (libraries.find_library), differential: the same -L/-l arguments linked by GNU ld and
by linkwrap.ld, both programs run, the same library chosen.

GNU ld's rules: every -L in command-line order (wherever it stands, before or after the -l), then
its built-in directories (moved by --sysroot, dropped by -nostdlib); in each directory lib<name>.so
before lib<name>.a, only .a under -Bstatic; -l:file finds that file name; a file of another
machine or class is skipped with a note and the search goes on.
"""
import os
import subprocess
import sys

import pytest

from . import corpus

WHICH = 'const char *which(void) { return "%s"; }\n'
MAIN = '#include <stdio.h>\nconst char *which(void);\nint main(void) { puts(which()); return 0; }\n'


def sh(argv, cwd, check=True):
    done = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True)
    if check:
        assert done.returncode == 0, f"{argv}: {done.stderr}"
    return done


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """d1: libfoo.a; d2: libfoo.so and libfoo.a; d3: foo.lib (an archive by another name);
    d4: a 32-bit libfoo.a (incompatible)."""
    d = tmp_path_factory.mktemp("libsearch")
    for sub in ("d1", "d2", "d3", "d4"):
        (d / sub).mkdir()
    (d / "main.c").write_text(MAIN)
    sh(["gcc", "-O1", "-c", "main.c"], d)
    for name, text in (("a1", "d1 static"), ("a2", "d2 static"), ("a3", "d3 exact"), ("s2", "d2 shared")):
        (d / f"{name}.c").write_text(WHICH % text)
        sh(["gcc", "-O1", "-fPIC", "-c", f"{name}.c"], d)
    sh(["ar", "rcs", "d1/libfoo.a", "a1.o"], d)
    sh(["ar", "rcs", "d2/libfoo.a", "a2.o"], d)
    sh(["gcc", "-shared", "s2.o", "-o", "d2/libfoo.so"], d)
    sh(["ar", "rcs", "d3/foo.lib", "a3.o"], d)
    (d / "i32.s").write_text(".globl which\nwhich: ret\n")
    sh(["as", "--32", "i32.s", "-o", "i32.o"], d)
    sh(["ar", "rcs", "d4/libfoo.a", "i32.o"], d)
    return d, corpus.shim_dir(str(d))


def both(d, shim, args):
    """Link main.o with args by GNU ld and by linkwrap.ld (through gcc) -> (GNU's, linkwrap's)
    (stdout of the program, the link's stderr with the linker's name cut)."""
    out = []
    for tag, b in (("ref", []), ("lw", [f"-B{shim}"])):
        done = sh(["gcc", *b, "-no-pie", "main.o", *args, "-o", tag], d, check=False)
        assert done.returncode == 0, f"{tag}: {done.stderr}"
        run = subprocess.run([str(d / tag)], capture_output=True, text=True,
                             env={**os.environ, "LD_LIBRARY_PATH": str(d / "d2")})
        assert run.returncode == 0, run.stderr
        note = "\n".join(line.split(": ", 1)[1] for line in done.stderr.splitlines() if ": " in line)
        out.append((run.stdout, note))
    return out


@pytest.mark.parametrize("args, chosen", [
    (["-Ld1", "-Ld2", "-lfoo"], "d1 static"),          # the first directory wins, .a and all
    (["-Ld2", "-Ld1", "-lfoo"], "d2 shared"),          # .so before .a in a directory
    (["-lfoo", "-Ld2"], "d2 shared"),                  # a -L after the -l counts too
    (["-Ld2", "-Wl,-Bstatic", "-lfoo", "-Wl,-Bdynamic"], "d2 static"),
    (["-Ld1", "-Ld3", "-l:foo.lib"], "d3 exact"),      # -l:file: that name, along the same path
    (["-Ld2", "-l:libfoo.a"], "d2 static"),
    (["-L./d1", "-lfoo"], "d1 static"),
    (["-Ld4", "-Ld1", "-lfoo"], "d1 static"),          # 32-bit d4/libfoo.a skipped, with GNU ld's note
])
def test_l_is_found_where_gnu_ld_finds_it(tree, args, chosen):
    d, shim = tree
    ref, lw = both(d, shim, args)
    assert ref[0] == chosen + "\n"
    assert lw == ref


START = """\t.globl _start
\t.text
_start:
\tand $-16, %rsp
\tlea msg(%rip), %rdi
\tcall puts@PLT
\txor %edi, %edi
\tcall exit@PLT
\t.section .rodata
msg: .asciz "found in the default directories"
\t.section .note.GNU-stack,"",@progbits
"""


def interp(d):
    """The dynamic linker gcc's programs name (PT_INTERP), discovered."""
    sh(["gcc", "main.o", "a1.o", "-o", "probe"], d)
    ph = sh(["readelf", "-lW", "probe"], d).stdout
    return ph.split("[Requesting program interpreter: ", 1)[1].split("]", 1)[0]


@pytest.mark.parametrize("args, ok", [
    (["-lc"], True),                                   # no -L: GNU ld's own directories
    (["-L/nonexistent", "-l:libc.so.6"], True),
    (["-nostdlib", "-lc"], False),                     # -nostdlib: only -L directories
    (["--sysroot=@EMPTY@", "-lc"], False),             # the defaults are under the sysroot
])
def test_default_directories_after_the_l_ones(tree, args, ok):
    d, _ = tree
    (d / "start.s").write_text(START)
    (d / "empty").mkdir(exist_ok=True)
    sh(["as", "start.s", "-o", "start.o"], d)
    args = [a.replace("@EMPTY@", str(d / "empty")) for a in args]
    gnu_ld = sh(["gcc", "-print-prog-name=ld"], d).stdout.strip()
    common = ["-pie", "--dynamic-linker", interp(d), "start.o", *args]
    for tag, ld in (("dref", [gnu_ld]), ("dlw", [sys.executable, "-m", "linkwrap.ld"])):
        done = sh([*ld, *common, "-o", tag], d, check=False)
        assert (done.returncode == 0) == ok, f"{tag}: {done.stderr}"
        if ok:
            assert sh([d / tag], d).stdout == "found in the default directories\n"
        elif tag == "dlw":
            assert "cannot find -lc" in done.stderr, done.stderr
