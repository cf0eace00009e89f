"""Seeded fuzzing of linker inputs: mutated objects never crash linkwrap.ld nor link wrongly.

A small static program (two objects, relocations, data, a string, .eh_frame) is linked by GNU
ld and by linkwrap.ld (in process) after a few bytes of one object are changed, a few hundred
times with a fixed seed. Each result must be either a clean error (lines of `linkwrap-ld: ...`,
no internal error, no traceback) or an output whose program behaves exactly as GNU ld's output
accepts too, and its output is well formed (readelf reads it without a complaint) and starts.
An input GNU ld rejects is never linked. (Whether both programs then behave alike is no oracle:
a changed addend or symbol value reads whatever the two layouts put there.)
"""
import contextlib
import io
import os
import random
import struct
import subprocess

import pytest

from linkwrap.ld.__main__ import run as ld_main

A_C = r"""
extern int table[];
int add(int, int);
static const char msg[] = "fuzz ok\n";
int counter = 3;
void _start(void) {
    int v = add(counter, table[1]);
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(1), "D"(1), "S"(msg), "d"(8) : "rcx", "r11", "memory");
    __asm__ volatile("syscall" : : "a"(60), "D"(v));
    __builtin_unreachable();
}
"""
B_C = "int table[] = {1, 2, 3};\nint add(int a, int b) { return a + b; }\n"
MUTANTS = 300


def regions(data):
    """Byte ranges worth mutating: ELF header, section headers, symbol table, relocations."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, = struct.unpack_from("<H", data, 0x3C)
    out = [(0, 64), (shoff, shoff + 64 * shnum)]
    for k in range(shnum):
        _, stype, _, _, off, size, *_ = struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * k)
        if stype in (2, 4) and size:      # SHT_SYMTAB, SHT_RELA
            out.append((off, off + size))
    return out


def mutate(data, rng):
    b = bytearray(data)
    spots = regions(data)
    for _ in range(rng.randint(1, 3)):
        lo, hi = rng.choice(spots)
        i = rng.randrange(lo, hi)
        b[i] = rng.randrange(256) if rng.random() < 0.5 else b[i] ^ (1 << rng.randrange(8))
    return bytes(b)


def well_formed(path):
    r = subprocess.run(["readelf", "-hlSdrW", path], capture_output=True, text=True, errors="replace")
    return r.returncode == 0 and "Warning" not in r.stderr and "Error" not in r.stderr


def program_result(path):
    try:
        r = subprocess.run([path], capture_output=True, timeout=5)
        return r.returncode, r.stdout
    except subprocess.TimeoutExpired:
        return "timeout", b""
    except OSError as e:              # the kernel refuses to exec it
        return "exec error", e.errno


def our_link(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = ld_main(argv)
    return rc, err.getvalue()


@pytest.fixture(scope="module")
def objects(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz")
    (d / "a.c").write_text(A_C)
    (d / "b.c").write_text(B_C)
    subprocess.run(["gcc", "-O1", "-fno-pic", "-c", "a.c", "b.c"], cwd=d, check=True)
    return d


def test_unmutated_inputs_link_and_run(objects):
    d = str(objects)
    rc, err = our_link(["-static", "-o", os.path.join(d, "lw"), os.path.join(d, "a.o"), os.path.join(d, "b.o")])
    assert (rc, err) == (0, "")
    assert program_result(os.path.join(d, "lw")) == (5, b"fuzz ok\n")


def test_mutated_objects_give_a_clean_error_or_the_same_program(objects):
    d = str(objects)
    rng = random.Random(18)
    originals = {n: (objects / n).read_bytes() for n in ("a.o", "b.o")}
    counts = {"error": 0, "linked": 0}
    for k in range(MUTANTS):
        name = rng.choice(sorted(originals))
        mutant = os.path.join(d, "m.o")
        with open(mutant, "wb") as f:
            f.write(mutate(originals[name], rng))
        inputs = [mutant if n == name else os.path.join(d, n) for n in ("a.o", "b.o")]
        ref, out = os.path.join(d, "ref"), os.path.join(d, "out")
        for p in (ref, out):
            if os.path.exists(p):
                os.unlink(p)
        gnu = subprocess.run(["ld", "-static", "-o", ref, *inputs], capture_output=True, text=True,
                             errors="replace")
        rc, err = our_link(["-static", "-o", out, *inputs])
        lines = err.splitlines()
        what = f"mutant {k} of {name}: GNU ld {gnu.returncode} {gnu.stderr.strip()[:200]!r}; ours {rc} {err!r}"
        assert "internal error" not in err and "Traceback" not in err, what
        if rc:
            assert lines and all(line.startswith("linkwrap-ld: ") for line in lines), what
            assert not os.path.exists(out), what
            counts["error"] += 1
            continue
        if gnu.returncode < 0:
            continue          # GNU ld itself crashed on it: no verdict to compare with
        assert gnu.returncode == 0, "linked what GNU ld rejects: " + what
        assert well_formed(out), what
        assert program_result(out)[0] != "exec error", what
        counts["linked"] += 1
    # the corpus exercises both outcomes, or it tests little
    assert counts["error"] > MUTANTS // 10 and counts["linked"] > MUTANTS // 10, counts
