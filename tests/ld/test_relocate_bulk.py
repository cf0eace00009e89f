"""relocate_bulk: the bulk path writes exactly the bytes the per-relocation path writes.

LINKWRAP_LD_RELOCS=python forces the per-relocation loop for every section, =bulk the
numpy path for every non-alloc one. The two outputs of each link are compared byte for
byte: a real Rust debug link of the generated project (millions of .debug_* relocations
into the merged .debug_str, --gc-sections, COMDAT), every C corpus case with -g (with and
without --gc-sections), and hand-written debug sections the bulk path must hand back to the
loop (R_X86_64_16, an overflowing R_X86_64_32, a merged-string reference by a named symbol).
"""
import os
import re
import subprocess
import sys

import pytest

from . import corpus



def env(mode):
    return {**os.environ, "LINKWRAP_LD_RELOCS": mode}


def stats_of(stderr):
    """--stats lines -> {'bulk': n, 'one_by_one': n, 'non_loaded': n}."""
    m = re.search(r"relocations: ([\d,]+) \(([\d,]+) in loaded sections, ([\d,]+) in debug and other "
                  r"non-loaded ones\); applied ([\d,]+) in bulk, ([\d,]+) one by one", stderr)
    assert m, stderr
    total, loaded, other, bulk, loop = (int(g.replace(",", "")) for g in m.groups())
    assert total == loaded + other == bulk + loop
    by_type = re.search(r"relocations by type: (.*)", stderr).group(1)
    assert sum(int(n.replace(",", "")) for n in re.findall(r" ([\d,]+)(?:,|$)", by_type)) == total
    return {"bulk": bulk, "one_by_one": loop, "non_loaded": other}


@pytest.fixture(scope="module")
def rust_debug(tmp_path_factory):
    return corpus.rust_debug_link(tmp_path_factory.mktemp("rust"))


def test_rust_debug_link_bulk_and_loop_write_the_same_bytes(rust_debug):
    root, argv, link_env, cwd = rust_debug
    shim = corpus.shim_dir(str(root))
    outputs, stats = {}, {}
    for mode in ("python", "bulk"):
        out = str(root / f"lw-{mode}")
        r = subprocess.run(["cc", f"-B{shim}", *argv, "-o", out, "-Wl,--stats"], cwd=cwd,
                           env={**link_env, "LINKWRAP_LD_RELOCS": mode}, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        stats[mode] = stats_of(r.stderr)
        with open(out, "rb") as f:
            outputs[mode] = f.read()
    assert stats["python"]["bulk"] == 0
    # loaded sections' relocations too: all but the few the bulk path leaves to the loop (TLS sequences)
    assert stats["bulk"]["bulk"] > stats["bulk"]["non_loaded"] > 100_000
    assert stats["bulk"]["one_by_one"] * 100 < stats["bulk"]["bulk"]
    assert outputs["python"] == outputs["bulk"]
    ref = str(root / "gnu")
    subprocess.run(["cc", *argv, "-o", ref], cwd=cwd, env=link_env, check=True)
    want = subprocess.run([ref], capture_output=True, text=True, check=True).stdout
    assert want.startswith("checksum ")
    assert subprocess.run([str(root / "lw-bulk")], capture_output=True, text=True).stdout == want


@pytest.mark.parametrize("case", corpus.CASES)
def test_c_corpus_bulk_and_loop_write_the_same_bytes(case, tmp_path):
    driver, objs, archive = corpus.compile_case(case, str(tmp_path))
    shim = corpus.shim_dir(str(tmp_path))
    for mode, extra in (("pie", ()), ("static", ("-Wl,--gc-sections",))):
        outputs = []
        for relocs in ("python", "bulk"):
            out = str(tmp_path / f"{mode}-{relocs}")
            cmd = [driver, f"-B{shim}", *corpus.MODES[mode], *objs, *([archive] if archive else []),
                   "-pthread", "-o", out, *extra]
            r = subprocess.run(cmd, capture_output=True, text=True, env=env(relocs))
            assert r.returncode == 0, r.stderr
            with open(out, "rb") as f:
                outputs.append(f.read())
        assert outputs[0] == outputs[1], f"{case} {mode}"


# Debug sections the bulk path gives back to the loop, and a string reference by a named symbol.
ODD_DEBUG = r"""
    .text
    .globl main
main:
    xor %eax, %eax
    ret
    .section .debug_str,"MS",@progbits,1
str_a:
    .asciz "alpha"
str_b:
    .asciz "beta"
    .section .debug_odd,"",@progbits
    .value small
    .long str_b
    .long .debug_str + 6
    .quad main + 3
    .section .note.GNU-stack,"",@progbits
"""


SMALL = "-Wl,--defsym=small=0x1234"      # defined at link time: the .value stays a relocation


def test_odd_debug_relocations_match_and_overflow_reports_the_same_line(tmp_path):
    (tmp_path / "odd.s").write_text(ODD_DEBUG)
    # the overflow in a section of its own: the bulk path finds it, the loop names it
    (tmp_path / "far.s").write_text(ODD_DEBUG + '    .section .debug_far,"",@progbits\n    .long far\n')
    for name in ("odd", "far"):
        subprocess.run(["as", f"{name}.s", "-o", f"{name}.o"], cwd=tmp_path, check=True)
    shim = corpus.shim_dir(str(tmp_path))
    outputs, errors = [], []
    for relocs in ("python", "bulk"):
        out = str(tmp_path / f"odd-{relocs}")
        r = subprocess.run(["gcc", f"-B{shim}", "-no-pie", "odd.o", SMALL, "-o", out, "-Wl,--stats"],
                           cwd=tmp_path, capture_output=True, text=True, env=env(relocs))
        assert r.returncode == 0, r.stderr
        st = stats_of(r.stderr)
        assert st["one_by_one"] >= st["non_loaded"] > 0      # R_X86_64_16: .debug_odd goes to the loop whole
        assert ("(1 non-loaded sections the bulk path left to the loop)" in r.stderr) == (relocs == "bulk")
        with open(out, "rb") as f:
            outputs.append(f.read())
        r = subprocess.run(["gcc", f"-B{shim}", "-no-pie", "far.o", SMALL, "-Wl,--defsym=far=0x123456789",
                            "-o", str(tmp_path / "far")], cwd=tmp_path,
                           capture_output=True, text=True, env=env(relocs))
        assert r.returncode == 1
        errors.append(r.stderr)
    assert outputs[0] == outputs[1]
    assert errors[0] == errors[1]
    assert "relocation truncated to fit: R_X86_64_32 against `far'" in errors[1]
    ref = str(tmp_path / "ref")
    subprocess.run(["gcc", "-no-pie", "odd.o", SMALL, "-o", ref], cwd=tmp_path, check=True)
    # the 16-bit value and both string offsets are GNU ld's (main's address depends on the layout)
    assert section_bytes(str(tmp_path / "odd-bulk"), ".debug_odd")[:10] == section_bytes(ref, ".debug_odd")[:10]


def section_bytes(path, name):
    dump = subprocess.run(["readelf", "-x", name, path], capture_output=True, text=True, check=True).stdout
    words = [w for line in dump.splitlines() if line.startswith("  0x") for w in line.split()[1:5]
             if re.fullmatch(r"[0-9a-f]{2,8}", w)]
    return bytes.fromhex("".join(words))


def test_numpy_is_imported_only_by_a_link_with_enough_debug_relocations(tmp_path, rust_debug):
    """Below relocate_bulk.MIN_RELOCS the import (~75 ms) would cost more than it saves."""
    shim = tmp_path / "shim"
    shim.mkdir()
    mark = tmp_path / "numpy-imported"
    (shim / "ld").write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import sys; from linkwrap.ld.__main__ import run; "
                             f"r = run(sys.argv[1:]); open(\"{mark}\", \"w\").write(str(\"numpy\" in sys.modules)); "
                             f"sys.exit(r)' \"$@\"\n")
    (shim / "ld").chmod(0o755)
    driver, objs, archive = corpus.compile_case("cxx_exceptions", str(tmp_path))
    r = subprocess.run([driver, f"-B{shim}", *objs, "-o", str(tmp_path / "small")], capture_output=True, text=True,
                       env=env("auto"))
    assert r.returncode == 0, r.stderr
    assert mark.read_text() == "False"
    root, argv, link_env, cwd = rust_debug
    r = subprocess.run(["cc", f"-B{shim}", *argv, "-o", str(tmp_path / "big")], cwd=cwd, capture_output=True,
                       text=True, env={**link_env, "LINKWRAP_LD_RELOCS": "auto"})
    assert r.returncode == 0, r.stderr
    assert mark.read_text() == "True"


@pytest.mark.parametrize("case", ["errno_threads", "ifunc", "weak_undef", "gc_sections", "ctors"])
def test_shared_object_bulk_and_loop_write_the_same_bytes(case, tmp_path):
    """-shared: debug relocations against exported (preemptible) symbols, IFUNCs, weak undefined ones."""
    objs = []
    src = os.path.join(corpus.CASES_DIR, case)
    for name in sorted(os.listdir(src)):
        if name.endswith(".c"):
            obj = str(tmp_path / f"{name[:-2]}.o")
            subprocess.run(["gcc", "-O1", "-g", "-fPIC", "-c", os.path.join(src, name), "-o", obj], check=True)
            objs.append(obj)
    shim = corpus.shim_dir(str(tmp_path))
    outputs = []
    for relocs in ("python", "bulk"):
        r = subprocess.run(["gcc", f"-B{shim}", "-shared", *objs, "-pthread", "-o", str(tmp_path / "libt.so"),
                            "-Wl,--stats"], capture_output=True, text=True, env=env(relocs))
        assert r.returncode == 0, r.stderr
        assert (stats_of(r.stderr)["bulk"] > 0) == (relocs == "bulk")
        outputs.append((tmp_path / "libt.so").read_bytes())
    assert outputs[0] == outputs[1]
