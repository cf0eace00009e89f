"""--emit-relocs (ld/emit_relocs.py), -R FILE (ld/just_symbols.py) and --section-start
(ld/section_start.py) beyond the behaviour corpus: the emitted relocations describe the output's own
bytes, and what is not done is named in one line."""
import os
import struct
import subprocess

from . import corpus

SRC = """#include <stdio.h>
extern int counter;
int counter = 3;
static int twice(int x) { return 2 * x; }
__attribute__((noinline)) int bump(int x) { return twice(x) + counter; }
int main(void) { printf("%d\\n", bump(4)); return 0; }
"""


def _run(argv, cwd, env=None):
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env)


def _elf(path):
    with open(path, "rb") as f:
        data = f.read()
    shoff, = struct.unpack_from("<Q", data, 40)
    shnum, shstrndx = struct.unpack_from("<HH", data, 60)
    shdrs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * k) for k in range(shnum)]
    names = [data[shdrs[shstrndx][4] + sh[0]:data.index(b"\0", shdrs[shstrndx][4] + sh[0])].decode() for sh in shdrs]
    return data, shdrs, names


def test_emitted_pc_relative_relocations_reproduce_the_bytes_of_the_output(tmp_path):
    (tmp_path / "p.c").write_text(SRC)
    subprocess.run(["gcc", "-O1", "-c", "p.c"], cwd=tmp_path, check=True)
    shim = corpus.shim_dir(str(tmp_path))
    r = _run(["gcc", f"-B{shim}", "-pie", "p.o", "-Wl,--emit-relocs", "-o", "lw"], tmp_path)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert _run([str(tmp_path / "lw")], tmp_path).stdout == "11\n"
    data, shdrs, names = _elf(tmp_path / "lw")
    rela = shdrs[names.index(".rela.text")]
    text = shdrs[rela[7]]
    assert names[rela[7]] == ".text" and rela[2] == 0x40 and names[rela[6]] == ".symtab"
    symtab = shdrs[rela[6]]
    checked = 0
    for k in range(rela[5] // 24):
        r_off, info, addend = struct.unpack_from("<QQq", data, rela[4] + 24 * k)
        _, st_info, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", data, symtab[4] + 24 * (info >> 32))
        if info & 0xFFFFFFFF not in (2, 4) or shndx == 0:      # PC32 / PLT32 against a definition
            continue
        at = text[4] + r_off - text[3]
        got, = struct.unpack_from("<i", data, at)
        assert got == value + addend - r_off, (hex(r_off), info)
        checked += 1
    assert checked >= 4     # main -> bump, bump -> counter (relaxed GOTPCRELX: PC32), _start -> main ...


def _named(r):
    lines = [l for l in r.stderr.splitlines() if l.startswith("linkwrap-ld:")]
    assert r.returncode == 1 and len(lines) == 1 and "not supported yet" in lines[0], r.stderr
    return lines[0]


def test_what_emit_relocs_just_symbols_and_section_start_leave_out_is_named(tmp_path):
    (tmp_path / "p.c").write_text(SRC)
    (tmp_path / "s.s").write_text(".globl counter\n.set counter, 0x1000\n.section .tdata,\"awT\"\n.globl t\nt: .long 1\n")
    (tmp_path / "n.s").write_text(".globl other\n.set other, 5\n")
    (tmp_path / "t.s").write_text(".text\n.globl _start\n_start: ret\n.section .mysec,\"a\"\n.byte 1\n")
    subprocess.run(["gcc", "-O1", "-c", "p.c", "s.s", "n.s", "t.s"], cwd=tmp_path, check=True)
    ld = corpus.linkwrap_ld()
    assert "--emit-relocs with -s" in _named(_run([ld, "-q", "-s", "p.o", "-o", "x"], tmp_path))
    assert "--emit-relocs with -x" in _named(_run([ld, "--emit-relocs", "-x", "p.o", "-o", "x"], tmp_path))
    assert "thread-local symbol `t'" in _named(_run([ld, "-R", "s.o", "p.o", "-o", "x"], tmp_path))
    assert "-r with -R FILE" in _named(_run([ld, "-r", "--just-symbols=n.o", "p.o", "-o", "x"], tmp_path))
    assert "a section of the default layout's own" in _named(
        _run([ld, "--section-start=.text=0x800000", "t.o", "-o", "x"], tmp_path))
    assert "below the end of the sections before it" in _named(
        _run([ld, "--section-start=.mysec=0x1000", "t.o", "-o", "x"], tmp_path))
    assert "no input section makes an output section .other" in _named(
        _run([ld, "--section-start=.other=0x900000", "t.o", "-o", "x"], tmp_path))
    for flag in ("-q", "--section-start=.mysec=900000", "-Rs.o"):
        line = _named(_run([ld, "--incremental", flag, "p.o", "-o", "x"], tmp_path))
        assert line.endswith("in an incremental link")
    assert not os.path.exists(tmp_path / "x")


def test_a_just_symbols_definition_meets_an_object_s_as_gnu_ld_s_does(tmp_path):
    # s.o defines counter (absolute); p.o too: a multiple definition, named by both linkers
    (tmp_path / "p.c").write_text(SRC)
    (tmp_path / "s.s").write_text(".globl counter\n.set counter, 0x1000\n")
    subprocess.run(["gcc", "-O1", "-c", "p.c", "s.s"], cwd=tmp_path, check=True)
    shim = corpus.shim_dir(str(tmp_path))
    ref = _run(["gcc", "-Wl,-R,s.o", "p.o", "-o", "ref"], tmp_path)
    lw = _run(["gcc", f"-B{shim}", "-Wl,-R,s.o", "p.o", "-o", "lw"], tmp_path)
    assert ref.returncode == lw.returncode == 1
    assert "multiple definition of `counter'" in ref.stderr and "multiple definition of `counter'" in lw.stderr
