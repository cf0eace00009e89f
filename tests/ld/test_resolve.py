"""--defsym and the linker-defined symbols (resolve.py's _defsyms, layout's values), differential:
the same object linked by GNU ld and by linkwrap.ld through gcc, both programs run, same output.

GNU ld 2.40's rules, as observed: `--defsym NAME=SYM[+-N]` takes a symbol the linker defines
(_GLOBAL_OFFSET_TABLE_, __bss_start, _etext, __start_SEC ...) whether or not an object references
it, except __ehdr_start and _TLS_MODULE_BASE_ (defined too late: "undefined symbol ... referenced in
expression"), and _DYNAMIC / __GNU_EH_FRAME_HDR where the output has none. As the target, a
--defsym beats the default script's PROVIDEs (end, etext, __executable_start ...) but not its plain
assignments of __bss_start, _edata and _end, which stay the linker's.
The program compares addresses it launders through asm, so that gcc cannot fold `a == b`.
"""
import subprocess

import pytest

from . import corpus

SRC = r"""#include <stdio.h>
extern char alias[], alias2[], %(sym)s[];
__attribute__((section("mysec"), used)) int in_mysec = 1;
static unsigned long launder(const void *p) { unsigned long a = (unsigned long)p; __asm__ volatile("" : "+r"(a)); return a; }
int main(void) {
    printf("%%d %%ld\n", launder(alias) == launder(%(sym)s), (long)(launder(alias2) - launder(alias)));
    return 0;
}
"""
# only the aliases referenced: the linker must define SYM for the --defsym's sake alone
LONE = r"""#include <stdio.h>
extern char alias[], alias2[];
static unsigned long launder(const void *p) { unsigned long a = (unsigned long)p; __asm__ volatile("" : "+r"(a)); return a; }
int main(void) { printf("%d %ld\n", launder(alias) != 0, (long)(launder(alias2) - launder(alias))); return 0; }
"""
TARGET = r"""#include <stdio.h>
extern char %(sym)s[];
int v = 3;
__attribute__((section("mysec"), used)) int in_mysec = 1;
int main(void) {
    unsigned long a = (unsigned long)%(sym)s, b = (unsigned long)&v;
    __asm__ volatile("" : "+r"(a), "+r"(b));
    printf("%%d\n", a == b);
    return 0;
}
"""
MODES = {"no-pie": ["-no-pie", "-fno-pic"], "pie": ["-pie", "-fPIE"], "static": ["-static", "-fno-pic"]}


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    return corpus.shim_dir(str(tmp_path_factory.mktemp("defsym-shim")))


def both(tmp_path, shim, source, mode, ldflags):
    """-> [(link status, program output or the link's error lines)] for GNU ld, then linkwrap.ld."""
    (tmp_path / "t.c").write_text(source)
    link_flag, cflag = MODES[mode]
    subprocess.run(["gcc", "-O1", cflag, "-c", "t.c"], cwd=tmp_path, check=True)
    out = []
    for tag, b in (("ref", []), ("lw", [f"-B{shim}"])):
        done = subprocess.run(["gcc", *b, link_flag, "t.o", *[f"-Wl,{f}" for f in ldflags], "-o", tag],
                              cwd=tmp_path, capture_output=True, text=True)
        assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
        if done.returncode:
            # the linker's own lines, its name cut ("/usr/bin/ld:--defsym:1: " / "linkwrap-ld: --defsym x=y: ")
            out.append(("failed", [line.rsplit(": ", 1)[-1] for line in done.stderr.splitlines()
                                   if "referenced in expression" in line]))
        else:
            run = subprocess.run([str(tmp_path / tag)], capture_output=True, text=True, timeout=30)
            assert run.returncode == 0, run.stderr
            out.append(("linked", run.stdout))
    return out


RHS = ["__bss_start", "_edata", "_etext", "etext", "__executable_start", "_GLOBAL_OFFSET_TABLE_",
       "__init_array_start", "__fini_array_end", "__start_mysec", "__stop_mysec"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sym", RHS + ["_DYNAMIC", "__GNU_EH_FRAME_HDR"])
def test_defsym_of_a_linker_defined_symbol(tmp_path, shim, mode, sym):
    got = both(tmp_path, shim, SRC % {"sym": sym}, mode, [f"--defsym=alias={sym}", "--defsym=alias2=alias+24"])
    if sym in ("_DYNAMIC", "__GNU_EH_FRAME_HDR") and mode == "static":
        assert got[0] == ("failed", [f"undefined symbol `{sym}' referenced in expression"])
    elif sym == "_GLOBAL_OFFSET_TABLE_" and mode != "pie":
        # non-PIC code's `_GLOBAL_OFFSET_TABLE_` is R_X86_64_GOTPC32 (GOT - P), no address to compare
        assert got[0] == ("linked", "0 24\n")
    else:
        assert got[0] == ("linked", "1 24\n")
    assert got[1] == got[0]


@pytest.mark.parametrize("sym", ["_GLOBAL_OFFSET_TABLE_", "__bss_start", "_etext", "__executable_start"])
def test_defsym_alone_makes_the_linker_define_it(tmp_path, shim, sym):
    got = both(tmp_path, shim, LONE, "pie", [f"--defsym=alias={sym}", "--defsym=alias2=alias-8"])
    assert got[0] == ("linked", "1 -8\n")
    assert got[1] == got[0]


@pytest.mark.parametrize("sym", ["__ehdr_start", "_TLS_MODULE_BASE_"])
def test_defined_too_late_for_gnu_ld_is_the_same_error(tmp_path, shim, sym):
    got = both(tmp_path, shim, SRC % {"sym": sym}, "no-pie", [f"--defsym=alias={sym}", "--defsym=alias2=alias"])
    assert got[0] == ("failed", [f"undefined symbol `{sym}' referenced in expression"])
    assert got[1] == got[0]


def test_defsym_of_end_is_end(tmp_path, shim):
    """GNU ld 2.40 gives `--defsym alias=_end` a value past _end here (0x2000 past it, -z norelro
    too: seemingly an earlier sizing pass's _end; not copied); lld and linkwrap.ld give _end itself."""
    got = both(tmp_path, shim, SRC % {"sym": "_end"}, "no-pie", ["--defsym=alias=_end", "--defsym=alias2=alias+8"])
    assert got[0][0] == "linked"
    assert got[1] == ("linked", "1 8\n")


@pytest.mark.parametrize("mode", ["no-pie", "static"])
@pytest.mark.parametrize("sym, wins", [
    ("end", True), ("etext", True), ("__executable_start", True), ("__ehdr_start", True),
    ("_DYNAMIC", True), ("__start_mysec", True),
    ("__bss_start", False), ("_edata", False), ("_end", False),
])
def test_defsym_naming_a_linker_defined_symbol(tmp_path, shim, mode, sym, wins):
    got = both(tmp_path, shim, TARGET % {"sym": sym}, mode, [f"--defsym={sym}=v"])
    assert got[0] == ("linked", f"{int(wins)}\n")
    assert got[1] == got[0]


# --- a TLS common meets a definition or common of the other kind: an error for both -------------

TLS_COMMON = """\t.tls_common tvar,4,4
\t.text
\t.globl get_common
get_common:
\tmovq %fs:0, %rax
\taddq tvar@gottpoff(%rip), %rax
\tmovl (%rax), %eax
\tret
\t.section .note.GNU-stack,"",@progbits
"""
TLS_MAIN = ('#include <stdio.h>\nint get_common(void);\nextern __thread int tvar;\n'
            'int main(void) { tvar += 1; printf("%d %d\\n", get_common(), tvar); return 0; }\n')


@pytest.mark.parametrize("order", [
    ("common", "main", "data"), ("data", "common"), ("data", "main", "common"), ("main", "data", "common"),
    ("ccommon", "common"), ("common", "ccommon"),
])
def test_a_tls_common_meeting_the_other_kind_is_an_error(tmp_path, shim, order):
    """GNU ld: "tvar: TLS reference in common.o mismatches non-TLS definition in data.o": a TLS
    common that a .data definition (or a plain common) would replace is refused, whatever the
    order; linkwrap.ld linked one such order into a program that crashed."""
    (tmp_path / "common.s").write_text(TLS_COMMON)
    (tmp_path / "main.c").write_text(TLS_MAIN)
    (tmp_path / "data.c").write_text("int tvar = 3;\n")
    (tmp_path / "ccommon.c").write_text("int tvar;\n")
    subprocess.run(["as", "common.s", "-o", "common.o"], cwd=tmp_path, check=True)
    for c in ("main", "data", "ccommon"):
        subprocess.run(["gcc", "-O1", "-fcommon", "-c", f"{c}.c"], cwd=tmp_path, check=True)
    objs = [f"{o}.o" for o in order] + (["main.o"] if "main" not in order else [])
    for b in ([], [f"-B{shim}"]):
        done = subprocess.run(["gcc", *b, "-pie", *objs, "-o", "out"], cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 1, done.stderr
        assert "tvar: " in done.stderr and " mismatches " in done.stderr, done.stderr


# --- a common symbol meets a shared library's definition: GNU ld's precedence ---------------------

COMMON_C = "int cvar; int get_c(void) { return cvar; }\n"
COMMON_MAIN = ('#include <stdio.h>\nextern int cvar;\nint get_c(void);\n'
               'int main(void) { cvar++; printf("%d %d\\n", cvar, get_c()); return 0; }\n')
LIBS = {"strong": "int cvar = 9;\n", "weak": "__attribute__((weak)) int cvar = 9;\n",
        "func": "int cvar(void) { return 9; }\n"}


@pytest.mark.parametrize("needed", ["--as-needed", "--no-as-needed"])
@pytest.mark.parametrize("order", [("c", "main", "lib"), ("lib", "c", "main"), ("main", "lib", "c"), ("lib", "main", "c")])
@pytest.mark.parametrize("lib", LIBS)
def test_a_common_and_a_library_definition(tmp_path, shim, lib, order, needed):
    """GNU ld (_bfd_elf_merge_symbol, and --as-needed dropping a library that nothing needs as it
    is loaded): a library's strong data definition beats a common seen before it; one seen first
    beats a later common, weak or not, if the library counts then; a library's function never
    does. "9+1" is the library's variable, "1" the common; DT_NEEDED follows."""
    (tmp_path / "c.c").write_text(COMMON_C)
    (tmp_path / "main.c").write_text(COMMON_MAIN)
    (tmp_path / "lib.c").write_text(LIBS[lib])
    subprocess.run(["gcc", "-O1", "-fcommon", "-fPIE", "-c", "c.c", "main.c"], cwd=tmp_path, check=True)
    subprocess.run(["gcc", "-shared", "-fPIC", "lib.c", "-o", "libcv.so"], cwd=tmp_path, check=True)
    args = {"c": ["c.o"], "main": ["main.o"], "lib": ["-L.", "-lcv"]}
    seen = []
    for tag, b in (("ref", []), ("lw", [f"-B{shim}"])):
        done = subprocess.run(["gcc", *b, "-pie", f"-Wl,{needed}", *[a for o in order for a in args[o]],
                               "-Wl,-rpath,.", "-o", tag], cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        run = subprocess.run([str(tmp_path / tag)], capture_output=True, text=True, cwd=tmp_path, timeout=30)
        dyn = subprocess.run(["readelf", "-dW", tag], capture_output=True, text=True, cwd=tmp_path).stdout
        seen.append((run.stdout, "libcv.so" in dyn))
    assert seen[0][0] in ("10 10\n", "1 1\n")
    assert seen[1] == seen[0]


def test_a_library_needed_as_it_is_loaded_stays_needed(tmp_path, shim):
    """--as-needed: main.o's reference makes libfl.so needed as it is loaded; a later object's
    definition takes foo over, and GNU ld keeps DT_NEEDED libfl.so all the same."""
    (tmp_path / "fl.c").write_text("int foo(void) { return 1; }\n")
    (tmp_path / "fo.c").write_text("int foo(void) { return 2; }\n")
    (tmp_path / "fm.c").write_text('#include <stdio.h>\nint foo(void);\nint main(void) { printf("%d\\n", foo()); return 0; }\n')
    subprocess.run(["gcc", "-shared", "-fPIC", "fl.c", "-o", "libfl.so"], cwd=tmp_path, check=True)
    subprocess.run(["gcc", "-O1", "-c", "fo.c", "fm.c"], cwd=tmp_path, check=True)
    seen = []
    for tag, b in (("ref", []), ("lw", [f"-B{shim}"])):
        subprocess.run(["gcc", *b, "-Wl,--as-needed", "fm.o", "-L.", "-lfl", "fo.o", "-Wl,-rpath,.", "-o", tag],
                       cwd=tmp_path, check=True)
        run = subprocess.run([str(tmp_path / tag)], capture_output=True, text=True, cwd=tmp_path, timeout=30)
        dyn = subprocess.run(["readelf", "-dW", tag], capture_output=True, text=True, cwd=tmp_path).stdout
        seen.append((run.stdout, "libfl.so" in dyn))
    assert seen[0] == ("2\n", True)
    assert seen[1] == seen[0]
