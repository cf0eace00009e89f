""".eh_frame in one place: each input's records cut and rewritten without the FDEs of dropped
functions (for gc, which decides what lives), and .eh_frame_hdr, the sorted table (initial location
-> FDE) the unwinder searches, built from the output's .eh_frame.

Input: an input .eh_frame section, its object's symbols, the live set. Output: EhFrame records that
stand in for the input sections in Liveness.sections (symbols and relocations still name the
input; layout gives both the same address), and the EhFrameHdr synthetic section.
"""
import struct
from array import array
from bisect import bisect_left

from linkwrap.ld import elf
from linkwrap.ld.diag import Unsupported, warn
from linkwrap.ld.synthetic.base import _put, Synthetic


class EhFrame:
    """One input .eh_frame as the output gets it: the records kept, their relocations moved along.

    Stands in for `input` in Liveness.sections. Symbols and relocations still name
    `input`; layout gives both the same address.
    """
    __slots__ = ("input", "file", "name", "type", "flags", "size", "align", "entsize", "rela", "relocs",
                 "data", "group_sig", "fdes")

    def __init__(self, sec, data, relocs, fdes=None):
        self.input = sec
        self.file = sec.file
        self.name = sec.name
        self.type = sec.type
        self.flags = sec.flags
        self.entsize = sec.entsize
        self.rela = sec.rela
        self.group_sig = sec.group_sig
        self.data = data
        self.relocs = relocs
        # array('q') of each kept FDE's offset and its CIE's, in order (.eh_frame_hdr reads the FDEs
        # at these places instead of walking the records again); None: not known, walked
        self.fdes = fdes
        self.size = len(data)
        # Padding between .eh_frame pieces would read as a zero terminator to an
        # unwinder walking registered frames (static executables): records are 4-aligned.
        self.align = 4 if self.size % 4 == 0 else sec.align

    def bytes(self):
        return self.data

    def get_relocs(self):
        return self.relocs

    def __repr__(self):
        return f"{self.file.name}({self.name})"


class _Split:
    """An .eh_frame cut into records (gc's working data, not part of the result)."""
    __slots__ = ("data", "relocs", "records", "cies_relocs", "targets", "whole", "fdes")

    def __init__(self, data, relocs, records, cies_relocs, targets, whole, fdes):
        self.data = data
        self.relocs = relocs              # the section's relocations, sorted by offset
        # (offset, total length, is_cie, first and end index in relocs, described section); a
        # zero terminator counts as a CIE
        self.records = records
        self.cies_relocs = cies_relocs    # relocations of each CIE (personality routines)
        self.targets = targets            # the section each FDE describes (None: none)
        # the records fill the section, hold every relocation, and each FDE's CIE comes before it:
        # with every FDE kept, the rewrite would give the input back as it is
        self.whole = whole
        self.fdes = fdes                  # array('q'): each FDE's offset and its CIE's


def _count_fdes(sec) -> int:
    data = sec.bytes()
    n = len(data)
    off = count = 0
    unpack = elf.U32.unpack_from
    while off + 8 <= n:
        length = unpack(data, off)[0]
        if length == 0xFFFFFFFF:
            raise Unsupported(f"{sec}: 64-bit DWARF .eh_frame record")
        if length and unpack(data, off + 4)[0]:
            count += 1
        off += 4 + length
    return count


_TWO_WORDS = struct.Struct("<II")


def _split_eh_frame(sec, syms, fde_refs) -> _Split:
    """Cut .eh_frame into CIE and FDE records; note which section each FDE describes."""
    data = bytes(sec.bytes())
    relocs = sorted(sec.get_relocs())
    at = [r[0] for r in relocs]
    nrel = len(relocs)
    records = []
    append = records.append
    cies_relocs = []
    targets = []
    cies = set()     # offsets of the CIEs (and terminators) so far: what an FDE may point back to
    fdes = array("q")
    whole = True
    unpack = elf.U32.unpack_from
    unpack2 = _TWO_WORDS.unpack_from
    off = ri = 0
    n = len(data)
    while off + 4 <= n:
        if off + 8 <= n:
            length, cie_id = unpack2(data, off)     # one call for both words (~45k records)
        else:
            length = unpack(data, off)[0]
        if length == 0xFFFFFFFF:
            raise Unsupported(f"{sec}: 64-bit DWARF .eh_frame record")
        end = off + 4 + length
        if end > n:
            raise Unsupported(f"{sec}: .eh_frame record at {off} runs past the section end")
        r0 = ri
        ri = bisect_left(at, end, ri)
        if length == 0:
            append((off, 4, True, r0, ri, None))
            cies.add(off)
            off = end
            continue
        if off + 8 > n:
            cie_id = unpack(data, off + 4)[0]
        if cie_id == 0:
            cies_relocs.append(relocs[r0:ri])
            append((off, end - off, True, r0, ri, None))
            cies.add(off)
            off = end
            continue
        target = None
        if r0 < ri:
            pc = off + 8
            if at[r0] == pc:
                target = syms[relocs[r0][1] >> 32].section
            else:
                for k in range(r0, ri):
                    if at[k] == pc:
                        target = syms[relocs[k][1] >> 32].section
                        break
            if target is not None and ri - r0 > 1:
                # the LSDA (and anything else) the FDE points to lives as long as the function
                if ri - r0 == 2 and at[r0] == pc != at[r0 + 1]:     # the usual FDE: its function, its LSDA
                    t = syms[relocs[r0 + 1][1] >> 32].section
                    extra = () if t is None else (t,)
                else:
                    extra = tuple(t for t in [syms[r[1] >> 32].section for r in relocs[r0:ri] if r[0] != pc]
                                  if t is not None)
                fde_refs[target] = fde_refs.get(target, ()) + extra
        cie = off + 4 - cie_id
        if cie not in cies:
            whole = False
        fdes.append(off)
        fdes.append(cie)
        targets.append(target)
        append((off, end - off, False, r0, ri, target))
        off = end
    return _Split(data, relocs, records, cies_relocs, targets, whole and off == n and ri == nrel, fdes)


def _drop_dead_fdes(sec, split, alive):
    """-> (EhFrame without the FDEs of dead functions, FDEs kept)."""
    data = split.data
    relocs = split.relocs
    if split.whole and all(map(alive.__contains__, split.targets)):
        # every FDE kept (most inputs of a --gc-sections link): the records as they are
        return EhFrame(sec, data, relocs, split.fdes), len(split.targets)
    out = bytearray()
    new_relocs = []
    cie_map = {}
    fdes = array("q")
    kept = 0
    for off, total, is_cie, r0, r1, target in split.records:
        if not is_cie and (target is None or target not in alive):
            continue
        new_off = len(out)
        out += data[off:off + total]
        if is_cie:
            cie_map[off] = new_off
        else:
            old_cie = off + 4 - elf.U32.unpack_from(data, off + 4)[0]
            if old_cie not in cie_map:
                raise Unsupported(f"{sec}: FDE at {off} points to no CIE before it")
            elf.U32.pack_into(out, new_off + 4, new_off + 4 - cie_map[old_cie])
            fdes.append(new_off)
            fdes.append(cie_map[old_cie])
            kept += 1
        delta = new_off - off
        if delta:
            for r_off, info, add in relocs[r0:r1]:
                new_relocs.append((r_off + delta, info, add))
        else:
            new_relocs += relocs[r0:r1]
    return EhFrame(sec, bytes(out), new_relocs, fdes), kept


class EhFrameHdr(Synthetic):
    """.eh_frame_hdr: a sorted table (initial location -> FDE) for the unwinder's binary search."""
    align = 4

    def __init__(self, fde_count):
        super().__init__(".eh_frame_hdr")
        self.fde_count = fde_count

    def size(self):
        return 12 + 8 * self.fde_count

    def write_to(self, buf, lk):
        eh = lk.osec(".eh_frame")
        if all(getattr(m, "fdes", None) is not None for m in eh.members):
            entries = []
            for m, at in zip(eh.members, eh.offsets):
                entries += _known_fdes(buf, m, eh.offset + at, eh.addr + at)
        else:
            entries = _fde_table(buf, eh.offset, eh.addr, eh.size)
        # an FDE whose pointer encoding this linker does not read (None), or whose start is further
        # than 2 GiB from the table (its 32-bit field cannot say it), cannot be indexed. A table
        # without it would hide that FDE from the unwinder's binary search, so, as GNU ld does, no
        # table is made (fde_count 0, table encoding omit): the unwinder then walks .eh_frame.
        # Likewise when more FDEs are found than layout counted.
        hdr = lk.addr_of[self]
        unindexed = sum(1 for e in entries if e[0] is None or not -(1 << 31) <= e[0] - hdr < (1 << 31))
        if unindexed:
            warn(f".eh_frame_hdr: {unindexed} FDE(s) this linker cannot index; no table created")
            entries = []
        elif len(entries) > self.fde_count:
            warn(f".eh_frame_hdr: found {len(entries)} FDEs where {self.fde_count} were counted; no table created")
            entries = []
        entries.sort()
        table_enc = 0x3B if entries else 0xFF
        out = bytearray(struct.pack("<BBBBiI", 1, 0x1B, 0x03, table_enc, eh.addr - (hdr + 4), len(entries)))
        # one pack for the whole table: a Rust debug link has ~45k FDEs
        out += struct.pack(f"<{2 * len(entries)}i", *[v - hdr for e in entries for v in e])
        out += bytes(self.size() - len(out))      # the slots of what was left out: zeros past fde_count
        return _put(buf, lk.offset_of(self), out)


# DW_EH_PE value formats (low nibble) -> (struct format, size): absptr, udata2/4/8, sdata2/4/8.


_EH_PE_FORMATS = {0x00: ("<Q", 8), 0x02: ("<H", 2), 0x03: ("<I", 4), 0x04: ("<Q", 8),
                  0x0A: ("<h", 2), 0x0B: ("<i", 4), 0x0C: ("<q", 8)}


def _read_encoded(buf, pos, enc, addr_of_pos):
    """A DW_EH_PE-encoded pointer at buf[pos] -> (value, size)."""
    layout = None if enc is None else _EH_PE_FORMATS.get(enc & 0x0F)
    if layout is None or enc & 0x70 not in (0x00, 0x10):
        # a format or application this linker has no need to rewrite (the bytes stay as they are):
        # the pointer cannot be read, so the FDE is not indexed (the caller's None)
        return None, None
    v, n = struct.unpack_from(layout[0], buf, pos)[0], layout[1]
    if enc & 0x70 == 0x10:
        v += addr_of_pos
    return v & 0xFFFFFFFFFFFFFFFF, n


def _uleb(buf, pos):
    v = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, pos


def _known_fdes(buf, frame, off, addr):
    """(initial location, FDE address) for the FDEs gc kept in one EhFrame, placed at off/addr: read
    where they are (frame.fdes), each CIE's pointer encoding parsed once from the frame's bytes."""
    entries = []
    append = entries.append
    data = frame.data
    fdes = frame.fdes
    enc_of = {}
    i32 = elf.I32.unpack_from
    for k in range(0, len(fdes), 2):
        f, c = fdes[k], fdes[k + 1]
        enc = enc_of.get(c)
        if enc is None:
            # a zero terminator an FDE points back to reads as absptr, as _fde_table's walk has it
            enc = enc_of[c] = _cie_encoding(data, c) if elf.U32.unpack_from(data, c)[0] else 0
        if enc == 0x1B:      # pcrel | sdata4, what GCC and rustc emit: _read_encoded's answer inline
            pc = (i32(buf, off + f + 8)[0] + addr + f + 8) & 0xFFFFFFFFFFFFFFFF
        else:
            pc, _ = _read_encoded(buf, off + f + 8, enc, addr + f + 8)
        append((pc, addr + f))
    return entries


def _cie_encoding(buf, pos):
    """The FDE pointer encoding (augmentation R) of the CIE at buf[pos]; 0 (absptr) without one."""
    p = pos + 9
    aug_end = buf.index(0, p)
    aug = bytes(buf[p:aug_end]).decode("latin-1")
    p = aug_end + 1
    _, p = _uleb(buf, p)              # code alignment
    _, p = _uleb(buf, p)              # data alignment (sleb, skipping works the same)
    p += 1                            # return address register (version 1: one byte)
    enc = 0
    if aug.startswith("z"):
        _, p = _uleb(buf, p)
        for c in aug[1:]:
            if c == "R":
                enc = buf[p]
                p += 1
            elif c == "P":
                penc = buf[p]
                _, n = _read_encoded(buf, p + 1, penc, 0)
                if n is None:
                    return None       # what follows cannot be found: the FDE encoding is unknown
                p += 1 + n
            elif c == "L":
                p += 1
    return enc


def _fde_table(buf, off, addr, size):
    """(initial location, FDE address) for every FDE of the output .eh_frame."""
    entries = []
    append = entries.append
    cie_enc = {}
    pos = off
    end = off + size
    u32 = elf.U32.unpack_from
    i32 = elf.I32.unpack_from
    while pos + 4 <= end:
        length = u32(buf, pos)[0]
        if length == 0:
            pos += 4
            continue
        cid = u32(buf, pos + 4)[0]
        if cid == 0:
            cie_enc[pos] = _cie_encoding(buf, pos)
        else:
            cie = pos + 4 - cid
            enc = cie_enc.get(cie, 0)
            if enc == 0x1B:      # pcrel | sdata4, what GCC and rustc emit: _read_encoded's answer inline
                pc = (i32(buf, pos + 8)[0] + addr + (pos + 8 - off)) & 0xFFFFFFFFFFFFFFFF
            else:
                pc, _ = _read_encoded(buf, pos + 8, enc, addr + (pos + 8 - off))
            append((pc, addr + (pos - off)))
        pos += 4 + length
    return entries
