"""GC: Resolution -> Liveness. Marks the sections that are kept; splits .eh_frame into records.

This file implements a mark-sweep garbage collector for --gc-sections. The
vertices are sections and the edges are relocations. Roots are the entry
symbol, init/fini arrays, .init/.fini, notes, SHF_GNU_RETAIN sections,
sections that __start_/__stop_ symbols name, and symbols shared libraries may
look up. .eh_frame is not a root and its relocations are not edges: an FDE
keeps its LSDA alive only when the function it describes is alive.

Without --gc-sections every section is kept except COMDAT duplicates. In both
cases each .eh_frame is then rewritten without the FDEs of dropped functions
(their CIE pointers adjusted), which is what lets .eh_frame_hdr be exact.
"""
from dataclasses import dataclass

from linkwrap.ld import elf
from linkwrap.ld.diag import Unsupported


@dataclass(frozen=True)
class Liveness:
    sections: tuple           # live InputSections (ALLOC and not), in input order
    eh_frames: tuple          # the live .eh_frame InputSections, already rewritten
    fde_count: int            # FDEs kept in all of them (sizes .eh_frame_hdr)
    removed: tuple            # sections dropped by --gc-sections (for --print-gc-sections)


_ROOT_PREFIXES = (".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors", ".jcr", ".note")


def _is_c_ident(name):
    return name.replace("_", "a").isalnum() and not name[0].isdigit()


def mark_live(opts, res, diag) -> Liveness:
    objects = res.objects
    eh = []
    split = []
    fde_count = 0
    for obj in objects:
        # Only objects that lost sections (COMDAT duplicates, or any with --gc-sections) need
        # their .eh_frame cut into records and rewritten; the others are just counted.
        whole = not opts.gc_sections and all(s is None or s.live for s in obj.sections)
        for sec in obj.sections:
            if sec is not None and sec.live and sec.name == ".eh_frame":
                eh.append(sec)
                if whole:
                    fde_count += _count_fdes(sec)
                else:
                    _split_eh_frame(sec)
                    split.append(sec)
    removed = ()
    if opts.gc_sections:
        removed = _collect(opts, res)
    for sec in split:
        fde_count += _drop_dead_fdes(sec)
    live = tuple(s for obj in objects for s in obj.sections if s is not None and s.live)
    return Liveness(live, tuple(eh), fde_count, removed)


def _collect(opts, res):
    symtab = res.symtab
    work = []
    candidates = []
    cand = set()

    def mark(sec):
        if sec is not None and not sec.live and sec in cand:
            sec.live = True
            work.append(sec)

    for obj in res.objects:
        for sec in obj.sections:
            if sec is None or not sec.live:
                continue
            if not sec.flags & elf.SHF_ALLOC or sec.name == ".eh_frame":
                continue  # non-alloc (debug) sections are kept; .eh_frame is filtered by FDE
            sec.live = False
            candidates.append(sec)
            cand.add(sec)
    roots = []
    entry = symtab.get(opts.entry)
    if entry is not None and entry.section is not None:
        roots.append(entry.section)
    for sec in candidates:
        n = sec.name
        if (n in (".init", ".fini") or n.startswith(_ROOT_PREFIXES) or sec.flags & elf.SHF_GNU_RETAIN
                or sec.type in (elf.SHT_INIT_ARRAY, elf.SHT_FINI_ARRAY, elf.SHT_PREINIT_ARRAY, elf.SHT_NOTE)):
            roots.append(sec)
        elif _is_c_ident(n) and (f"__start_{n}" in symtab or f"__stop_{n}" in symtab):
            roots.append(sec)
    for name, s in symtab.items():
        if s.section is not None and s.file is not None and (opts.export_dynamic or name in res.dso_names):
            roots.append(s.section)
    for sec in roots:
        mark(sec)
    # the live .eh_frame's CIEs reference personality routines; FDEs are handled per function
    for obj in res.objects:
        for sec in obj.sections:
            if sec is not None and sec.name == ".eh_frame" and sec.live and sec.data_cies:
                for rec_relocs in sec.data_cies:
                    for r in rec_relocs:
                        mark(obj.syms[r[1] >> 32].section)
    while work:
        sec = work.pop()
        syms = sec.file.syms
        for r_off, info, add in sec.get_relocs():
            s = syms[info >> 32]
            t = s.section
            if t is not None and not t.live:
                mark(t)
        for t in sec.fde_refs:
            mark(t)
    return tuple(s for s in candidates if not s.live)


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
    if sec.size % 4 == 0:
        sec.align = 4   # see _drop_dead_fdes
    return count


def _split_eh_frame(sec):
    """Cut .eh_frame into CIE and FDE records; note which section each FDE describes."""
    data = bytes(sec.bytes())
    relocs = sorted(sec.get_relocs())
    syms = sec.file.syms
    records = []     # (offset, length_total, is_cie, relocs, target section)
    cies_relocs = []
    off = 0
    ri = 0
    n = len(data)
    while off + 4 <= n:
        length = elf.U32.unpack_from(data, off)[0]
        if length == 0xFFFFFFFF:
            raise Unsupported(f"{sec}: 64-bit DWARF .eh_frame record")
        total = 4 + length
        if off + total > n:
            raise Unsupported(f"{sec}: .eh_frame record at {off} runs past the section end")
        rels = []
        while ri < len(relocs) and relocs[ri][0] < off + total:
            rels.append(relocs[ri])
            ri += 1
        if length == 0:
            records.append((off, 4, True, rels, None))
            off += 4
            continue
        cie_id = elf.U32.unpack_from(data, off + 4)[0]
        target = None
        if cie_id == 0:
            cies_relocs.append(rels)
        else:
            for r in rels:
                if r[0] == off + 8:
                    target = syms[r[1] >> 32].section
                    break
            if target is not None and len(rels) > 1:
                # the LSDA (and anything else) the FDE points to lives as long as the function
                extra = [syms[r[1] >> 32].section for r in rels if r[0] != off + 8]
                target.fde_refs = tuple(target.fde_refs) + tuple(t for t in extra if t is not None)
        records.append((off, total, cie_id == 0, rels, target))
        off += total
    sec.data = data
    sec.relocs = relocs
    sec.data_cies = cies_relocs
    sec.eh_records = records


def _drop_dead_fdes(sec) -> int:
    """Rewrite sec.data/sec.relocs without FDEs of dead functions; return FDEs kept."""
    data = sec.data
    out = bytearray()
    new_relocs = []
    cie_map = {}
    kept = 0
    for off, total, is_cie, rels, target in sec.eh_records:
        if not is_cie and (target is None or not target.live):
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
            kept += 1
        delta = new_off - off
        for r_off, info, add in rels:
            new_relocs.append((r_off + delta, info, add))
    sec.data = bytes(out)
    sec.relocs = new_relocs
    sec.size = len(out)
    # Padding between .eh_frame pieces would read as a zero terminator to an
    # unwinder walking registered frames (static executables): records are 4-aligned.
    if sec.size % 4 == 0:
        sec.align = 4
    return kept
