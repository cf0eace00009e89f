"""synthetic/dynamic.py: copy relocations land where GNU ld (>= 2.38) puts them. The copy of data
the library keeps read-only (a read-only section, or its PT_GNU_RELRO) goes in .data.rel.ro, inside
the executable's PT_GNU_RELRO, so a write to it faults as the library's own would; writable data's
copy stays in .bss. Checked against GNU ld's output of the same objects: readelf's facts, the
program's output, and a write to each copy (signal or not)."""
import re
import signal
import subprocess

from .. import corpus

LIB = """const int x = 5;
int y = 7;
int *const p = &y;
int w = 9;
const char msg[] = "hello";
"""

MAIN = r"""#include <stdio.h>
#include <string.h>
extern const int x;
extern int *const p;
extern int w;
extern const char msg[];
int main(int argc, char **argv) {
    printf("%d %d %d %s\n", x, *p, w, msg);
    fflush(stdout);
    if (argc > 1) {
        if (!strcmp(argv[1], "x")) *(volatile int *)&x = 1;
        if (!strcmp(argv[1], "p")) *(int *volatile *)&p = 0;
        if (!strcmp(argv[1], "msg")) *(volatile char *)msg = 'j';
        if (!strcmp(argv[1], "w")) w = 1;
        printf("wrote %s\n", argv[1]);
    }
    return 0;
}
"""


def _readelf(path, flag):
    return subprocess.run(["readelf", "-W", flag, str(path)], capture_output=True, text=True, check=True).stdout


def _facts(path):
    """-> ({copied symbol: the name of the section its copy is in}, {those inside PT_GNU_RELRO})."""
    secs = {int(n): name for n, name in re.findall(r"^\s*\[\s*(\d+)\]\s(\S+)", _readelf(path, "-S"), re.M)}
    relro = re.search(r"GNU_RELRO\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)",
                      _readelf(path, "-l"))
    lo, size = int(relro.group(1), 16), int(relro.group(2), 16)
    copies = {}
    for addr, name in re.findall(r"^([0-9a-f]+)\s+\S+\s+R_X86_64_COPY\s+\S+\s+(\S+)", _readelf(path, "-r"), re.M):
        copies[name] = int(addr, 16)
    where = {}
    for line in _readelf(path, "--dyn-syms").splitlines():
        f = line.split()
        if len(f) == 8 and f[7] in copies:
            where[f[7]] = secs[int(f[6])]
    inside = {n for n, a in copies.items() if lo <= a < lo + size}
    return where, inside


def test_copies_of_read_only_data_are_read_only(tmp_path):
    (tmp_path / "lib.c").write_text(LIB)
    (tmp_path / "main.c").write_text(MAIN)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "lib.c", "-o", "libl.so"], cwd=tmp_path, check=True)
    subprocess.run(["gcc", "-O1", "-fno-pic", "-c", "main.c"], cwd=tmp_path, check=True)
    shim = corpus.shim_dir(str(tmp_path))
    outs = {}
    for who, extra in (("gnu", []), ("lw", [f"-B{shim}"])):
        r = subprocess.run(["gcc", *extra, "-no-pie", "main.o", "-L.", "-ll", "-Wl,-rpath,.", "-o", who],
                           cwd=tmp_path, capture_output=True, text=True)
        assert r.returncode == 0 and r.stderr == "", r.stderr
        outs[who] = tmp_path / who
    gnu, lw = _facts(outs["gnu"]), _facts(outs["lw"])
    assert gnu == ({"x": ".data.rel.ro", "p": ".data.rel.ro", "msg": ".data.rel.ro", "w": ".bss"},
                   {"x", "p", "msg"}), gnu   # what GNU ld does, so what is compared means something
    assert lw == gnu
    for who, exe in outs.items():
        run = subprocess.run([str(exe)], capture_output=True, text=True, cwd=tmp_path)
        assert (run.returncode, run.stdout) == (0, "5 7 9 hello\n"), who
        for name in ("x", "p", "msg", "w"):
            run = subprocess.run([str(exe), name], capture_output=True, text=True, cwd=tmp_path)
            if name == "w":
                assert (run.returncode, run.stdout) == (0, "5 7 9 hello\nwrote w\n"), who
            else:
                assert run.returncode == -signal.SIGSEGV and run.stdout == "5 7 9 hello\n", (who, name)
