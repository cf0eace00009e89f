"""eh_frame: .eh_frame_hdr's table lists every FDE of the output .eh_frame, as readelf reads them.

gc cuts each input's .eh_frame into records and drops the FDEs of dead functions; .eh_frame_hdr is
then read at the FDEs it kept (their offsets noted at the cut), or by walking the output's records
when the frames were taken whole (no --gc-sections). Either way, the table must hold one entry per
FDE readelf finds in the output (its initial location and address), sorted, and the program must
still unwind (it throws through the kept functions).
"""
import re
import struct
import subprocess

import pytest

from . import corpus

# functions gc drops (never called) between the ones that throw: their FDEs go, the rest move
SOURCE = r"""
#include <cstdio>
#include <stdexcept>
__attribute__((noinline)) int thrower(int x) { if (x > 2) throw std::runtime_error("big"); return x; }
__attribute__((noinline)) int dead_a(int x) { try { return thrower(x); } catch (...) { return -1; } }
__attribute__((noinline)) int middle(int x) { return thrower(x) + 1; }
__attribute__((noinline)) int dead_b(int x) { return x > 0 ? dead_a(x) : 0; }
int main() {
    int caught = 0;
    for (int i = 0; i < 5; i++) {
        try { middle(i); } catch (const std::exception &e) { caught++; }
    }
    std::printf("caught %d\n", caught);
    return 0;
}
"""


def section(path, name):
    """-> (address, bytes) of a section of an ELF file."""
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True, check=True).stdout
    m = re.search(r"\]\s+" + re.escape(name) + r"\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", out)
    assert m, f"no {name} in {path}"
    addr, off, size = (int(g, 16) for g in m.groups())
    with open(path, "rb") as f:
        f.seek(off)
        return addr, f.read(size)


def readelf_fdes(path, eh_addr):
    """-> sorted [(initial location, FDE address)] of every FDE readelf finds in .eh_frame."""
    out = subprocess.run(["readelf", "--debug-dump=frames", path], capture_output=True, text=True,
                         check=True).stdout
    return sorted((int(pc, 16), eh_addr + int(off, 16))
                  for off, pc in re.findall(r"^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.",
                                            out, re.M))


def hdr_table(path):
    hdr_addr, hdr = section(path, ".eh_frame_hdr")
    version, ptr_enc, count_enc, table_enc, _, count = struct.unpack_from("<BBBBiI", hdr)
    assert (version, ptr_enc, count_enc, table_enc) == (1, 0x1B, 0x03, 0x3B)
    assert len(hdr) == 12 + 8 * count
    return [(hdr_addr + a, hdr_addr + b) for a, b in struct.iter_unpack("<ii", hdr[12:])]


@pytest.mark.parametrize("mode", ["pie", "static"])
def test_eh_frame_hdr_lists_every_fde_readelf_finds(tmp_path, mode):
    (tmp_path / "t.cpp").write_text(SOURCE)
    subprocess.run(["g++", "-O1", "-ffunction-sections", "-c", "t.cpp", "-o", "t.o"], cwd=tmp_path, check=True)
    shim = corpus.shim_dir(str(tmp_path))
    tables = {}
    for gc in (False, True):
        out = str(tmp_path / f"t-{gc}")
        gc_flags = ["-Wl,--gc-sections"] if gc else []
        subprocess.run(["g++", f"-B{shim}", *corpus.MODES[mode], "t.o", "-Wl,--eh-frame-hdr", *gc_flags,
                        "-o", out], cwd=tmp_path, check=True)
        eh_addr, _ = section(out, ".eh_frame")
        table = tables[gc] = hdr_table(out)
        assert table == sorted(table)
        assert table == readelf_fdes(out, eh_addr)
        assert subprocess.run([out], capture_output=True, text=True).stdout == "caught 2\n"
        syms = subprocess.run(["nm", out], capture_output=True, text=True, check=True).stdout
        assert ("dead_a" in syms) == (not gc)
    # the collected link lost the dead functions' FDEs (and, static, libc's unused ones)
    assert 4 <= len(tables[True]) < len(tables[False])
