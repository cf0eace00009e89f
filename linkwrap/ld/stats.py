"""--stats: the counts that explain --time's figures, one line per pass, from the passes' results.

Input: the results the driver holds after a link (Resolution, Liveness, Layout,
Synthetics) and the counters relocate filled in. Output: lines for stderr.
Everything is counted after the link, so a link without --stats pays nothing;
relocation types are counted from the tables themselves (numpy when it is
there, one pass of struct otherwise).
"""
from linkwrap.ld import elf


def lines(res, live, lk, synth, reloc) -> list:
    out = []
    objs = res.objects
    members = sum(1 for o in objs if o.archive is not None)
    out.append(f"inputs: {len(objs)} objects ({members} from archives), {len(res.dsos)} shared libraries "
               f"({len(res.needed)} needed), {sum(len(o.view) for o in objs):,} bytes of objects")
    n_in = sum(1 for o in objs for s in o.sections if s is not None)
    out.append(f"sections: {n_in:,} input, {len(live.sections):,} live ({len(live.removed):,} removed by "
               f"--gc-sections, {len(res.discarded):,} COMDAT copies dropped), {len(lk.osecs)} output")
    n_sym = sum(len(s) for s in res.syms.values())
    n_local = sum(len(o.raw_syms) and o.first_global for o in objs)
    out.append(f"symbols: {n_sym:,} in objects ({n_local:,} local), {len(res.symtab):,} global names")
    by_type, alloc, other, stripped = _reloc_counts(live, lk)
    bulk = reloc.get("bulk_relocs", 0)
    out.append(f"relocations: {alloc + other:,} ({alloc:,} in loaded sections, {other:,} in debug and other "
               f"non-loaded ones); applied {bulk:,} in bulk, {alloc + other - bulk:,} one by one "
               f"({reloc.get('slow_sections', 0):,} non-loaded sections the bulk path left to the loop)"
               + (f"; {stripped:,} more in sections -S/-s stripped" if stripped else ""))
    out.append("relocations by type: " + ", ".join(
        f"{elf.reloc_name(t).removeprefix('R_X86_64_')} {n:,}"
        for t, n in sorted(by_type.items(), key=lambda kv: -kv[1])))
    merged = [m for m in synth.all if m.__class__.__name__ == "MergedSection"]
    if merged:
        pieces = sum(len(p[0]) for m in merged for p in m.pieces.values())
        size_in = sum(s.size for m in merged for s in m.inputs)
        out.append(f"merged: {len(merged)} output sections from {sum(len(m.inputs) for m in merged):,} "
                   f"inputs, {pieces:,} pieces, {size_in:,} -> {sum(len(m.data) for m in merged):,} bytes")
    out.append(f"output: {lk.file_size:,} bytes written, {len(lk.segments)} segments")
    return out


def _reloc_counts(live, lk):
    """-> ({type: count}, relocations in SHF_ALLOC sections, in the others, in stripped ones) of the
    live sections; by type only what goes into the output."""
    by_type = {}
    alloc = other = stripped = 0
    placed = lk.osec_of
    try:
        import numpy as np
    except ImportError:
        np = None
    for sec in live.sections:
        if sec.rela is None:
            continue
        off, size = sec.rela
        if sec not in placed:
            stripped += size // 24
            continue
        if sec.__class__.__name__ == "EhFrame":     # gc's copy: only the kept records' relocations
            pairs = {}
            for _, i, _ in sec.get_relocs():
                pairs[i & 0xFFFFFFFF] = pairs.get(i & 0xFFFFFFFF, 0) + 1
            pairs = pairs.items()
        elif np is not None:
            info = np.frombuffer(sec.file.view, dtype="<u8", count=size // 8, offset=off)[1::3]
            types, counts = np.unique(info & np.uint64(0xFFFFFFFF), return_counts=True)
            pairs = zip(types.tolist(), counts.tolist())
        else:
            pairs = {}
            for _, i, _ in elf.RELA.iter_unpack(sec.file.view[off:off + size]):
                pairs[i & 0xFFFFFFFF] = pairs.get(i & 0xFFFFFFFF, 0) + 1
            pairs = pairs.items()
        n = 0
        for t, c in pairs:
            by_type[t] = by_type.get(t, 0) + c
            n += c
        if sec.flags & elf.SHF_ALLOC:
            alloc += n
        else:
            other += n
    return by_type, alloc, other, stripped
