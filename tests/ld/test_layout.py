"""layout.py's linker-defined values, TLS: _TLS_MODULE_BASE_, the base a TLS descriptor
(-mtls-dialect=gnu2) gives local-dynamic x@dtpoff offsets, is the TLS block's start in a shared
object and the thread pointer in an executable (where the sequence becomes local-exec and x@dtpoff a
TP offset), as GNU ld sets it. Differential: objects using descriptors and objects using the
traditional general/local-dynamic model linked together, as a shared object and as every kind of
executable, by GNU ld and by linkwrap.ld; each program prints the addresses both models give (and
their offsets in the TLS block), and the values read and written through them, per thread."""
import subprocess

import pytest

from . import corpus

DEP = """__thread int dep = 70;
__thread char dep_pad[24] = "pad";
__thread long dep2 = 71;
"""

DESC = """/* TLS descriptors: -mtls-dialect=gnu2 */
extern __thread int dep, own_b;
extern __thread long dep2;
__thread int own_a = 10;
__thread long big_a[5] = {1, 2, 3, 4, 5};
static __thread int loc_a = 20;
static __thread int loc_a2 __attribute__((tls_model("local-dynamic"))) = 21;
static __thread long zero_a;
__thread int hid_a __attribute__((visibility("hidden"))) = 22;
#define A(n, v) void *n(void) { return &(v); }
A(d_own_a, own_a) A(d_own_b, own_b) A(d_dep, dep) A(d_dep2, dep2) A(d_loc_a, loc_a) A(d_loc_a2, loc_a2)
A(d_zero_a, zero_a) A(d_hid_a, hid_a) A(d_big_a3, big_a[3])
int d_sum(void) { return own_a + own_b + dep + (int)dep2 + loc_a + loc_a2 + (int)zero_a + hid_a + (int)big_a[3]; }
"""

TRAD = """/* the traditional general/local-dynamic model */
extern __thread int dep, own_a, hid_a;
extern __thread long dep2, big_a[5];
__thread int own_b = 30;
static __thread int loc_b __attribute__((tls_model("local-dynamic"))) = 40;
static __thread char zero_b[40];
#define A(n, v) void *n(void) { return &(v); }
A(g_own_a, own_a) A(g_own_b, own_b) A(g_dep, dep) A(g_dep2, dep2) A(g_hid_a, hid_a) A(g_big_a3, big_a[3])
A(g_loc_b, loc_b) A(g_zero_b, zero_b[7])
int g_sum(void) { return own_a + own_b + dep + (int)dep2 + loc_b + hid_a + (int)big_a[3] + zero_b[7]; }
"""

MAIN = r"""#include <pthread.h>
#include <stdio.h>
#define D(n) void *n(void);
D(d_own_a) D(d_own_b) D(d_dep) D(d_dep2) D(d_loc_a) D(d_loc_a2) D(d_zero_a) D(d_hid_a) D(d_big_a3)
D(g_own_a) D(g_own_b) D(g_dep) D(g_dep2) D(g_hid_a) D(g_big_a3) D(g_loc_b) D(g_zero_b)
int d_sum(void), g_sum(void);
extern __thread int own_a, own_b, dep;
static void report(const char *who) {
    char *base = d_own_a();
    printf("%s: same %d %d %d %d %d %d\n", who, d_own_a() == g_own_a(), d_own_b() == g_own_b(), d_dep() == g_dep(),
           d_dep2() == g_dep2(), d_hid_a() == g_hid_a(), d_big_a3() == g_big_a3());
    printf("%s: main sees %d %d %d\n", who, (void *)&own_a == d_own_a(), (void *)&own_b == g_own_b(), (void *)&dep == d_dep());
    printf("%s: module offsets %td %td %td %td %td %td %td\n", who, (char *)d_own_b() - base, (char *)d_loc_a() - base,
           (char *)d_loc_a2() - base, (char *)d_zero_a() - base, (char *)d_hid_a() - base, (char *)g_loc_b() - base,
           (char *)g_zero_b() - base);
    printf("%s: dep offsets %td\n", who, (char *)d_dep2() - (char *)d_dep());
    printf("%s: values %d %d\n", who, d_sum(), g_sum());
    *(int *)d_own_a() += 100; *(int *)g_loc_b() += 1; *(long *)d_zero_a() += 5;
    printf("%s: after %d %d\n", who, d_sum(), g_sum());
}
static void *run(void *arg) { report("thread"); return arg; }
int main(void) {
    report("main");
    pthread_t t;
    pthread_create(&t, 0, run, 0);
    pthread_join(t, 0);
    return 0;
}
"""

GOOD = ("same 1 1 1 1 1 1", "main sees 1 1 1", "values 248 247", "after 353 348")


def _build(d):
    for name, src in (("dep.c", DEP), ("a.c", DESC), ("b.c", TRAD), ("main.c", MAIN)):
        (d / name).write_text(src)
    run = lambda *a: subprocess.run(a, cwd=d, check=True)
    run("gcc", "-O1", "-fPIC", "-c", "dep.c")
    run("gcc", "-shared", "dep.o", "-o", "libdep.so")
    run("gcc", "-O1", "-fPIC", "-mtls-dialect=gnu2", "-c", "a.c")
    run("gcc", "-O1", "-fPIC", "-c", "b.c")
    run("gcc", "-O1", "-c", "main.c")


def _outputs(d, link):
    """-> {"gnu": stdout, "lw": stdout} of the program link(who, -B flags) builds and names."""
    shim = corpus.shim_dir(str(d))
    out = {}
    for who, b in (("gnu", []), ("lw", [f"-B{shim}"])):
        exe = link(who, b)
        run = subprocess.run([str(d / exe)], capture_output=True, text=True, cwd=d)
        assert run.returncode == 0, (who, run.stderr)
        out[who] = run.stdout
    for line in GOOD:           # GNU ld's program says what is compared means something
        assert out["gnu"].count(line) == 2, out["gnu"]
    return out


def _link(d, *args):
    r = subprocess.run(["gcc", *args], cwd=d, capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "", r.stderr


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("tlsdesc")
    _build(d)
    return d


@pytest.mark.parametrize("mode", ["-pie", "-no-pie", "-static-pie", "-static"])
def test_descriptors_and_the_traditional_model_in_an_executable(built, mode):
    d = built

    def link(who, b):
        dep = ["dep.o"] if mode.startswith("-static") else ["-L.", "-ldep", f"-Wl,-rpath,{d}"]
        _link(d, *b, mode, "main.o", "a.o", "b.o", *dep, "-pthread", "-o", f"exe{mode}-{who}")
        return f"exe{mode}-{who}"

    out = _outputs(d, link)
    assert out["lw"] == out["gnu"]


def test_descriptors_and_the_traditional_model_in_a_shared_object(built):
    d = built

    def link(who, b):
        (d / who).mkdir(exist_ok=True)
        _link(d, *b, "-shared", "a.o", "b.o", "-L.", "-ldep", f"-Wl,-rpath,{d}", "-o", f"{who}/libab.so")
        # the program itself by GNU ld: only the library differs
        _link(d, "main.o", f"-L{who}", "-lab", "-L.", "-ldep", "-pthread", f"-Wl,-rpath,{d / who}:{d}",
              "-o", f"prog-{who}")
        return f"prog-{who}"

    out = _outputs(d, link)
    assert out["lw"] == out["gnu"]


def test_merged_pieces_of_two_entry_sizes_make_no_entry_size(tmp_path):
    # crt1.o's .rodata.cst4 (_IO_stdin_used) and the program's .rodata.str1.1 in one .rodata: its
    # sh_entsize is 0 (GNU ld's; 4 was the first piece's, and eu-elflint's "size not multiple of entry size")
    (tmp_path / "m.c").write_text('#include <stdio.h>\nint main(void) { puts("seventeen chars!"); return 0; }\n')
    shim = corpus.shim_dir(str(tmp_path))
    for who, b in (("gnu", []), ("lw", [f"-B{shim}"])):
        _link(tmp_path, *b, "-O1", "m.c", "-o", who)
    rodata = {}
    for who in ("gnu", "lw"):
        sections = subprocess.run(["readelf", "-SW", who], cwd=tmp_path, capture_output=True, text=True).stdout
        rodata[who] = [line.split("] .rodata ")[1].split()[4] for line in sections.splitlines()
                       if "] .rodata " in line]          # PROGBITS address offset size ES
        lint = subprocess.run(["eu-elflint", "--gnu-ld", who], cwd=tmp_path, capture_output=True, text=True)
        assert lint.stdout.strip() == "No errors", (who, lint.stdout)
    assert rodata["lw"] == rodata["gnu"] == ["00"]
