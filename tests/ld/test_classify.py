"""classify: one rule per relocation kind, and the links scan and relocate make agree with it.

The table's own shape: every relocation type elf names has at most one recipe, named for it, or
is a type only the loader applies, or one this linker refuses; every recipe's kind has a rule in
classify.RULES that answers an action for every symbol class and output kind that can meet it.
Then real links (gcc -B<shim>, PIE and non-PIE against libc): for each relocation of the object
against a library symbol or a local, the action classify.action names is what the output holds
-- a COPY, a JUMP_SLOT, a GLOB_DAT, a symbolic R_X86_64_64 or a RELATIVE at the field -- and the
program runs.
"""
import itertools
import re
import subprocess

import pytest

from linkwrap.ld import classify, elf, x86_64

from . import corpus

# relocations the dynamic loader applies: never in an object file, so never a recipe
LOADER_ONLY = {elf.R_X86_64_COPY, elf.R_X86_64_GLOB_DAT, elf.R_X86_64_JUMP_SLOT, elf.R_X86_64_RELATIVE,
               elf.R_X86_64_DTPMOD64, elf.R_X86_64_TLSDESC, elf.R_X86_64_IRELATIVE, elf.R_X86_64_RELATIVE64}


def test_every_relocation_type_has_one_recipe_named_for_it():
    names = [r.name for r in x86_64.RECIPES.values()]
    assert len(names) == len(set(names))
    for rtype, r in x86_64.RECIPES.items():
        assert r.name == elf.reloc_name(rtype)
        assert rtype not in LOADER_ONLY, r.name
    # what is neither a recipe nor the loader's is refused by scan ("not supported yet"): the
    # types a current gcc/binutils does not emit for x86-64 Linux objects linked here
    refused = set(elf.RELOC_NAMES) - set(x86_64.RECIPES) - LOADER_ONLY
    assert {elf.reloc_name(t) for t in refused} == {
        "R_X86_64_GOT32", "R_X86_64_PC32_BND", "R_X86_64_PLT32_BND", "R_X86_64_CODE_4_GOTPCRELX",
        "R_X86_64_CODE_4_GOTTPOFF", "R_X86_64_CODE_4_GOTPC32_TLSDESC"}


def test_every_kind_has_one_complete_rule():
    kinds = {r.kind for r in x86_64.RECIPES.values()}
    assert kinds | {"gotslot", "tpslot"} == set(classify.RULES)   # no recipe without a rule, no dead rule
    for (rtype, r), cls, out, writable in itertools.product(
            x86_64.RECIPES.items(), classify.CLASSES, range(4), (0, 1)):
        a = classify.action(r.kind, rtype, cls, out, writable)
        if a is None:
            # only a shared library's symbol in a static link, which has no shared library
            assert out == classify.STATIC and cls in (classify.DATA, classify.FUNC), (r.name, cls, out)
        else:
            assert a in classify.ACTIONS, (r.name, cls, out, a)
    # a call is never left to a text relocation, a preemptible symbol never read at link time
    for cls, out in itertools.product((classify.DATA, classify.FUNC, classify.PREEMPT), range(1, 4)):
        assert classify.action("pc", elf.R_X86_64_PLT32, cls, out, 0) == classify.PLT
        assert classify.action("tpoff", elf.R_X86_64_TPOFF32, cls, out) == classify.ERR_PREEMPT


MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
extern char **environ;
static int x = 42;
int *q = &x;                      /* R_X86_64_64 against a local: a RELATIVE in a PIE */
void (*fp)(void) = abort;         /* R_X86_64_64 against a library function */
int main(void) {
    puts(environ[0] ? "env" : "none");     /* a library's function called, its variable read */
    return *q == 42 && fp != 0 ? 0 : 1;
}
"""
# the symbols the relocations name, and their class in a dynamically linked executable
LIBC = {"environ": classify.DATA, "puts": classify.FUNC, "abort": classify.FUNC}


def readelf(*args):
    return subprocess.run(["readelf", *args], capture_output=True, text=True, check=True).stdout


def object_relocs(obj):
    """[(relocation type, symbol name, the section holds writable data)] of obj's allocated sections."""
    rows, writable = [], None
    for line in readelf("-rW", obj).splitlines():
        m = re.match(r"Relocation section '\.rela(\S+)'", line)
        if m:
            sec = m.group(1)
            writable = None if sec.startswith((".debug", ".eh_frame")) else sec.startswith(".data")
            continue
        f = line.split()
        if writable is not None and len(f) >= 5 and f[2].startswith("R_X86_64_"):
            rows.append((getattr(elf, f[2]), f[4], writable))
    return rows


def dynamic_relocs(out):
    """{(type name, symbol name or None, offset)} of out's .rela.dyn and .rela.plt."""
    found = set()
    for line in readelf("-rW", out).splitlines():
        f = line.split()
        if len(f) >= 3 and f[2].startswith("R_X86_64_"):
            sym = f[4].split("@")[0] if len(f) >= 5 and not f[4].startswith("+") else None
            found.add((f[2], sym, int(f[0], 16)))
    return found


def symbol_value(out, name):
    for line in readelf("-sW", out).splitlines():
        f = line.split()
        if len(f) >= 8 and f[7].split("@")[0] == name:
            return int(f[1], 16)
    raise AssertionError(f"{name} not in {out}")


# an action -> the dynamic relocation the output holds for the symbol (None: none for it)
EXPECT = {classify.COPYREL: "R_X86_64_COPY", classify.PLT: "R_X86_64_JUMP_SLOT",
          classify.CANONICAL_PLT: "R_X86_64_JUMP_SLOT", classify.DYNREL: "R_X86_64_64",
          classify.DIRECT: None}


@pytest.mark.parametrize("mode,cflags,out", [("pie", ["-fPIE"], classify.PIE),
                                             ("no-pie", ["-fno-pic"], classify.EXEC)])
def test_links_hold_what_the_table_says(tmp_path, mode, cflags, out):
    (tmp_path / "main.c").write_text(MAIN)
    obj, exe = str(tmp_path / "main.o"), str(tmp_path / "main")
    subprocess.run(["gcc", "-O1", *cflags, "-c", str(tmp_path / "main.c"), "-o", obj], check=True)
    r = corpus.link("gcc", [obj], None, mode, exe, corpus.shim_dir(str(tmp_path)))
    assert r.returncode == 0, r.stderr
    dyn = dynamic_relocs(exe)
    checked = set()
    for rtype, name, writable in object_relocs(obj):
        recipe = x86_64.RECIPES[rtype]
        if name in LIBC:
            act = classify.action(recipe.kind, rtype, LIBC[name], out, writable)
            if act is classify.GOT:     # the slot's own contents: the loader's GLOB_DAT for a library's
                assert classify.action("gotslot", 0, LIBC[name], out) is classify.DYNREL
                want = "R_X86_64_GLOB_DAT"
            else:
                want = EXPECT[act]
            if want == "R_X86_64_COPY":
                # the copy names one of the variable's aliases (__environ): found by its address
                found = (want, None, symbol_value(exe, name)) in {(t, None, at) for t, _, at in dyn}
            else:
                found = any(t == want and s == name for t, s, _ in dyn)
            assert found, (mode, recipe.name, name, act, sorted(dyn))
            checked.add(name)
        elif name in (".data", ".bss") and recipe.kind == "abs64":
            # q = &x: bound here; the loader adds the load address in a PIE only
            act = classify.action("abs64", rtype, classify.LOCAL, out, writable)
            at = symbol_value(exe, "q")
            relative = ("R_X86_64_RELATIVE", None, at) in dyn
            assert relative == (act is classify.BASEREL), (mode, act)
            checked.add("q")
    assert checked == {*LIBC, "q"}
    run = corpus.run(exe)
    assert (run.returncode, run.stdout) == (0, "env\n")


DTPOFF_DATA = """.section .tbss,"awT",@nobits
.align 8
.globl tv0, tv
tv0: .zero 16
tv: .zero 8
.data
.globl d64, d32
d64: .quad tv@dtpoff
d32: .long tv@dtpoff
.section .rodata
.globl r64
r64: .quad tv@dtpoff
.section .note.GNU-stack,"",@progbits
"""


@pytest.mark.parametrize("mode", ["-pie", "-no-pie", "-static"])
def test_dtpoff_in_data_stays_an_offset_in_the_block(tmp_path, mode):
    """x@dtpoff in data (not after a local-dynamic sequence in code) is the variable's offset in
    its module's TLS block in an executable too, as GNU ld writes it: DTPOFF64 anywhere, DTPOFF32
    outside code."""
    (tmp_path / "t.s").write_text(DTPOFF_DATA)
    (tmp_path / "m.c").write_text('#include <stdio.h>\nextern long d64, r64; extern int d32;\n'
                                  'int main(void) { printf("%ld %d %ld\\n", d64, d32, r64); return 0; }\n')
    subprocess.run(["as", "t.s", "-o", "t.o"], cwd=tmp_path, check=True)
    subprocess.run(["gcc", "-c", "m.c"], cwd=tmp_path, check=True)
    shim = corpus.shim_dir(str(tmp_path))
    out = {}
    for who, b in (("gnu", []), ("lw", [f"-B{shim}"])):
        r = subprocess.run(["gcc", *b, mode, "m.o", "t.o", "-o", who], cwd=tmp_path, capture_output=True, text=True)
        assert r.returncode == 0 and r.stderr == "", r.stderr
        out[who] = subprocess.run([str(tmp_path / who)], capture_output=True, text=True).stdout
    a, b, c = map(int, out["gnu"].split())
    assert a == b == c >= 16       # tv's offset: after tv0 (and libc's TLS, statically linked)
    assert out["lw"] == out["gnu"]


# --- a read-only input in a section the loader writes: no text relocation, differential ----------

RO_CTOR = """\t.section %s,"a"
\t.p2align 3
\t.quad ctor_ro
\t.text
ctor_ro:
\tlea msg(%%rip), %%rdi
\tjmp puts@PLT
\t.section .rodata
msg: .asciz "ctor in a read-only section"
\t.section .note.GNU-stack,"",@progbits
"""
CTOR_MAIN = ('#include <stdio.h>\n__attribute__((constructor)) static void c(void) { puts("ctor from C"); }\n'
        'int main(void) { puts("main"); return 0; }\n')


@pytest.mark.parametrize("mode", ["pie", "static-pie", "no-pie", "static"])
@pytest.mark.parametrize("section", [".init_array", ".init_array.00100", ".fini_array", ".data.rel.ro.ptrs"])
def test_a_read_only_init_array_is_written_by_the_loader(tmp_path, mode, section):
    """`as` makes every .init_array writable, so objcopy makes it "a" only, as some tools emit it:
    GNU ld merges it into the writable output .init_array (a RELATIVE in a PIE, no DT_TEXTREL);
    linkwrap.ld did refuse it as needing a text relocation."""
    shim = corpus.shim_dir(str(tmp_path))
    (tmp_path / "ro.s").write_text(RO_CTOR % section)
    (tmp_path / "main.c").write_text(CTOR_MAIN)
    pic = ["-fPIE"] if "pie" in mode.split("-") else ["-fno-pic"]
    subprocess.run(["as", "ro.s", "-o", "rw.o"], cwd=tmp_path, check=True)
    subprocess.run(["objcopy", f"--set-section-flags={section}=alloc,load,readonly,data,contents", "rw.o", "ro.o"],
                   cwd=tmp_path, check=True)
    assert re.search(rf"\] {re.escape(section)}\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+A\s", readelf("-SW", tmp_path / "ro.o"))
    subprocess.run(["gcc", "-O1", *pic, "-c", "main.c"], cwd=tmp_path, check=True)
    seen = []
    for tag, b in (("ref", []), ("lw", [f"-B{shim}"])):
        done = subprocess.run(["gcc", *b, f"-{mode}", "main.o", "ro.o", "-o", tag], cwd=tmp_path,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "read-only" not in done.stderr, done.stderr
        run = subprocess.run([str(tmp_path / tag)], capture_output=True, text=True, timeout=30)
        assert run.returncode == 0, run.stderr
        seen.append((run.stdout, "TEXTREL" in readelf("-dW", tmp_path / tag)))
    assert seen[1] == seen[0]
    assert seen[0][1] is False


WEAK_TABLE = """\t.section .rodata
\t.globl table
\t.p2align 3
table: .quad weak_undef
\t.quad weak_undef+16
\t.weak weak_undef
\t.section .note.GNU-stack,"",@progbits
"""
WEAK_MAIN = ('#include <stdio.h>\nextern void *const table[];\n'
             'int main(void) { printf("%p %p\\n", table[0], table[1]); return 0; }\n')


@pytest.mark.parametrize("ztext", [[], ["-Wl,-z,text"]])
@pytest.mark.parametrize("mode", ["no-pie", "pie", "static", "static-pie"])
def test_a_read_only_pointer_to_an_undefined_weak_is_resolved_at_link_time(tmp_path, mode, ztext):
    """R_X86_64_64 in .rodata against an undefined weak symbol: GNU ld writes 0 (plus the addend)
    at link time, -z text or not, no dynamic relocation; linkwrap.ld did refuse it as needing a
    text relocation."""
    shim = corpus.shim_dir(str(tmp_path))
    (tmp_path / "t.s").write_text(WEAK_TABLE)
    (tmp_path / "main.c").write_text(WEAK_MAIN)
    pic = ["-fPIE"] if "pie" in mode.split("-") else ["-fno-pic"]
    subprocess.run(["as", "t.s", "-o", "t.o"], cwd=tmp_path, check=True)
    subprocess.run(["gcc", "-O1", *pic, "-c", "main.c"], cwd=tmp_path, check=True)
    seen = []
    for tag, b in (("ref", []), ("lw", [f"-B{shim}"])):
        done = subprocess.run(["gcc", *b, f"-{mode}", "main.o", "t.o", *ztext, "-o", tag], cwd=tmp_path,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        run = subprocess.run([str(tmp_path / tag)], capture_output=True, text=True, timeout=30)
        assert run.returncode == 0, run.stderr
        relocs = readelf("-rW", tmp_path / tag)
        seen.append((run.stdout, "weak_undef" in relocs, "TEXTREL" in readelf("-dW", tmp_path / tag)))
    assert seen[0] == ("(nil) 0x10\n", False, False)
    assert seen[1] == seen[0]


def test_a_text_relocation_under_z_text_is_an_error_for_both(tmp_path):
    """The same RELATIVE in .rodata with -z text: GNU ld refuses it ("read-only segment has dynamic
    relocations"), and so does linkwrap.ld, as an error of the link, not as something to fall back
    from (without -z text it is named as not supported: behaviours/text_relocation)."""
    shim = corpus.shim_dir(str(tmp_path))
    (tmp_path / "t.s").write_text("\t.section .rodata\n\t.globl table\n\t.p2align 3\ntable: .quad answer\n"
                                  "\t.text\nanswer: ret\n\t.section .note.GNU-stack,\"\",@progbits\n")
    (tmp_path / "main.c").write_text("extern void *const table[];\nint main(void) { return table[0] == 0; }\n")
    subprocess.run(["as", "t.s", "-o", "t.o"], cwd=tmp_path, check=True)
    subprocess.run(["gcc", "-O1", "-fPIE", "-c", "main.c"], cwd=tmp_path, check=True)
    for b, says in (([], "read-only segment has dynamic relocations"), ([f"-B{shim}"], "needs a text relocation")):
        done = subprocess.run(["gcc", *b, "-pie", "main.o", "t.o", "-Wl,-z,text", "-o", "out"], cwd=tmp_path,
                              capture_output=True, text=True)
        assert done.returncode == 1 and says in done.stderr, done.stderr
        assert "not supported yet" not in done.stderr
