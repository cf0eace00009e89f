"""Bad inputs and link errors: GNU ld-style lines, exit status 1, never a traceback.

Each bad input gets exactly one clear line naming the file; link errors are all
reported in one run; what this linker does not do yet is named ("not supported
yet: ...") so that linkwrap can fall back to a real linker.
"""
import os
import subprocess

import pytest

from . import corpus


def run_ld(args, cwd):
    return subprocess.run([corpus.linkwrap_ld(), *args], capture_output=True, text=True, cwd=cwd)


def error_lines(r):
    assert "Traceback" not in r.stderr
    return [l for l in r.stderr.splitlines() if l.strip()]


@pytest.fixture
def objs(tmp_path):
    (tmp_path / "h.c").write_text('#include <stdio.h>\nint main(void){puts("hi");return 0;}\n')
    subprocess.run(["gcc", "-c", "h.c"], cwd=tmp_path, check=True)
    return tmp_path


def test_garbage_object_is_one_line(objs):
    (objs / "junk.o").write_bytes(os.urandom(3000).replace(b"\x7fELF", b"xxxx"))
    r = run_ld(["-o", "out", "junk.o"], objs)
    assert r.returncode == 1
    assert error_lines(r) == ["linkwrap-ld: junk.o: file format not recognized"]
    assert not (objs / "out").exists()


def test_truncated_elf_object_is_one_line(objs):
    data = (objs / "h.o").read_bytes()
    (objs / "cut.o").write_bytes(data[:len(data) // 2])
    r = run_ld(["-o", "out", "cut.o"], objs)
    lines = error_lines(r)
    assert r.returncode == 1 and len(lines) == 1
    assert lines[0].startswith("linkwrap-ld: cut.o: file truncated")


def test_truncated_archive_is_one_line(objs):
    subprocess.run(["ar", "rcs", "libh.a", "h.o"], cwd=objs, check=True)
    data = (objs / "libh.a").read_bytes()
    (objs / "libcut.a").write_bytes(data[:len(data) - 100])
    r = run_ld(["-o", "out", "libcut.a"], objs)
    lines = error_lines(r)
    assert r.returncode == 1 and len(lines) == 1
    assert lines[0].startswith("linkwrap-ld: libcut.a: truncated archive")


# scan's loop, or its arrays: a section with something to report goes to the loop, the lines in order
@pytest.mark.parametrize("relocs", ["python", "bulk"])
def test_every_undefined_symbol_is_reported_with_its_object(objs, tmp_path, relocs, monkeypatch):
    monkeypatch.setenv("LINKWRAP_LD_RELOCS", relocs)
    (objs / "u.c").write_text("int f1(void); int f2(void);\nint main(void){return f1()+f2();}\n")
    (objs / "u2.c").write_text("int f3(void); int g(void){return f3();}\n")
    subprocess.run(["gcc", "-c", "u.c", "u2.c"], cwd=objs, check=True)
    shim = corpus.shim_dir(str(tmp_path))
    r = subprocess.run(["gcc", f"-B{shim}", "u.o", "u2.o", "-o", "out"], capture_output=True, text=True, cwd=objs)
    assert r.returncode == 1
    lines = [l for l in error_lines(r) if l.startswith("linkwrap-ld:")]
    assert lines == [
        "linkwrap-ld: u.o: in function `main':(.text+0xa): undefined reference to `f1'",
        "linkwrap-ld: u.o: in function `main':(.text+0x11): undefined reference to `f2'",
        "linkwrap-ld: u2.o: in function `g':(.text+0x5): undefined reference to `f3'",
    ]
    assert not (objs / "out").exists()


def test_duplicate_definition(objs):
    (objs / "d1.c").write_text("int dup(void){return 1;}\n")
    (objs / "d2.c").write_text("int dup(void){return 2;}\n")
    subprocess.run(["gcc", "-c", "d1.c", "d2.c"], cwd=objs, check=True)
    r = run_ld(["-o", "out", "d1.o", "d2.o"], objs)
    assert r.returncode == 1
    assert error_lines(r) == ["linkwrap-ld: d2.o: multiple definition of `dup'; d1.o: first defined here"]


@pytest.mark.parametrize("relocs", ["python", "bulk"])
def test_pie_with_non_pic_object_names_the_relocation(objs, tmp_path, relocs, monkeypatch):
    monkeypatch.setenv("LINKWRAP_LD_RELOCS", relocs)
    (objs / "np.c").write_text("int x; int *p(void){return &x;}\nint main(void){return *p();}\n")
    subprocess.run(["gcc", "-fno-pic", "-mcmodel=small", "-c", "np.c"], cwd=objs, check=True)
    shim = corpus.shim_dir(str(tmp_path))
    r = subprocess.run(["gcc", f"-B{shim}", "-pie", "np.o", "-o", "out"], capture_output=True, text=True, cwd=objs)
    assert r.returncode == 1
    lines = [l for l in error_lines(r) if l.startswith("linkwrap-ld:")]
    assert lines and all("R_X86_64_32" in l and "recompile with -fPIE" in l for l in lines)


@pytest.mark.parametrize("args, what", [
    (["-shared", "-z", "pack-relative-relocs", "h.o"], "not supported yet: -z pack-relative-relocs"),
    (["-r", "-pie", "h.o"], "not supported yet: -r with -pie"),
    (["--script=x.ld", "h.o"], "not supported yet: option --script=x.ld"),
    (["-m", "elf_i386", "h.o"], "not supported yet: emulation elf_i386"),
])
def test_unsupported_is_named_on_one_line(objs, args, what):
    r = run_ld(["-o", "out", *args], objs)
    lines = error_lines(r)
    assert r.returncode == 1 and len(lines) == 1
    assert lines[0].startswith(f"linkwrap-ld: {what}")


def test_missing_library_and_file(objs):
    r = run_ld(["-o", "out", "h.o", "-lnosuchlib", "nosuch.o"], objs)
    assert r.returncode == 1
    assert error_lines(r) == ["linkwrap-ld: cannot find -lnosuchlib: No such file or directory",
                              "linkwrap-ld: cannot find nosuch.o: No such file or directory"]


def test_output_replaced_atomically_and_hard_links_keep_old_contents(objs, tmp_path):
    shim = corpus.shim_dir(str(tmp_path))
    (objs / "out").write_bytes(b"old")
    os.link(objs / "out", objs / "other-name")
    r = subprocess.run(["gcc", f"-B{shim}", "h.o", "-o", "out"], capture_output=True, text=True, cwd=objs)
    assert r.returncode == 0, r.stderr
    assert (objs / "other-name").read_bytes() == b"old"
    assert subprocess.run([str(objs / "out")], capture_output=True, text=True).stdout == "hi\n"
    assert [p for p in os.listdir(objs) if "tmp" in p] == []


def _section_headers(data):
    import struct
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", data, 0x3C)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * k) for k in range(shnum)]
    names = hdrs[shstrndx]
    def name(h):
        start = names[4] + h[0]
        return data[start:data.index(b"\0", start)].decode()
    return {name(h): (shoff + 64 * k, h) for k, h in enumerate(hdrs)}


# python: relocations decoded into tuples per section; bulk: read as arrays per object (ld/rela.py) by gc
# (with --gc-sections), scan and relocate -- the same line either way
@pytest.mark.parametrize("relocs, extra", [("python", []), ("bulk", []), ("bulk", ["--gc-sections", "-e", "main"])])
@pytest.mark.parametrize("field, value, message", [
    ("r_offset", 0x100000, "relocation at offset 0x100000 of section .text lies outside its"),
    ("r_sym", 0x7000, "relocation of section .text names symbol 28672, the symbol table has"),
])
def test_a_relocation_outside_its_section_or_table_is_one_line(objs, field, value, message, relocs, extra,
                                                                monkeypatch):
    monkeypatch.setenv("LINKWRAP_LD_RELOCS", relocs)
    import struct
    data = bytearray((objs / "h.o").read_bytes())
    _, rela = _section_headers(bytes(data))[".rela.text"]
    if field == "r_offset":
        struct.pack_into("<Q", data, rela[4], value)
    else:
        info, = struct.unpack_from("<Q", data, rela[4] + 8)
        struct.pack_into("<Q", data, rela[4] + 8, (value << 32) | (info & 0xFFFFFFFF))
    (objs / "bad.o").write_bytes(bytes(data))
    r = run_ld(["-o", "out", *extra, "bad.o"], objs)
    lines = error_lines(r)
    assert r.returncode == 1 and len(lines) == 1 and lines[0].startswith(f"linkwrap-ld: bad.o: {message}"), lines


def test_a_symbol_name_outside_the_string_table_is_one_line(objs):
    import struct
    data = bytearray((objs / "h.o").read_bytes())
    _, symtab = _section_headers(bytes(data))[".symtab"]
    struct.pack_into("<I", data, symtab[4] + 24, 0x7FFFFFFF)    # symbol 1's st_name
    (objs / "bad.o").write_bytes(bytes(data))
    r = run_ld(["-o", "out", "bad.o"], objs)
    assert error_lines(r) == ["linkwrap-ld: bad.o: invalid string offset 2147483647 >= "
                              f"{_section_headers(bytes(data))['.strtab'][1][5]} for a string table"]


@pytest.mark.parametrize("extra", [[], ["-r"]])
def test_a_read_only_output_directory_is_one_line_as_gnu_ld_says_it(tmp_path, extra):
    import mounts
    (tmp_path / "s.c").write_text("void _start(void){for(;;);}\n")
    subprocess.run(["gcc", "-c", "-fno-pic", "s.c"], cwd=tmp_path, check=True)
    with mounts.mounted(["-t", "tmpfs", "-o", "ro", "tmpfs"], str(tmp_path / "ro")):
        r = run_ld([*extra, "-o", "ro/x", "s.o"], tmp_path)
        gnu = subprocess.run(["ld", *extra, "-o", "ro/x", "s.o"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 1 == gnu.returncode
    assert error_lines(r) == ["linkwrap-ld: cannot open output file ro/x: Read-only file system"]
    assert gnu.stderr.split(": ", 1)[1] == r.stderr.split(": ", 1)[1]
