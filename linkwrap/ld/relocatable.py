"""RELOCATABLE (-r): Resolution -> one relocatable object holding every input's sections.

Input: Options, Resolution (the objects resolve took in, archive members included). Output:
an ET_REL file, as GNU ld -r writes one: input sections of the same name concatenated in
input order (each at its alignment), one section symbol per output section, every object's
local symbols (its section symbols folded into the output's, their offset moved into the
addend), the globals once each (defined, common, absolute or undefined, as resolved), and
every relocation moved along with its section and renamed to the output's symbols. Nothing is
resolved to an address: the final link does that.

COMDAT groups stay groups: the first group of a signature is kept (its members are sections
of their own, with their relocation sections, listed by a .group section ahead of them) and
later ones are dropped with everything in them, as in a final link.

Named as unsupported: shared libraries, non-COMDAT groups, STB_GNU_UNIQUE symbols,
.gnu.warning sections, a relocation against what a dropped group defined locally, and options
that mean nothing or something else with -r (-pie, --gc-sections, --defsym, ...).
"""
import struct

from linkwrap.ld import elf
from linkwrap.ld.diag import Unsupported


class _Out:
    __slots__ = ("name", "type", "flags", "align", "entsize", "members", "size", "index", "sym", "relocs")

    def __init__(self, sec):
        self.name = sec.name
        self.type = sec.type
        self.flags = sec.flags & ~elf.SHF_GROUP
        self.align = 1
        self.entsize = sec.entsize
        self.members = []         # (input section, offset here)
        self.size = 0
        self.index = 0
        self.sym = 0              # index of its STT_SECTION symbol
        self.relocs = []


def check_options(opts):
    for name, asked in (("-pie", opts.pie), ("--gc-sections", opts.gc_sections), ("--defsym", opts.defsym),
                        ("--dynamic-list", opts.dynamic_list), ("-s", opts.strip_all),
                        ("-S", opts.strip_debug), ("-E", opts.export_dynamic), ("-rpath", opts.rpath),
                        ("-shared", opts.shared), ("--version-script", opts.version_script),
                        # GNU ld -r -x/-X drops the locals no relocation needs: not done here
                        ("-x", opts.discard == "all"), ("-X", opts.discard == "labels"),
                        ("--exclude-libs", opts.exclude_libs), ("--export-dynamic-symbol", opts.export_symbols),
                        ("--package-metadata", opts.package_metadata), ("-R FILE", opts.just_symbols),
                        ("--section-start", opts.section_start)):
        if asked:
            raise Unsupported(f"-r with {name}")


def link_partial(opts, res, diag) -> bytearray:
    from linkwrap.ld import gc
    check_options(opts)
    # gc's records without --gc-sections: COMDAT losers dropped, each .eh_frame without the
    # FDEs of the functions they took along (GNU ld -r drops those FDEs too)
    live = gc.mark_live(opts, res, diag)
    by_obj = {}
    for sec in live.sections:
        by_obj.setdefault(sec.file, []).append(sec)
    if res.dsos:
        raise Unsupported(f"-r with a shared library ({res.dsos[0].name})")
    outs = {}
    place = {}
    discarded = res.discarded
    groups = []               # (obj, signature symbol index, [member InputSections]) of kept groups
    group_pos = {}            # (obj, its group section's index) -> that group's section index out
    for obj in res.objects:
        if obj.gnu_warnings:
            raise Unsupported(f"-r with .gnu.warning sections ({obj.name})")
        for (sig, members), (sym, gsec) in zip(obj.groups, obj.group_syms):
            kept = [obj.sections[m] for m in members if m < len(obj.sections) and obj.sections[m] is not None]
            if kept and not any(m in discarded for m in kept):
                groups.append((obj, sym, kept))
                group_pos[(obj, gsec)] = len(groups)    # .group sections are the first ones out
        for sec in by_obj.get(obj, ()):
            if sec.flags & elf.SHF_GROUP and sec.group_sig is None:
                raise Unsupported(f"-r with a non-COMDAT section group ({obj.name}: {sec.name})")
            # a group member stays a section of its own; others of one name are concatenated
            key = sec.name if sec.group_sig is None else (obj, sec.index)
            o = outs.get(key)
            if o is None:
                o = outs[key] = _Out(sec)
                if sec.group_sig is not None:
                    o.flags |= elf.SHF_GROUP
            elif o.type != sec.type:
                if {o.type, sec.type} != {elf.SHT_PROGBITS, elf.SHT_NOBITS}:
                    raise Unsupported(f"-r: section {sec.name} of two types in {obj.name}")
                o.type = elf.SHT_PROGBITS
            o.flags |= sec.flags & ~elf.SHF_GROUP if sec.group_sig is None else sec.flags
            if o.entsize != sec.entsize:
                o.entsize = 0
                o.flags &= ~(elf.SHF_MERGE | elf.SHF_STRINGS)
            off = elf.align_up(o.size, sec.align)
            o.members.append((sec, off))
            place[sec] = (o, off)
            if isinstance(sec, gc.EhFrame):
                place[sec.input] = (o, off)    # symbols name the section as parse read it
            o.size = off + sec.size
            o.align = max(o.align, sec.align)
    sections = list(outs.values())
    notes = _notes(opts, res)
    for k, o in enumerate(sections, 1 + len(groups)):   # .group sections come first
        o.index = k
    # symbols: null, section symbols, then each object's locals, then the globals
    syms = [(0, 0, 0, 0, 0, 0)]
    names = bytearray(b"\0")
    name_off = {}

    def name(n):
        if not n:
            return 0
        off = name_off.get(n)
        if off is None:
            off = name_off[n] = len(names)
            names.extend(n.encode() + b"\0")
        return off

    for o in sections:
        o.sym = len(syms)
        syms.append((0, (elf.STB_LOCAL << 4) | elf.STT_SECTION, 0, o.index, 0, 0))
    local_idx = {}
    for obj in res.objects:
        for k, (n, info, other, shndx, value, size) in enumerate(obj.raw_syms[:obj.first_global]):
            if k == 0 or info & 0xF == elf.STT_SECTION:
                continue
            if shndx == elf.SHN_ABS or info & 0xF == elf.STT_FILE:
                out_shndx = _special(shndx)
            elif (obj, shndx) in group_pos:
                out_shndx = group_pos[(obj, shndx)]   # a signature symbol GCC defines in the group section
            elif 0 < shndx < len(obj.sections) and obj.sections[shndx] is not None:
                o, off = place[obj.sections[shndx]]
                out_shndx, value = o.index, value + off
            else:
                continue          # in a section not kept: a relocation naming it is refused below
            local_idx[(obj, k)] = len(syms)
            syms.append((name(n), info, other, out_shndx, value, size))
    first_global = len(syms)
    global_idx = {}
    for s in res.symtab.values():
        if s.is_local:
            continue
        if s.bind not in (elf.STB_GLOBAL, elf.STB_WEAK):
            raise Unsupported(f"-r with symbol {s.name} of binding {s.bind}")
        bind = s.bind
        if s.file is not None and s.section is not None:
            o, off = place[s.section]
            entry = (o.index, s.value + off)
        elif s.is_common:
            entry = (_COMMON, s.value)
        elif s.is_abs:
            entry = (_ABS, s.value)
        else:
            entry = (elf.SHN_UNDEF, 0)
            bind = elf.STB_GLOBAL if s.strong_ref else elf.STB_WEAK
        global_idx[s] = len(syms)
        syms.append((name(s.name), (bind << 4) | s.type, s.visibility, entry[0], entry[1], s.size))
    # relocations, moved with their sections and renamed to the output's symbols
    for o in sections:
        for sec, off in o.members:
            obj = sec.file
            mine = res.syms[obj]
            for r_off, info, addend in sec.get_relocs():
                rtype = info & 0xFFFFFFFF
                if rtype not in elf.RELOC_NAMES:
                    raise Unsupported(f"relocation type {rtype} at {obj.name}:({sec.name}+0x{r_off:x})")
                k = info >> 32
                if k == 0:
                    new = 0
                elif k < obj.first_global:
                    raw = obj.raw_syms[k]
                    if raw[1] & 0xF == elf.STT_SECTION:
                        target = obj.sections[raw[3]] if 0 < raw[3] < len(obj.sections) else None
                        if target is None or target not in place:
                            if target is not None and target in discarded and not sec.flags & elf.SHF_ALLOC:
                                # debug info of a dropped COMDAT copy: R_X86_64_NONE, as GNU ld -r writes
                                o.relocs.append((off + r_off, 0, 0))
                                continue
                            raise Unsupported(f"-r: relocation at {obj.name}:({sec.name}+0x{r_off:x}) against "
                                              f"a section that is not kept")
                        t, t_off = place[target]
                        new, addend = t.sym, addend + t_off
                    elif (obj, k) in local_idx:
                        new = local_idx[(obj, k)]
                    else:
                        raise Unsupported(f"-r: relocation at {obj.name}:({sec.name}+0x{r_off:x}) against "
                                          f"a symbol that is not kept")
                else:
                    new = global_idx[mine[k]]
                o.relocs.append((off + r_off, (new << 32) | rtype, addend))
    # each kept group: its signature symbol and its members, their relocation sections included
    rela_index = {}
    nxt = 1 + len(groups) + len(sections) + len(notes)
    for o in sections:
        if o.relocs:
            rela_index[o] = nxt
            nxt += 1
    group_out = []
    for obj, k, members in groups:
        raw = obj.raw_syms[k]
        if k >= obj.first_global:
            sig = global_idx[res.syms[obj][k]]
        elif raw[1] & 0xF == elf.STT_SECTION:
            sig = place[obj.sections[raw[3]]][0].sym
        elif (obj, k) in local_idx:
            sig = local_idx[(obj, k)]
        else:
            raise Unsupported(f"-r: the signature symbol of a group of {obj.name} is not kept")
        outs_of = [place[m][0] for m in members]
        idx = [o.index for o in outs_of] + [rela_index[o] for o in outs_of if o in rela_index]
        group_out.append((sig, struct.pack(f"<{1 + len(idx)}I", elf.GRP_COMDAT, *idx)))
    blob = _write(sections, notes, syms, first_global, names, group_out)
    from linkwrap.ld.synthetic import gnu_osabi
    if gnu_osabi(res):
        blob[7] = 3                   # ELFOSABI_GNU, as GNU ld -r marks it
    if opts.build_id:
        _fill_build_id(blob, opts.build_id)
    return blob


# In the symbols written, a special section number (SHN_ABS, SHN_COMMON) is negative: with more
# than SHN_LORESERVE sections out, section 0xFFF1 is a real one too (_write tells them apart).
_ABS, _COMMON = -elf.SHN_ABS, -elf.SHN_COMMON


def _special(shndx):
    return -shndx if elf.SHN_LORESERVE <= shndx <= 0xFFFF else shndx


def _symbols(syms):
    """-> .symtab's bytes, and .symtab_shndx's (None when no symbol needs it): a section number at
    or above SHN_LORESERVE is SHN_XINDEX in st_shndx and the number in the extended table."""
    lo, xindex = elf.SHN_LORESERVE, elf.SHN_XINDEX
    pack = elf.SYM.pack
    if all(0 <= s[3] < lo for s in syms):
        return b"".join(pack(*s) for s in syms), None
    out = bytearray()
    ext = []
    for n, info, other, shndx, value, size in syms:
        if shndx < 0:
            st, x = -shndx, 0
        elif shndx >= lo:
            st, x = xindex, shndx
        else:
            st, x = shndx, 0
        out += pack(n, info, other, st, value, size)
        ext.append(x)
    return bytes(out), struct.pack(f"<{len(ext)}I", *ext)


def _section_count(blob):
    """-> (e_shnum, e_shstrndx) of an object, their overflow into section 0 read."""
    shoff, = struct.unpack_from("<Q", blob, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", blob, 0x3C)
    if shnum == 0:
        shnum = elf.SHDR.unpack_from(blob, shoff)[5]
    if shstrndx == elf.SHN_XINDEX:
        shstrndx = elf.SHDR.unpack_from(blob, shoff)[6]
    return shnum, shstrndx


def _notes(opts, res):
    """The notes the final link reads, as GNU ld -r merges them: .note.GNU-stack (only when every
    object has one, executable if one is), .note.gnu.property."""
    from linkwrap.ld.synthetic import merge_properties, PropertyNote
    out = []
    stack = [obj.stack_note for obj in res.objects]
    if stack and None not in stack:
        out.append((".note.GNU-stack", elf.SHT_PROGBITS, elf.SHF_EXECINSTR if "x" in stack else 0, 1, b""))
    props = merge_properties(opts, res.objects) if all(o.properties is not None for o in res.objects) else {}
    if props:
        out.append((".note.gnu.property", elf.SHT_NOTE, elf.SHF_ALLOC, 8, PropertyNote(props).data))
    if opts.build_id:
        # GNU ld -r writes the note too (the final link then carries it along)
        from linkwrap.ld.synthetic import BuildId
        note = BuildId(opts.build_id)
        out.append((".note.gnu.build-id", elf.SHT_NOTE, elf.SHF_ALLOC, 4,
                    struct.pack("<III", 4, note.desc_len, 3) + b"GNU\0" + b"\0" * note.desc_len))
    return out


def _fill_build_id(blob, style):
    """The digest over the whole object with the note's bytes still zero, as for an executable."""
    import hashlib
    import os
    shoff, = struct.unpack_from("<Q", blob, 0x28)
    shnum, shstrndx = _section_count(blob)
    hdrs = [elf.SHDR.unpack_from(blob, shoff + 64 * k) for k in range(shnum)]
    strs = hdrs[shstrndx]
    for h in hdrs:
        start = strs[4] + h[0]
        if bytes(blob[start:start + 19]) == b".note.gnu.build-id\0":
            n = h[5] - 16
            d = {"sha1": lambda: hashlib.sha1(blob).digest(), "md5": lambda: hashlib.md5(blob).digest(),
                 "uuid": lambda: os.urandom(16)}.get(style, lambda: bytes.fromhex(style[2:]))()
            blob[h[4] + 16:h[4] + 16 + n] = d[:n]
            return


def _write(sections, notes, syms, first_global, strtab, groups=()):
    shstr = bytearray(b"\0")

    def sname(n):
        off = len(shstr)
        shstr.extend(n.encode() + b"\0")
        return off

    blob = bytearray(64)
    headers = [(0,) * 10]

    def add(nm, stype, flags, align, data, link=0, info=0, entsize=0, size=None):
        pos = elf.align_up(len(blob), max(align, 1))
        blob.extend(b"\0" * (pos - len(blob)))
        if stype != elf.SHT_NOBITS:
            blob.extend(data)
        headers.append((sname(nm), stype, flags, 0, pos, len(data) if size is None else size, link, info,
                        align, entsize))
        return len(headers) - 1

    n_sections = len(sections)
    n_rela = sum(1 for o in sections if o.relocs)
    symtab_index = len(groups) + n_sections + len(notes) + n_rela + 1
    symdata, shndx_data = _symbols(syms)
    strtab_index = symtab_index + (2 if shndx_data is not None else 1)
    for sig, data in groups:
        add(".group", elf.SHT_GROUP, 0, 4, data, symtab_index, sig, 4)
    rela_of = []
    for o in sections:
        data = bytearray(o.size) if o.type != elf.SHT_NOBITS else b""
        if o.type != elf.SHT_NOBITS:
            for sec, off in o.members:
                b = sec.bytes()
                data[off:off + len(b)] = b
        add(o.name, o.type, o.flags, o.align, bytes(data), entsize=o.entsize,
            size=o.size if o.type == elf.SHT_NOBITS else None)
        if o.relocs:
            rela_of.append(o)
    for nm, stype, flags, align, data in notes:
        add(nm, stype, flags, align, data)
    for o in rela_of:
        data = b"".join(elf.RELA.pack(*r) for r in o.relocs)
        add(".rela" + o.name, elf.SHT_RELA, elf.SHF_INFO_LINK | (o.flags & elf.SHF_GROUP), 8, data,
            symtab_index, o.index, 24)
    add(".symtab", elf.SHT_SYMTAB, 0, 8, symdata, strtab_index, first_global, 24)
    if shndx_data is not None:
        add(".symtab_shndx", elf.SHT_SYMTAB_SHNDX, 0, 4, shndx_data, symtab_index, 0, 4)
    add(".strtab", elf.SHT_STRTAB, 0, 1, bytes(strtab))
    shstr_index = len(headers)
    name_off = sname(".shstrtab")
    pos = len(blob)
    blob.extend(shstr)
    headers.append((name_off, elf.SHT_STRTAB, 0, 0, pos, len(shstr), 0, 0, 1, 0))
    shoff = elf.align_up(len(blob), 8)
    blob.extend(b"\0" * (shoff - len(blob)))
    for h in headers:
        blob.extend(elf.SHDR.pack(*h))
    ident = elf.ELFMAG + bytes([2, 1, 1, 0]) + b"\0" * 8
    shnum, shstrndx = len(headers), shstr_index
    if shnum >= elf.SHN_LORESERVE:
        # the counts overflow into section 0's sh_size and sh_link (gABI "Extended Section Numbering")
        elf.SHDR.pack_into(blob, shoff, 0, 0, 0, 0, 0, shnum, shstr_index if shstr_index >= elf.SHN_LORESERVE
                           else 0, 0, 0, 0)
        shnum = 0
        if shstr_index >= elf.SHN_LORESERVE:
            shstrndx = elf.SHN_XINDEX
    elf.EHDR.pack_into(blob, 0, ident, elf.ET_REL, elf.EM_X86_64, 1, 0, 0, shoff, 0, 64, 0, 0, 64,
                       shnum, shstrndx)
    return blob
