"""-shared: shared objects linked by linkwrap.ld, checked against GNU ld's link of the same objects.

A C library with general-, local- and initial-exec TLS, a version script with two version nodes,
a call to a preemptible function (the program interposes it), a function pointer in data, and a
constructor; with and without -Bsymbolic and -z now. The program that uses it is linked by GNU ld
and runs against either library: same output. readelf and eu-elflint --gnu-ld read the output.
A std-only Rust cdylib is loaded with dlopen by a C program.
"""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import script

from . import corpus

LIB = r"""
#include <stdio.h>
__attribute__((tls_model("global-dynamic"))) __thread int tls_gd = 5;
__attribute__((tls_model("local-dynamic"))) static __thread int tls_ld = 7;
__attribute__((tls_model("initial-exec"))) __thread int tls_ie = 9;
int counter;
int helper(int x) { return x + 1; }                   /* preemptible: the program defines one too */
static int twice(int x) { return 2 * x; }
int (*fp)(int) = twice;                               /* R_X86_64_RELATIVE */
int (*hp)(int) = helper;                              /* R_X86_64_64 against an exported symbol */
int get_counter(void) { return counter; }
int api(int x) { counter++; tls_ld++; tls_ie++; return helper(x) + tls_gd + tls_ld + tls_ie; }
int api2(int x) { return fp(x) + hp(x); }
int hidden_fn(int x) { return x; }                    /* local: in the version script */
__attribute__((constructor)) static void init(void) { counter = 100; }
"""

MAP = """/* two version nodes; LIB_2 depends on LIB_1 */
LIB_1 { global: api; helper; counter; tls_gd; tls_ie; fp; hp; get_*; local: *; };
LIB_2 { global: "api2"; } LIB_1;
"""

MAIN = r"""
#include <stdio.h>
int api(int); int api2(int); int get_counter(void);
int helper(int x) { return x + 1000; }               /* interposes the library's */
int main(void) {
    int a = api(1);
    printf("%d %d %d\n", a, get_counter(), api2(20));
    return 0;
}
"""
# helper(1) is the program's (1001) unless -Bsymbolic binds the library's own (2);
# tls_gd 5 + tls_ld 8 + tls_ie 10; api2(20) = twice(20) + hp(20), hp the program's helper
# when interposed, the library's own with -Bsymbolic.
EXPECTED = {False: "1024 101 1060\n", True: "25 101 61\n"}


def run(argv, cwd, env=None, check=True):
    done = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    if check:
        assert done.returncode == 0, f"{argv}: {done.stderr}"
    return done


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("shared")
    (d / "lib.c").write_text(LIB)
    (d / "lib.map").write_text(MAP)
    (d / "main.c").write_text(MAIN)
    run(["gcc", "-O1", "-fPIC", "-c", "lib.c"], d)
    run(["gcc", "-O1", "-c", "main.c"], d)
    return d


def link_lib(d, out, shim, extra=()):
    run(["gcc", *([f"-B{shim}"] if shim else []), "-shared", "lib.o", f"-Wl,--version-script=lib.map",
         "-Wl,-soname,libdemo.so", *extra, "-o", out], d)


def readelf(*args):
    return subprocess.run(["readelf", "-W", *map(str, args)], capture_output=True, text=True).stdout


def reloc_types(path):
    return {line.split()[2] for line in readelf("-r", path).splitlines() if " R_X86_64_" in line}


def dynsyms(path):
    rows = set()
    for line in readelf("--dyn-syms", path).splitlines():
        f = line.split()
        if len(f) >= 8 and f[0].rstrip(":").isdigit() and f[6] != "UND":
            rows.add((f[7], f[3], f[4], f[5]))      # name@@version, type, binding, visibility
    return rows


@pytest.mark.parametrize("option", ["", "-Bsymbolic", "-Bsymbolic-functions"])
def test_c_shared_library_runs_as_gnu_lds_does(built, tmp_path, option):
    d = built
    shim = corpus.shim_dir(str(tmp_path))
    symbolic = bool(option)      # either binds helper (a function) here
    extra = [f"-Wl,{option}"] if option else []
    for sub, s in (("lw", shim), ("ref", None)):
        (tmp_path / sub).mkdir()
        link_lib(d, tmp_path / sub / "libdemo.so", s, extra)
    run(["gcc", "main.o", f"-L{tmp_path / 'ref'}", "-ldemo", "-o", tmp_path / "main"], d)
    for sub in ("lw", "ref"):
        for bind_now in ("", "1"):
            env = {"LD_LIBRARY_PATH": str(tmp_path / sub), "LD_BIND_NOW": bind_now}
            assert run([tmp_path / "main"], d, env).stdout == EXPECTED[symbolic], (sub, bind_now)
    lw, ref = tmp_path / "lw" / "libdemo.so", tmp_path / "ref" / "libdemo.so"
    assert "Linker: linkwrap.ld" in readelf("-p", ".comment", lw)
    assert run(["eu-elflint", "--gnu-ld", lw], d, check=False).stdout.strip() == "No errors"
    # what it exports, under which version, exactly as GNU ld
    assert dynsyms(lw) == dynsyms(ref)
    assert ("api2@@LIB_2", "FUNC", "GLOBAL", "DEFAULT") in dynsyms(lw)
    assert not any(name.startswith(("hidden_fn", "twice")) for name, *_ in dynsyms(lw))
    # what the version script made local is local in .symtab too, as GNU ld writes it
    assert " LOCAL  DEFAULT " in [l for l in readelf("-s", lw).splitlines() if l.endswith(" hidden_fn")][0]
    versions = readelf("-V", lw)
    assert "Name: LIB_1" in versions and "Name: LIB_2" in versions and "Parent 1: LIB_1" in versions
    dyn = readelf("-d", lw)
    assert "Library soname: [libdemo.so]" in dyn and "STATIC_TLS" in dyn
    assert ("SYMBOLIC" in dyn) == (option == "-Bsymbolic")
    relocs = readelf("-r", lw)
    # the same kinds of dynamic relocation as GNU ld's output; with -Bsymbolic GNU ld still names
    # the (now bound) TLS symbols in a DTPMOD64/DTPOFF64 pair, where this linker writes the offset
    if not symbolic:
        assert reloc_types(lw) == reloc_types(ref)
    want = {"R_X86_64_RELATIVE", "R_X86_64_GLOB_DAT", "R_X86_64_DTPMOD64", "R_X86_64_TPOFF64",
            "R_X86_64_JUMP_SLOT"} | {"": {"R_X86_64_DTPOFF64", "R_X86_64_64"}, "-Bsymbolic": set(),
                                     "-Bsymbolic-functions": {"R_X86_64_DTPOFF64"}}[option]
    assert want <= reloc_types(lw)
    # the call to helper goes through the PLT unless -Bsymbolic binds it here
    assert ("helper@@LIB_1 + 0" in relocs.split("'.rela.plt'")[1]) != symbolic
    heads = readelf("-l", lw)
    for seg in ("GNU_RELRO", "GNU_EH_FRAME", "TLS", "DYNAMIC"):
        assert seg in heads
    assert "INTERP" not in heads and "DYN (Shared object file)" in readelf("-h", lw)


def test_z_now_and_init_fini_arrays(built, tmp_path):
    shim = corpus.shim_dir(str(tmp_path))
    link_lib(built, tmp_path / "libdemo.so", shim, ["-Wl,-z,now"])
    dyn = readelf("-d", tmp_path / "libdemo.so")
    assert "BIND_NOW" in dyn and "Flags: NOW" in dyn
    for tag in ("(INIT_ARRAY)", "(FINI_ARRAY)", "(INIT)", "(FINI)", "(VERDEF)", "(VERSYM)"):
        assert tag in dyn, tag
    assert "(DEBUG)" not in dyn and "PIE" not in dyn


def test_no_undefined_version_names_the_symbol(built, tmp_path):
    (tmp_path / "v.map").write_text("{ global: api; no_such_fn; local: *; };\n")
    shim = corpus.shim_dir(str(tmp_path))
    args = ["gcc", f"-B{shim}", "-shared", str(built / "lib.o"), "-Wl,--version-script=v.map", "-o", "x.so"]
    assert run(args, tmp_path).returncode == 0          # GNU ld's default: --undefined-version
    r = run([*args, "-Wl,--no-undefined-version"], tmp_path, check=False)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "linkwrap-ld: version script assignment of `global' to symbol `no_such_fn' failed: " \
           "symbol not defined" in r.stderr


def test_undefined_symbols_are_left_to_the_loader_unless_no_undefined(tmp_path):
    (tmp_path / "u.c").write_text("extern int elsewhere(void); int f(void) { return elsewhere(); }\n")
    run(["gcc", "-fPIC", "-c", "u.c"], tmp_path)
    shim = corpus.shim_dir(str(tmp_path))
    run(["gcc", f"-B{shim}", "-shared", "u.o", "-o", "libu.so"], tmp_path)
    assert "UND elsewhere" in readelf("--dyn-syms", tmp_path / "libu.so")
    r = run(["gcc", f"-B{shim}", "-shared", "u.o", "-Wl,--no-undefined", "-o", "libu.so"], tmp_path, check=False)
    assert r.returncode == 1 and "undefined reference to `elsewhere'" in r.stderr


def test_non_pic_code_in_a_shared_object_is_refused(tmp_path):
    (tmp_path / "n.c").write_text("int v; int *f(void) { return &v; }\n")
    run(["gcc", "-fno-pic", "-mcmodel=small", "-c", "n.c"], tmp_path)
    shim = corpus.shim_dir(str(tmp_path))
    r = run(["gcc", f"-B{shim}", "-shared", "n.o", "-o", "libn.so"], tmp_path, check=False)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "can not be used when making a shared object; recompile with -fPIC" in r.stderr


def test_what_it_cannot_do_is_named_and_the_wrapper_falls_back(tmp_path, lw_home):
    """extern "C++" in a version script: one line; linkwrap links it as asked instead, unless
    LINKWRAP_LD_NO_FALLBACK=1 asks to see the failure."""
    (tmp_path / "t.c").write_text("int get(void) { return 1; }\n")
    (tmp_path / "v.map").write_text('{ global: extern "C++" { ns::*; }; get; local: *; };\n')
    run(["gcc", "-fPIC", "-c", "t.c"], tmp_path)
    r = run([corpus.linkwrap_ld(), "-shared", "t.o", "--version-script=v.map", "-o", "libt.so"], tmp_path,
            check=False)
    assert (r.returncode, r.stderr) == (1, 'linkwrap-ld: not supported yet: extern "C++" block in version '
                                           'script v.map\n')
    cc = [script("linkwrap-cc"), "-shared", "t.o", "-Wl,--version-script=v.map", "-o", "libt.so"]
    done = run(cc, tmp_path, {"LINKWRAP_LINKER": "python"})
    assert (done.stdout, done.stderr) == ("", "") and "Linker: linkwrap.ld" not in readelf("-p", ".comment",
                                                                                          tmp_path / "libt.so")
    failed = run(cc, tmp_path, {"LINKWRAP_LINKER": "python", "LINKWRAP_LD_NO_FALLBACK": "1"}, check=False)
    assert failed.returncode == 1 and 'not supported yet: extern "C++" block' in failed.stderr


TLSDESC_LIB = r"""
__thread int t_own = 3;
static __thread int t_static = 4;
extern __thread int t_other;
int get(void) { return t_own + t_static + t_other; }
void bump(void) { t_own++; t_static++; t_other++; }
"""
TLSDESC_MAIN = r"""
#include <pthread.h>
#include <stdio.h>
int get(void); void bump(void);
static void *th(void *a) { bump(); bump(); printf("thread %d\n", get()); return 0; }
int main(void) {
    bump();
    printf("main %d\n", get());
    pthread_t t; pthread_create(&t, 0, th, 0); pthread_join(t, 0);
    printf("main %d\n", get());
    return 0;
}
"""


def test_tls_descriptors_in_a_shared_object(tmp_path):
    """-mtls-dialect=gnu2: each descriptor a GOT pair with R_X86_64_TLSDESC (own, static and another
    library's variable), per thread, as with GNU ld's link."""
    (tmp_path / "td.c").write_text(TLSDESC_LIB)
    (tmp_path / "other.c").write_text("__thread int t_other = 10;\n")
    (tmp_path / "main.c").write_text(TLSDESC_MAIN)
    run(["gcc", "-O1", "-fPIC", "-mtls-dialect=gnu2", "-c", "td.c"], tmp_path)
    run(["gcc", "-fPIC", "-shared", "other.c", "-o", "libother.so"], tmp_path)
    shim = corpus.shim_dir(str(tmp_path))
    for sub, s in (("lw", shim), ("ref", None)):
        (tmp_path / sub).mkdir()
        run(["gcc", *([f"-B{s}"] if s else []), "-shared", "td.o", "-L.", "-lother", "-o", f"{sub}/libtd.so"],
            tmp_path)
    run(["gcc", "main.c", "-Lref", "-ltd", "-L.", "-lother", "-pthread", "-o", "main"], tmp_path)
    for sub in ("lw", "ref"):
        out = run([tmp_path / "main"], tmp_path, {"LD_LIBRARY_PATH": f"{tmp_path}:{tmp_path / sub}"}).stdout
        assert out == "main 20\nthread 23\nmain 20\n", sub
    lw = tmp_path / "lw" / "libtd.so"
    assert "Linker: linkwrap.ld" in readelf("-p", ".comment", lw)
    assert run(["eu-elflint", "--gnu-ld", lw], tmp_path, check=False).stdout.strip() == "No errors"
    descs = [line.split() for line in readelf("-r", lw).splitlines() if "R_X86_64_TLSDESC" in line]
    assert len(descs) == 3 and {d[-3] for d in descs if len(d) > 4} == {"t_own", "t_other"}


CDYLIB = r"""
use std::cell::Cell;
use std::collections::HashMap;

thread_local! { static CALLS: Cell<u32> = Cell::new(0); }

#[no_mangle]
pub extern "C" fn cd_add(a: i32, b: i32) -> i32 {
    CALLS.with(|c| c.set(c.get() + 1));
    a + b
}

#[no_mangle]
pub extern "C" fn cd_calls() -> u32 { CALLS.with(|c| c.get()) }

#[no_mangle]
pub extern "C" fn cd_words(text: *const std::os::raw::c_char) -> usize {
    let s = unsafe { std::ffi::CStr::from_ptr(text) }.to_string_lossy();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for w in s.split_whitespace() { *seen.entry(w.to_string()).or_default() += 1; }
    seen.len()
}

#[no_mangle]
pub extern "C" fn cd_catch() -> i32 {
    std::panic::catch_unwind(|| -> i32 { panic!("caught inside the cdylib") }).unwrap_or(-1)
}
"""

LOADER = r"""
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
    int (*add)(int, int) = (int (*)(int, int))dlsym(h, "cd_add");
    unsigned (*calls)(void) = (unsigned (*)(void))dlsym(h, "cd_calls");
    unsigned long (*words)(const char *) = (unsigned long (*)(const char *))dlsym(h, "cd_words");
    int (*catch_)(void) = (int (*)(void))dlsym(h, "cd_catch");
    int a = add(2, 3), b = add(40, 2);
    unsigned n = calls();
    printf("%d %d %u %lu %d\n", a, b, n, words("a b a c"), catch_());
    return dlclose(h);
}
"""


def test_rust_cdylib_is_loaded_with_dlopen_by_a_c_program(tmp_path, lw_home):
    crate = tmp_path / "cd"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "cd"\nversion = "0.1.0"\nedition = "2021"\n\n'
                                      '[lib]\ncrate-type = ["cdylib"]\n')
    (crate / "src" / "lib.rs").write_text(CDYLIB)
    env = {"CARGO_TARGET_DIR": str(tmp_path / "target"), "LINKWRAP_LINKER": "python",
           "LINKWRAP_LD_NO_FALLBACK": "1", "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER": script("linkwrap-cc")}
    done = run(["cargo", "build", "--quiet"], crate, env, check=False)
    assert done.returncode == 0 and "linkwrap" not in done.stderr, done.stderr
    so = tmp_path / "target" / "debug" / "libcd.so"
    assert "Linker: linkwrap.ld" in readelf("-p", ".comment", so)
    (tmp_path / "loader.c").write_text(LOADER)
    run(["gcc", "loader.c", "-o", "loader", "-ldl"], tmp_path)
    out = run([tmp_path / "loader", so], tmp_path)
    assert out.stdout == "5 42 2 3 -1\n"
    assert "caught inside the cdylib" in out.stderr          # the panic message, then caught
    assert run(["eu-elflint", "--gnu-ld", so], tmp_path, check=False).stdout.strip() == "No errors"
    exported = {name.split("@")[0] for name, *_ in dynsyms(so)}
    assert exported == {"cd_add", "cd_calls", "cd_words", "cd_catch"}


IFUNC_LIB = r"""
static int impl_a(int x) { return x * 2; }
static void *resolve(void) { return impl_a; }
int twice(int) __attribute__((ifunc("resolve")));
static int hidden_if(int) __attribute__((ifunc("resolve")));
int call_twice(int x) { return twice(x) + hidden_if(1); }
int (*twice_ptr)(int) = twice;
"""
IFUNC_MAIN = r"""
#include <stdio.h>
int twice(int); int call_twice(int); extern int (*twice_ptr)(int);
int main(void) { printf("%d %d %d %d\n", twice(5), call_twice(7), twice_ptr(4), twice_ptr == twice); return 0; }
"""


def test_ifuncs_of_a_shared_object(tmp_path):
    """An exported IFUNC is exported as GNU ld exports it (STT_GNU_IFUNC, the resolver's address);
    calls inside the library go through PLT entries with IRELATIVE; function pointers compare equal."""
    (tmp_path / "ifl.c").write_text(IFUNC_LIB)
    (tmp_path / "ifm.c").write_text(IFUNC_MAIN)
    run(["gcc", "-O1", "-fPIC", "-c", "ifl.c"], tmp_path)
    shim = corpus.shim_dir(str(tmp_path))
    for sub, s in (("lw", shim), ("ref", None)):
        (tmp_path / sub).mkdir()
        run(["gcc", *([f"-B{s}"] if s else []), "-shared", "ifl.o", "-o", f"{sub}/libifl.so"], tmp_path)
    run(["gcc", "ifm.c", "-Lref", "-lifl", "-o", "ifm"], tmp_path)
    for sub in ("lw", "ref"):
        for bind_now in ("", "1"):
            env = {"LD_LIBRARY_PATH": str(tmp_path / sub), "LD_BIND_NOW": bind_now}
            assert run([tmp_path / "ifm"], tmp_path, env).stdout == "10 16 8 1\n", (sub, bind_now)
    lw = tmp_path / "lw" / "libifl.so"
    assert dynsyms(lw) == dynsyms(tmp_path / "ref" / "libifl.so")
    assert ("twice", "IFUNC", "GLOBAL", "DEFAULT") in dynsyms(lw)
    assert "R_X86_64_IRELATIVE" in reloc_types(lw)
    assert run(["eu-elflint", "--gnu-ld", lw], tmp_path, check=False).stdout.strip() == "No errors"


def test_version_script_for_an_executable_is_named_and_soname_kept(tmp_path):
    """GNU ld applies a version script to an executable's exports too: not done, so named; -soname
    gives an executable a DT_SONAME, as GNU ld does."""
    (tmp_path / "m.c").write_text("int main(void) { return 0; }\n")
    (tmp_path / "v.map").write_text("{ global: main; local: *; };\n")
    run(["gcc", "-c", "m.c"], tmp_path)
    shim = corpus.shim_dir(str(tmp_path))
    r = run(["gcc", f"-B{shim}", "m.o", "-Wl,--version-script=v.map", "-o", "m"], tmp_path, check=False)
    assert (r.returncode, r.stderr.splitlines()[0]) == (
        1, "linkwrap-ld: not supported yet: --version-script for an executable (only with -shared)")
    run(["gcc", f"-B{shim}", "m.o", "-Wl,-soname,libm.so.9", "-o", "m"], tmp_path)
    assert "Library soname: [libm.so.9]" in readelf("-d", tmp_path / "m")
