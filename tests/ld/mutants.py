"""Mutation fuzzing of real gcc/g++ objects through the compiler driver's own link line.

Three small programs (a hello, one with a static function and a global, a C++ one that throws and
catches) are compiled once; the driver's ld command line is captured once per program (a -B shim
whose `ld` writes its arguments). Each mutant changes 1-4 bytes of one object, at a random offset
or aimed at the section headers, .eh_frame, the symbol table or the relocations, and is linked by
GNU ld and by linkwrap.ld (in process) with that same line. The class of each result:
  both-fail     both refuse it
  refusal       GNU ld links it, linkwrap.ld names why not on one line (linkwrap falls back: fine)
  same          both link, the two programs exit alike and print the same
  differ        both link, the programs behave differently (a bug, but see same_or_differ)
  internal      linkwrap.ld said "internal error" or printed a traceback (a bug)
  linked-bad    linkwrap.ld linked what GNU ld refuses (a bug)
"""
import contextlib
import io
import os
import random
import struct
import subprocess

HELLO_C = '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n'
STATIC_C = r"""#include <stdio.h>
int counter = 40;
static int twice(int v) { return v * 2; }
int main(void) { counter = twice(counter) + 2; printf("%d\n", counter); return counter & 7; }
"""
THROW_CPP = r"""#include <cstdio>
#include <stdexcept>
static void thrower(int v) { if (v > 1) throw std::runtime_error("boom"); }
int main(int argc, char **) {
    try { thrower(argc + 1); } catch (const std::exception &e) { std::printf("caught %s\n", e.what()); return 3; }
    return 0;
}
"""
PROGRAMS = {"hello": ("gcc", "c", HELLO_C), "static": ("gcc", "c", STATIC_C), "throw": ("g++", "cpp", THROW_CPP)}
BUGS = ("internal", "linked-bad", "differ")
CLASSES = ("both-fail", "refusal", "same") + BUGS
_RECORD = '#!/bin/sh\nfor a in "$@"; do printf "%s\\0" "$a"; done > "$LW_FUZZ_ARGS"\n'


def build(work):
    """Compile the programs under work -> {name: (object bytes, ld argv with the object as {OBJ})}."""
    shim = os.path.join(work, "record-shim")
    os.makedirs(shim, exist_ok=True)
    for ld in ("ld", "ld.bfd"):       # what gcc -B runs, with and without -fuse-ld=bfd
        with open(os.path.join(shim, ld), "w") as f:
            f.write(_RECORD)
        os.chmod(os.path.join(shim, ld), 0o755)
    out = {}
    for name, (cc, ext, text) in PROGRAMS.items():
        src, obj = os.path.join(work, f"{name}.{ext}"), os.path.join(work, f"{name}.o")
        with open(src, "w") as f:
            f.write(text)
        subprocess.run([cc, "-O1", "-c", src, "-o", obj], check=True)
        args_file = os.path.join(work, f"{name}.args")
        subprocess.run([cc, "-fuse-ld=bfd", f"-B{shim}", obj, "-o", os.path.join(work, "unused")], check=True,
                       env={**os.environ, "LW_FUZZ_ARGS": args_file})
        with open(args_file, "rb") as f:
            argv = f.read().decode().split("\0")[:-1]
        # the LTO plugin's options name a temporary file gone with that run; neither linker needs them
        plugin = {k + 1 for k, a in enumerate(argv) if a == "-plugin"}
        argv = [a for k, a in enumerate(argv)
                if k not in plugin and not a.startswith("-plugin") and a != f"-L{shim}"]
        with open(obj, "rb") as f:
            out[name] = (f.read(), ["{OBJ}" if a == obj else a for a in argv])
    return out


def _sections(data):
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", data, 0x3C)
    heads = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * k) for k in range(shnum)]
    stroff = heads[shstrndx][4]
    named = []
    for h in heads:
        name = data[stroff + h[0]:data.index(b"\0", stroff + h[0])].decode()
        named.append((name, h[1], h[4], h[5]))
    return shoff, shnum, named


def regions(data):
    """{target: [(lo, hi)]}: byte ranges for each kind of aimed mutation."""
    shoff, shnum, named = _sections(data)
    pick = lambda test: [(off, off + size) for name, t, off, size in named if size and test(name, t)]
    return {"any": [(0, len(data))], "headers": [(0, 64), (shoff, shoff + 64 * shnum)],
            "eh_frame": pick(lambda n, t: n == ".eh_frame"), "symtab": pick(lambda n, t: t == 2),
            "rela": pick(lambda n, t: t == 4)}


def mutate(data, spots, rng):
    """-> (mutant bytes, what was aimed at)."""
    target = rng.choice([t for t in sorted(spots) if spots[t]])
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        lo, hi = rng.choice(spots[target])
        i = rng.randrange(lo, hi)
        b[i] = rng.randrange(256) if rng.random() < 0.5 else b[i] ^ (1 << rng.randrange(8))
    return bytes(b), target


def _behaviour(path):
    try:
        r = subprocess.run([path], capture_output=True, timeout=5, stdin=subprocess.DEVNULL)
        return r.returncode, r.stdout
    except subprocess.TimeoutExpired:
        return "timeout", b""
    except OSError as e:
        return "exec error", e.errno


def ours(argv):
    from linkwrap.ld.__main__ import run
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = run(argv)
    return rc, err.getvalue()


def classify(work, obj_bytes, argv):
    """Link one mutant both ways -> (class, detail)."""
    obj = os.path.join(work, "m.o")
    with open(obj, "wb") as f:
        f.write(obj_bytes)
    ref, out = os.path.join(work, "ref"), os.path.join(work, "out")
    for p in (ref, out):
        if os.path.exists(p):
            os.unlink(p)
    line = [obj if a == "{OBJ}" else a for a in argv[1:]]
    line[line.index("-o") + 1] = ref
    gnu = subprocess.run(["ld", *line], capture_output=True, text=True, errors="replace")
    line[line.index("-o") + 1] = out
    rc, err = ours(line)
    detail = f"GNU ld {gnu.returncode} {gnu.stderr.strip()[:160]!r}; linkwrap.ld {rc} {err.strip()[:300]!r}"
    errors = [ln for ln in err.splitlines() if ": warning: " not in ln]
    if "internal error" in err or "Traceback" in err or (rc and not errors):
        return "internal", detail
    if rc:
        return ("both-fail" if gnu.returncode else "refusal"), detail
    if gnu.returncode:
        return "linked-bad", detail
    return ("same" if _behaviour(ref) == _behaviour(out) else "differ"), detail


def run_mutants(work, programs, count, seed):
    """-> ({class: n}, [(class, program, target, detail) for each bug])."""
    rng = random.Random(seed)
    spots = {n: regions(data) for n, (data, _) in programs.items()}
    counts = dict.fromkeys(CLASSES, 0)
    bugs = []
    for _ in range(count):
        name = rng.choice(sorted(programs))
        data, argv = programs[name]
        mutant, target = mutate(data, spots[name], rng)
        what, detail = classify(work, mutant, argv)
        counts[what] += 1
        if what in BUGS:
            bugs.append((what, name, target, detail))
    return counts, bugs
