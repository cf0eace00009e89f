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


def test_discarding_locals_is_named(tmp_path):
    # GNU ld -r -x/-X keeps the locals relocations need and drops the rest: not done here
    _objs(tmp_path)
    for flag in ("-x", "-X"):
        r = _ld(["-r", flag, "-o", "x.o", "a.o", "b.o"], tmp_path)
        assert r.returncode == 1 and r.stderr == f"linkwrap-ld: not supported yet: -r with {flag}\n", r.stderr
        assert not os.path.exists(tmp_path / "x.o")


# --- more sections than SHN_LORESERVE (0xff00): extended section numbering -------------------
# 70 000 one-function sections: sections 0xfff1 and 0xfff2 are real ones (they collide with SHN_ABS
# and SHN_COMMON unless read and written through SHN_XINDEX and .symtab_shndx); every function is
# reached through a table of pointers to it by its global name and by a local label (a relocation
# against its section symbol), so every section number is checked by running the program.
MANY = 70000
MAIN = r'''#include <stdio.h>
typedef int fn(void);
extern fn *tab[], *tab2[];
extern int tab_n;
int main(void) {
    int bad = 0;
    for (int i = 0; i < tab_n; i++)
        bad += (tab[i]() != i) + (tab2[i]() != i);
    printf("%d functions, %d wrong\n", tab_n, bad);
    return bad != 0;
}
'''


def _many_sections(d):
    out = []
    for i in range(MANY):
        out.append(f'.section .text.f{i},"ax",@progbits\n.globl f{i}\n.type f{i},@function\nf{i}:\nl{i}:\n'
                   f'  movl ${i}, %eax\n  ret\n')
    out.append('.section .data.tab,"aw",@progbits\n.globl tab\ntab:\n')
    out.extend(f'  .quad f{i}\n' for i in range(MANY))
    out.append('.globl tab2\ntab2:\n')
    out.extend(f'  .quad l{i}\n' for i in range(MANY))
    out.append(f'.globl tab_n\ntab_n:\n  .long {MANY}\n.section .note.GNU-stack,"",@progbits\n')
    (d / "big.s").write_text("".join(out))
    (d / "main.c").write_text(MAIN)
    subprocess.run(["as", "big.s", "-o", "big.o"], cwd=d, check=True)
    subprocess.run(["gcc", "-O1", "-c", "main.c"], cwd=d, check=True)


def _readelf(path, *flags):
    return subprocess.run(["readelf", "-W", *flags, str(path)], capture_output=True, text=True, check=True).stdout


def _where_symbols_are(path):
    """-> (section count, {global name: (type, binding, its section's name or ABS/UND/COM)}) from readelf."""
    import re
    names = dict(re.findall(r"^\s*\[\s*(\d+)\]\s(\S+)", _readelf(path, "-S"), re.M))
    count = re.search(r"Number of section headers:\s+(.*)", _readelf(path, "-h")).group(1)
    out = {}
    for line in _readelf(path, "-s").splitlines():
        p = line.split()
        if len(p) == 8 and p[4] in ("GLOBAL", "WEAK"):
            out[p[7]] = (p[3], p[4], names.get(p[6], p[6]))
    return count, out


def _run_linked(d, obj, shim=None):
    exe = d / f"{obj}.prog"
    cmd = ["gcc"] + ([f"-B{shim}"] if shim else []) + ["main.o", obj, "-o", str(exe)]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=d)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert (run.returncode, run.stdout) == (0, f"{MANY} functions, 0 wrong\n")


def test_more_sections_than_shn_loreserve(tmp_path):
    _many_sections(tmp_path)
    r = _ld(["-r", "-o", "r.o", "big.o"], tmp_path)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    subprocess.run(["ld", "-r", "-o", "gnu.o", "big.o"], cwd=tmp_path, check=True)
    count, where = _where_symbols_are(tmp_path / "r.o")
    gnu_count, gnu_where = _where_symbols_are(tmp_path / "gnu.o")
    # e_shnum 0, the count in section 0's sh_size (readelf: "0 (70010)"), as GNU ld writes it
    assert count == gnu_count and count.startswith("0 (")
    assert ".symtab_shndx" in _readelf(tmp_path / "r.o", "-S")
    assert len(where) == MANY + 3 and where == gnu_where
    # a -r of that (its sections 0xfff1, 0xfff2 real ones, read through .symtab_shndx), and GNU ld's -r
    # output read by linkwrap.ld
    assert _ld(["-r", "-o", "r2.o", "r.o"], tmp_path).returncode == 0
    assert _ld(["-r", "-o", "r3.o", "gnu.o"], tmp_path).returncode == 0
    assert _where_symbols_are(tmp_path / "r2.o")[1] == gnu_where == _where_symbols_are(tmp_path / "r3.o")[1]
    # the programs: finished by GNU ld, and by linkwrap.ld from the object itself and from the -r output
    for obj in ("r.o", "r2.o", "r3.o"):
        _run_linked(tmp_path, obj)
    shim = corpus.shim_dir(str(tmp_path))
    for obj in ("big.o", "r.o"):
        _run_linked(tmp_path, obj, shim)


def test_an_executable_of_more_sections_than_shn_loreserve_is_named(tmp_path):
    # orphan sections of distinct names stay sections of their own: 66 000 of them in the output
    body = "".join(f'.section .x{i},"a",@progbits\nx{i}: .byte 1\n' for i in range(66000))
    (tmp_path / "o.s").write_text(body + '.text\n.globl _start\n_start: ret\n.section .note.GNU-stack,"",@progbits\n')
    subprocess.run(["as", "o.s", "-o", "o.o"], cwd=tmp_path, check=True)
    r = _ld(["-o", "o", "o.o"], tmp_path)
    assert r.returncode == 1 and r.stderr.startswith("linkwrap-ld: not supported yet: an output of 66"), r.stderr
    assert not (tmp_path / "o").exists()
