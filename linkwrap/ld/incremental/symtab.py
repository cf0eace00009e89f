""".symtab when a changed input's locals changed (a function added or removed): its block written anew.

.symtab lists per object its STT_FILE symbol and its kept locals (synthetic/symbols.SymTab), then
the globals; .strtab holds each name once, in the order of first use. A changed input's block
of locals is replaced by the one a full link writes for it (kept_locals: SymTab's own rule), the
entries after it move by the difference, .strtab is built again from every entry's name in order
(the same dedup as StrTab.add_all, so each name gets the offset a link from scratch gives it),
and what follows .symtab in the file (.strtab, .shstrtab, the section headers) is laid out again
as layout lays out the non-loaded sections: each at its alignment, the headers 8-aligned. The
file grows or shrinks by that much; nothing loaded moves.

Entry numbers recorded in the state (each input's "symtab") stay valid through `moves`: the
state keeps every block's (first entry after it, difference), and a record's numbers are those
of its "symtab_epoch" (the count of moves when it was written): now() applies the later ones.
"""
import struct
from array import array

from linkwrap.ld import elf
from linkwrap.ld.incremental.facade import Fallback


def now(e, moves, epoch):
    """Entry number e of a record written at epoch, in the current .symtab."""
    for at, d in moves[epoch:]:
        if e >= at:
            e += d
    return e


def kept_locals(opts, obj, syms, alive):
    """-> [(symbol, its index in syms or None for a FileSymbol the linker names it by)]: the
    locals a full link lists for obj in .symtab, in order."""
    from linkwrap.ld.synthetic.symbols import FileSymbol, _file_name, is_local_label
    if opts.discard == "all":
        return []
    kinds = (elf.STT_NOTYPE, elf.STT_OBJECT, elf.STT_FUNC, elf.STT_TLS, elf.STT_GNU_IFUNC)
    out, named = [], False
    discard = opts.discard
    for k in range(1, obj.first_global):
        s = syms[k]
        t = s.type
        if t == elf.STT_SECTION:
            continue
        if t == elf.STT_FILE:
            out.append((s, k))
            named = True
        elif t in kinds and (s.section in alive or s.is_abs):
            n = s.name
            if n and not (discard != "none" and is_local_label(n) and
                          (discard == "labels" or (s.section is not None and s.section.flags & elf.SHF_MERGE))):
                out.append((s, k))
    if not named and out:
        out.insert(0, (FileSymbol(_file_name(obj)), None))
    return out


def block(opts, state, r, p, lk, buf):
    """-> (first entry, end entry, [name bytes], entries bytes) of the changed input's block: where
    its locals are in the current .symtab, and what a full link writes there now."""
    lay = state["layout"]
    at = lay["symtab"]
    moves, epoch = state.get("symtab_moves", []), r.get("symtab_epoch", 0)
    mine = [now(e, moves, epoch) for key, e in r["symtab"] if isinstance(key, int)]
    if not mine:
        raise Fallback(f"{p.obj.name}: it had no local symbols in .symtab (where its block goes is not known)")
    a, b = min(mine), max(mine) + 1
    if buf[at + 24 * a + 4] & 0xF != elf.STT_FILE:
        a -= 1            # the STT_FILE symbol the linker wrote for it (its own has none)
        if buf[at + 24 * a + 4] & 0xF != elf.STT_FILE:
            raise Fallback(f"{p.obj.name}: its locals in .symtab are not where the state says")
    index_of = {}
    for m, name, _off in p.members:
        index_of[getattr(m, "input", m)] = lay["osecs"][name][3]
    names, ents = [], bytearray()
    keys = []
    pack = elf.SYM.pack
    for j, (s, k) in enumerate(kept_locals(opts, p.obj, p.syms, p.live)):
        names.append(s.name.encode("utf-8", "surrogateescape"))
        if k is not None:
            keys.append((k, a + j))
        if s.type == elf.STT_FILE:
            ents += pack(0, (elf.STB_LOCAL << 4) | elf.STT_FILE, 0, elf.SHN_ABS, 0, 0)
            continue
        if s.section is not None:
            shndx = index_of.get(s.section)
            if shndx is None and s.section in p.merged:
                shndx = _osec_at(lay["osecs"], lk.real_addr(s))
            if shndx is None:
                value, shndx = 0, elf.SHN_ABS
            else:
                value = lk.real_addr(s)
        else:
            value, shndx = s.value, elf.SHN_ABS
        if s.type == elf.STT_TLS:
            value -= lk.tls_start
        ents += pack(0, (elf.STB_LOCAL << 4) | s.type, s.visibility, shndx, value & 0xFFFFFFFFFFFFFFFF, s.size)
    return a, b, names, bytes(ents), keys


def _osec_at(osecs, addr):
    for _a, _off, size, index, _t, flags, _al in osecs.values():
        if flags & elf.SHF_ALLOC and _a <= addr < _a + max(size, 1):
            return index
    raise Fallback(f"a local symbol's address 0x{addr:x} lies outside the output's sections")


def tail(buf, blocks):
    """-> (file offset the new tail starts at, its bytes, the new file size, {section index: (offset,
    size)}, entries' difference): .symtab with the blocks replaced, .strtab built again, what follows
    laid out again. blocks: (first, end, names, entries) in the current .symtab."""
    shoff = struct.unpack_from("<Q", buf, 0x28)[0]
    shnum = struct.unpack_from("<H", buf, 0x3C)[0]
    hdrs = [list(elf.SHDR.unpack_from(buf, shoff + 64 * i)) for i in range(shnum)]
    sym_i = next((i for i, h in enumerate(hdrs) if h[1] == elf.SHT_SYMTAB), None)
    if sym_i is None:
        raise Fallback("the output has no .symtab where the state says it has one")
    sh = hdrs[sym_i]
    str_i = sh[6]
    soff, ssize = sh[4], sh[5]
    toff, tsize = hdrs[str_i][4], hdrs[str_i][5]
    strtab = bytes(buf[toff:toff + tsize])
    st_names = array("I", bytes(buf[soff:soff + ssize]))[0::6]
    # every name starts a string of .strtab (StrTab shares no suffixes): offset -> name
    parts = strtab.split(b"\0")
    starts, pos = [], 0
    for part in parts:
        starts.append(pos)
        pos += len(part) + 1
    name_at = dict(zip(starts, parts))
    try:
        names = [name_at[o] for o in st_names]
    except KeyError:
        raise Fallback(".strtab is not as this linker writes it (a name inside another)") from None
    ents = bytearray(buf[soff:soff + ssize])
    delta = 0
    for a, b, new_names, new_ents in sorted(blocks, key=lambda x: x[0], reverse=True):
        names[a:b] = new_names
        ents[24 * a:24 * b] = new_ents
        delta += len(new_names) - (b - a)
    # StrTab.add_all's dedup, in .symtab's order (the null symbol keeps offset 0)
    data = bytearray(b"\0")
    offs = {}
    out = array("I", [0])
    get = offs.get
    for n in names[1:]:
        o = get(n)
        if o is None:
            o = offs[n] = len(data)
            data += n
            data.append(0)
        out.append(o)
    table = array("I", bytes(ents))
    table[0::6] = out
    new = {sym_i: table.tobytes(), str_i: bytes(data)}
    # what follows .symtab's offset, in file order, laid out again (layout's non-loaded sections:
    # each at its alignment; .shstrtab's alignment is 1, the headers 8-aligned)
    after = sorted((h[4], i) for i, h in enumerate(hdrs)
                   if i and h[4] >= soff and not h[2] & elf.SHF_ALLOC and h[1] != elf.SHT_NOBITS)
    cur, again = soff, soff
    places = {}
    for _o, i in after:
        h = hdrs[i]
        al = max(h[8], 1)
        again = (again + al - 1) // al * al
        if again != h[4]:
            raise Fallback("the output's last sections are not laid out as this linker lays them out")
        again += h[5]
        cur = (cur + al - 1) // al * al
        size = len(new[i]) if i in new else h[5]
        places[i] = (cur, size)
        cur += size
    if (again + 7) // 8 * 8 != shoff:
        raise Fallback("the output's section headers are not where this linker puts them")
    new_shoff = (cur + 7) // 8 * 8
    size = new_shoff + 64 * shnum
    out_tail = bytearray(size - soff)
    for _o, i in after:
        o, n = places[i]
        body = new[i] if i in new else buf[hdrs[i][4]:hdrs[i][4] + n]
        out_tail[o - soff:o - soff + n] = body
        hdrs[i][4], hdrs[i][5] = o, n
    hdrs[sym_i][7] += delta                  # sh_info: one past the last local
    for i, h in enumerate(hdrs):
        elf.SHDR.pack_into(out_tail, new_shoff - soff + 64 * i, *h)
    return soff, bytes(out_tail), size, new_shoff, places, delta


def write_blocks(opts, state, fd, buf, plans, dirty):
    """The changed inputs' blocks of locals in .symtab written anew and the file's tail after them
    laid out again (symtab.py); -> (the mapping, remade at the file's new size, the size)."""
    import mmap
    import os
    from linkwrap.ld import write
    lay = state["layout"]
    records = state["inputs"]
    moves = state.setdefault("symtab_moves", [])
    made = [(p, block(opts, state, records[p.k], p, p.lk, buf)) for p in plans]
    soff, data, size, shoff, places, _delta = tail(buf, [b[:4] for _p, b in made])
    buf.close()
    os.ftruncate(fd, size)
    buf = write._map_type()(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    buf[soff:size] = data
    struct.pack_into("<Q", buf, 0x28, shoff)
    dirty += [(0x28, 0x30), (soff, size)]
    fresh = []
    for p, (a, b, names, _e, _keys) in sorted(made, key=lambda m: m[1][0], reverse=True):
        fresh.append((b, len(names) - (b - a)))
    first = len(moves)
    moves += fresh
    for p, (a, b, names, _e, keys) in made:
        r = records[p.k]
        start = now(a, moves, first)
        glob = [(k, now(e, moves, r.get("symtab_epoch", 0))) for k, e in r["symtab"] if not isinstance(k, int)]
        p.symtab = [(k, start + e - a) for k, e in keys] + glob
    lay["file_size"] = size
    names_of = {o[3]: n for n, o in lay["osecs"].items()}
    for i, (off, n) in places.items():
        name = names_of.get(i)
        if name is not None:
            o = lay["osecs"][name]
            lay["osecs"][name] = (o[0], off, n) + tuple(o[3:])
    return buf, size
