"""RELOCATABLE (-r): Resolution -> one relocatable object holding every input's sections.

Input: Options, Resolution (the objects resolve took in, archive members included). Output:
an ET_REL file, as GNU ld -r writes one: input sections of the same name concatenated in
input order (each at its alignment), one section symbol per output section, every object's
local symbols (its section symbols folded into the output's, their offset moved into the
addend), the globals once each (defined, common, absolute or undefined, as resolved), and
every relocation moved along with its section and renamed to the output's symbols. Nothing is
resolved to an address: the final link does that.

Named as unsupported: COMDAT groups (they would have to stay groups), shared libraries,
STB_GNU_UNIQUE symbols, .gnu.warning sections, and options that mean nothing or something
else with -r (-pie, --gc-sections, --defsym, ...).
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
                        ("-S", opts.strip_debug), ("-E", opts.export_dynamic), ("-rpath", opts.rpath)):
        if asked:
            raise Unsupported(f"-r with {name}")


def link_partial(opts, res) -> bytearray:
    check_options(opts)
    if res.dsos:
        raise Unsupported(f"-r with a shared library ({res.dsos[0].name})")
    outs = {}
    place = {}
    for obj in res.objects:
        if obj.groups:
            raise Unsupported(f"-r with COMDAT groups ({obj.name})")
        if obj.gnu_warnings:
            raise Unsupported(f"-r with .gnu.warning sections ({obj.name})")
        for sec in obj.sections:
            if sec is None:
                continue
            o = outs.get(sec.name)
            if o is None:
                o = outs[sec.name] = _Out(sec)
            elif o.type != sec.type:
                if {o.type, sec.type} != {elf.SHT_PROGBITS, elf.SHT_NOBITS}:
                    raise Unsupported(f"-r: section {sec.name} of two types in {obj.name}")
                o.type = elf.SHT_PROGBITS
            o.flags |= sec.flags & ~elf.SHF_GROUP
            if o.entsize != sec.entsize:
                o.entsize = 0
                o.flags &= ~(elf.SHF_MERGE | elf.SHF_STRINGS)
            off = elf.align_up(o.size, sec.align)
            o.members.append((sec, off))
            place[sec] = (o, off)
            o.size = off + sec.size
            o.align = max(o.align, sec.align)
    sections = list(outs.values())
    notes = _notes(opts, res)
    for k, o in enumerate(sections, 1):
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
                out_shndx = shndx
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
            entry = (elf.SHN_COMMON, s.value)
        elif s.is_abs:
            entry = (elf.SHN_ABS, s.value)
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
                        if target is None:
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
    blob = _write(sections, notes, syms, first_global, names)
    if opts.build_id:
        _fill_build_id(blob, opts.build_id)
    return blob


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
    shnum, shstrndx = struct.unpack_from("<HH", blob, 0x3C)
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


def _write(sections, notes, syms, first_global, strtab):
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
    symtab_index = n_sections + len(notes) + n_rela + 1
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
        add(".rela" + o.name, elf.SHT_RELA, elf.SHF_INFO_LINK, 8, data, symtab_index, o.index, 24)
    symdata = b"".join(elf.SYM.pack(*s) for s in syms)
    add(".symtab", elf.SHT_SYMTAB, 0, 8, symdata, symtab_index + 1, first_global, 24)
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
    elf.EHDR.pack_into(blob, 0, ident, elf.ET_REL, elf.EM_X86_64, 1, 0, 0, shoff, 0, 64, 0, 0, 64,
                       len(headers), shstr_index)
    return blob
