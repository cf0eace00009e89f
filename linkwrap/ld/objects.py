"""PARSE, relocatable objects: an ELF object's section headers and symbol table (InputSection,
ObjectFile), checked against what this linker understands (the allow-lists below). Section bytes and
relocations stay in the mmap until later passes ask for them. parse.py reads the command line's
files and linker scripts; libraries.py archives and shared libraries."""
from operator import itemgetter

from linkwrap.ld import elf
from linkwrap.ld.diag import BadInput, Unsupported


class InputSection:
    """One section of a relocatable object, as the file describes it.

    Later passes never change these fields: liveness is gc's Liveness, placement
    is layout's Layout, and gc's rewritten .eh_frame is a new record (gc.EhFrame).
    get_relocs() decodes the relocations once and caches them (a pure function of
    the file's bytes, so the cache changes no value any pass sees).
    """
    __slots__ = ("file", "index", "name", "type", "flags", "size", "align", "entsize", "offset",
                 "info", "link", "rela", "relocs", "group_sig")

    def __init__(self, file, index, name, sh):
        self.file = file
        self.index = index
        self.name = name
        _, self.type, self.flags, _, self.offset, self.size, self.link, self.info, align, self.entsize = sh
        self.align = align or 1
        self.rela = None          # (offset, size) of the SHT_RELA section that applies here
        self.relocs = None        # decoded (r_offset, r_info, r_addend) tuples, once asked for
        self.group_sig = None

    def bytes(self):
        if self.type == elf.SHT_NOBITS:
            return b""
        return self.file.view[self.offset:self.offset + self.size]

    def get_relocs(self):
        if self.relocs is None:
            if self.rela is None:
                self.relocs = ()
            else:
                off, size = self.rela
                self.relocs = list(elf.RELA.iter_unpack(self.file.view[off:off + size]))
                if self.relocs:
                    _check_relocs(self)
        return self.relocs

    def __repr__(self):
        return f"{self.file.name}({self.name})"


class ObjectFile:
    """A relocatable object: sections, raw symbols, COMDAT groups."""

    def __init__(self, name, view, archive=None):
        self.name = name                # display name: path or lib.a(member.o)
        self.view = view
        self.archive = archive
        self.sections = []
        self.raw_syms = []              # (name, info, other, shndx, value, size)
        self.first_global = 0
        self.groups = []                # (signature, [section indices]) for COMDAT groups
        self.group_syms = []            # (signature symbol index, group section index) per entry of groups
        self.stack_note = None          # .note.GNU-stack: None (absent), "" or "x" (executable stack)
        self.properties = None          # .note.gnu.property: {pr_type: value}, None without the note
        self.dropped_syms = frozenset()  # indexes of symbols in sections parse dropped (SHF_EXCLUDE ...)
        self.gnu_warnings = False       # has .gnu.warning sections (a final link drops them; -r may not)
        # (file offset, entries) of the symbol table, for readers of it as an array (ld/rela.py); None
        # with extended section indexes (SHT_SYMTAB_SHNDX), where only raw_syms has the right ones
        self.symtab_span = None
        _parse_object(self)


def drop_pages(view, start=0, length=0):
    """The pages of a shared file mapping (an mmap, or a memoryview of one: an input file) leave this
    process's RSS (MADV_DONTNEED: what is read again faults in from the page cache, and a written
    page of a shared mapping is the file's, kept there). A pass calls it once it holds what it read
    in its own records, so a big link's peak is not its records plus every page some pass once
    touched. start (page-aligned) and length: only that part (length 0: to the end)."""
    import mmap
    mapped = view if isinstance(view, mmap.mmap) else getattr(view, "obj", None)
    if isinstance(mapped, mmap.mmap) and hasattr(mapped, "madvise"):
        try:
            mapped.madvise(mmap.MADV_DONTNEED, start, length or len(mapped) - start)
        except (OSError, ValueError):
            pass


_DROP_TYPES = {elf.SHT_NULL, elf.SHT_SYMTAB, elf.SHT_STRTAB, elf.SHT_RELA, elf.SHT_GROUP,
               elf.SHT_SYMTAB_SHNDX, elf.SHT_LLVM_ADDRSIG}


# --- the allow-lists: what this linker understands of a relocatable object ---------------------
# Anything else is named ("not supported yet: ...") and the link stops, so linkwrap falls back to a
# real linker rather than write a program that silently differs from GNU ld's.
# Section types it links (the dropped ones above are read where needed).
_KNOWN_TYPES = {elf.SHT_PROGBITS, elf.SHT_NOBITS, elf.SHT_NOTE, elf.SHT_INIT_ARRAY, elf.SHT_FINI_ARRAY,
                elf.SHT_PREINIT_ARRAY, elf.SHT_X86_64_UNWIND}


# Section flags it honours: placement (WRITE ALLOC EXECINSTR TLS, SHF_X86_64_LARGE), COMDAT (GROUP),
# --gc-sections (GNU_RETAIN), what the output keeps (MERGE STRINGS INFO_LINK); EXCLUDE drops the section.
_KNOWN_FLAGS = (elf.SHF_WRITE | elf.SHF_ALLOC | elf.SHF_EXECINSTR | elf.SHF_MERGE | elf.SHF_STRINGS |
                elf.SHF_INFO_LINK | elf.SHF_GROUP | elf.SHF_TLS | elf.SHF_GNU_RETAIN | elf.SHF_EXCLUDE |
                elf.SHF_X86_64_LARGE)


_FLAG_NAMES = {elf.SHF_LINK_ORDER: "SHF_LINK_ORDER", elf.SHF_COMPRESSED: "SHF_COMPRESSED",
               0x100: "SHF_OS_NONCONFORMING"}


_KNOWN_BINDS = {elf.STB_LOCAL, elf.STB_GLOBAL, elf.STB_WEAK, elf.STB_GNU_UNIQUE}


_KNOWN_SYMTYPES = {elf.STT_NOTYPE, elf.STT_OBJECT, elf.STT_FUNC, elf.STT_SECTION, elf.STT_FILE,
                   elf.STT_COMMON, elf.STT_TLS, elf.STT_GNU_IFUNC}


# st_info values of those: one lookup per symbol
_KNOWN_INFOS = frozenset(b << 4 | t for b in _KNOWN_BINDS for t in _KNOWN_SYMTYPES)


# Special section indexes a symbol may name; others of the reserved range (SHN_X86_64_LCOMMON ...) are not.
_KNOWN_SHN = {elf.SHN_UNDEF, elf.SHN_ABS, elf.SHN_COMMON}


# Notes: these two carry link semantics (read below); any other note is copied like data.
_STACK_NOTE, _PROPERTY_NOTE = ".note.GNU-stack", ".note.gnu.property"


_SPLIT_STACK_NOTES = (".note.GNU-split-stack", ".note.GNU-no-split-stack")


# .note.gnu.property entries it merges the way GNU ld does (elfxx-x86.c): pr_type -> how.
PROPERTY_AND = {0xC0000002}                        # GNU_PROPERTY_X86_FEATURE_1_AND (IBT, SHSTK)


PROPERTY_OR = {0xC0008002, 0xC0008001, 0xB0008000}  # X86_ISA_1_NEEDED, X86_FEATURE_2_NEEDED, 1_NEEDED


PROPERTY_OR_AND = {0xC0010002, 0xC0010001}        # X86_ISA_1_USED, X86_FEATURE_2_USED


class _Strtab:
    """NUL-terminated strings of one string table section, decoded on demand; an offset past
    its end is the file's error (GNU ld: "invalid string offset")."""
    __slots__ = ("data", "owner")

    def __init__(self, view, off, size, owner=""):
        self.data = bytes(view[off:off + size])
        self.owner = owner
        if self.data and self.data[-1] != 0:
            raise BadInput(f"{owner}: string table at offset 0x{off:x} is corrupt (no NUL at its end)")

    def many(self, offs):
        """The strings at offs; None when one of them is out of range (get names it)."""
        d = self.data
        if offs and max(offs) >= len(d) and max(offs):
            return None
        if d.isascii():
            # one decode for the table: str slices, not a decode per string
            t = d.decode("ascii")
            f = t.find
            return [t[o:f("\0", o)] if o < len(t) else "" for o in offs]
        f = d.find
        return [d[o:f(b"\0", o)].decode("utf-8", "replace") if o < len(d) else "" for o in offs]

    def get(self, off):
        d = self.data
        if off >= len(d) and off:
            raise BadInput(f"{self.owner}: invalid string offset {off} >= {len(d)} for a string table")
        end = d.find(b"\0", off)
        return d[off:end if end >= 0 else len(d)].decode("utf-8", "replace")


_ENTSIZE = {elf.SHT_SYMTAB: elf.SYM.size, elf.SHT_RELA: elf.RELA.size}


def shoff_of(obj):
    return elf.U64.unpack_from(obj.view, 0x28)[0]


def _bad(obj, msg):
    return BadInput(f"{obj.name}: {msg}")


def _check_relocs(sec):
    """Every relocation names a symbol of the file and lies inside its section (GNU ld rejects
    the others: "bad symbol index", "reloc ... out of range")."""
    relocs = sec.relocs
    nsyms = len(sec.file.raw_syms)
    top = max(map(itemgetter(1), relocs)) >> 32       # the symbol index is r_info's high half
    if top >= nsyms:
        raise _bad(sec.file, f"relocation of section {sec.name} names symbol {top}, the symbol table has "
                             f"{nsyms} (section at offset 0x{sec.rela[0]:x})")
    dropped = sec.file.dropped_syms
    if dropped and sec.flags & elf.SHF_ALLOC:
        for r_off, info, add in relocs:
            if info >> 32 in dropped:
                raise _bad(sec.file, f"relocation at offset 0x{r_off:x} of section {sec.name} refers to a "
                                     f"section that is discarded (SHF_EXCLUDE or not linked)")
    if max(map(itemgetter(0), relocs)) + 8 > sec.size:
        from linkwrap.ld.x86_64 import RECIPES
        for r_off, info, add in relocs:
            rec = RECIPES.get(info & 0xFFFFFFFF)
            if r_off + (rec.size if rec else 1) > sec.size:
                raise _bad(sec.file, f"relocation at offset 0x{r_off:x} of section {sec.name} lies outside "
                                     f"its 0x{sec.size:x} bytes")


def _elf_header(obj):
    v = obj.view
    if len(v) < 64:
        raise BadInput(f"{obj.name}: file truncated")
    (ident, etype, machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum,
     shstrndx) = elf.EHDR.unpack_from(v, 0)
    if ident[4] != 2 or ident[5] != 1:
        raise BadInput(f"{obj.name}: file in wrong format (not 64-bit little-endian ELF)")
    if ident[6] != 1:
        raise BadInput(f"{obj.name}: file format not recognized (ELF version {ident[6]})")
    if phnum and (phentsize != elf.PHDR.size or phoff < 64 or phoff + phnum * phentsize > len(v)):
        raise BadInput(f"{obj.name}: file format not recognized (program headers at offset 0x{phoff:x})")
    if machine != elf.EM_X86_64:
        raise BadInput(f"{obj.name}: file in wrong format (machine {machine}, not x86-64)")
    if shoff == 0 or shentsize != elf.SHDR.size:
        raise BadInput(f"{obj.name}: file format not recognized (no section headers)")
    if shoff + elf.SHDR.size > len(v):
        raise BadInput(f"{obj.name}: file truncated (section headers at offset 0x{shoff:x} past end of file)")
    sh0 = elf.SHDR.unpack_from(v, shoff)
    if shnum == 0:
        shnum = sh0[5]
    if shstrndx == elf.SHN_XINDEX:
        shstrndx = sh0[6]
    if shoff + shnum * elf.SHDR.size > len(v):
        raise BadInput(f"{obj.name}: file truncated (section headers at offset 0x{shoff:x} past end of file)")
    shdrs = list(elf.SHDR.iter_unpack(v[shoff:shoff + shnum * elf.SHDR.size]))
    for k, sh in enumerate(shdrs):
        if sh[1] != elf.SHT_NOBITS and sh[4] + sh[5] > len(v):
            raise BadInput(f"{obj.name}: file truncated (section {k} at offset 0x{sh[4]:x} extends past "
                           f"end of file)")
    if shstrndx >= shnum or shstrndx == 0:
        raise BadInput(f"{obj.name}: bad section name table index {shstrndx}")
    return etype, shdrs, shstrndx


def _table(obj, sh, k, entsize, what):
    """The bytes of a table section, checked to hold whole entries."""
    if sh[5] % entsize:
        raise _bad(obj, f"{what} section {k} at offset 0x{sh[4]:x}: size {sh[5]} is not a multiple of {entsize}")
    return obj.view[sh[4]:sh[4] + sh[5]]


def _parse_object(obj):
    _backstop(_parse_object_checked, obj, "object")


def _backstop(parse, f, kind):
    """parse(f), with a malformation the checks do not name still one line naming the file."""
    try:
        parse(f)
    except (IndexError, ValueError, TypeError, __import__("struct").error) as e:
        if isinstance(e, BadInput):
            raise
        raise _bad(f, f"malformed {kind} ({e})") from None


def _parse_object_checked(obj):
    etype, shdrs, shstrndx = _elf_header(obj)
    v = obj.view
    if shdrs[shstrndx][1] != elf.SHT_STRTAB:
        raise _bad(obj, f"section name table {shstrndx} is no string table")
    names = _Strtab(v, shdrs[shstrndx][4], shdrs[shstrndx][5], obj.name)
    nsec = len(shdrs)
    # every section name must be in the table (GNU ld checks them all)
    snames = names.many([sh[0] for sh in shdrs])
    one_by_one = snames is None
    if one_by_one:
        snames = []
    for k, sh in enumerate(shdrs):
        if one_by_one:
            snames.append(names.get(sh[0]))    # names the first bad offset, in header order
        if sh[6] >= nsec or (sh[1] == elf.SHT_RELA and sh[7] >= nsec):
            raise _bad(obj, f"section {k} (header at offset 0x{shoff_of(obj) + 64 * k:x}) links to "
                            f"section {sh[6] if sh[6] >= nsec else sh[7]}, out of range")
        if sh[1] in _ENTSIZE and k and sh[9] != _ENTSIZE[sh[1]]:
            raise _bad(obj, f"section {k} (header at offset 0x{shoff_of(obj) + 64 * k:x}) has entry size "
                            f"{sh[9]}, not {_ENTSIZE[sh[1]]}")
    sections = [None] * nsec
    symtab_idx = None
    xindex = None
    lto = False
    for k, sh in enumerate(shdrs):
        st = sh[1]
        if st == elf.SHT_SYMTAB:
            if symtab_idx is not None:
                raise _bad(obj, "more than one symbol table")
            symtab_idx = k
        elif st == elf.SHT_SYMTAB_SHNDX:
            xindex = sh
    for k, sh in enumerate(shdrs):
        st = sh[1]
        if k == 0 or st in _DROP_TYPES:
            continue
        name = snames[k]
        flags = sh[2]
        if st == elf.SHT_REL:
            raise Unsupported(f"{obj.name}: SHT_REL section {name} (x86-64 objects use RELA)")
        if name.startswith(".gnu.lto_"):
            lto = True
            continue
        if flags & elf.SHF_EXCLUDE or name == ".llvmbc" or name == ".llvmcmd":
            continue
        if st not in _KNOWN_TYPES:
            raise Unsupported(f"{obj.name}: section {name} of type 0x{st:x}")
        if name == _STACK_NOTE:
            obj.stack_note = "x" if flags & elf.SHF_EXECINSTR else ""
            continue
        if name == _PROPERTY_NOTE:
            obj.properties = _read_properties(obj, k, sh)
            continue
        if name.startswith(".gnu.warning"):
            obj.gnu_warnings = True
            continue
        if st == elf.SHT_X86_64_UNWIND and name != ".eh_frame":
            raise Unsupported(f"{obj.name}: unwind section {name} other than .eh_frame")
        if flags & ~_KNOWN_FLAGS:
            bad = flags & ~_KNOWN_FLAGS
            what = " ".join(n for f, n in _FLAG_NAMES.items() if bad & f) or f"0x{bad:x}"
            raise Unsupported(f"{obj.name}: section {name} with flags {what}")
        if name.startswith(_SPLIT_STACK_NOTES):
            raise Unsupported(f"{obj.name}: split-stack code ({name})")
        if (name.startswith((".ctors", ".dtors")) and sh[5]) and flags & elf.SHF_ALLOC:
            # they would have to be folded, reversed, into .init_array/.fini_array
            raise Unsupported(f"{obj.name}: old-style constructor section {name}")
        if sh[8] & (sh[8] - 1):
            raise _bad(obj, f"section {name}: alignment {sh[8]} is not a power of two")
        sections[k] = InputSection(obj, k, name, sh)
    for k, sh in enumerate(shdrs):
        if sh[1] == elf.SHT_RELA:
            target = sh[7]
            if sh[6] != symtab_idx:
                raise _bad(obj, f"relocation section {k} at offset 0x{sh[4]:x} does not use the symbol table")
            if sh[5] % elf.RELA.size:
                raise _bad(obj, f"relocation section {k} at offset 0x{sh[4]:x}: size {sh[5]} is not a "
                                f"multiple of {elf.RELA.size}")
            if target >= nsec:
                raise _bad(obj, f"relocation section {k} applies to section {target}, out of range")
            if snames[k] != ".rela" + snames[target]:
                # GNU ld ties relocations to their section by this name ("Relocations in generic ELF")
                raise _bad(obj, f"relocation section {snames[k]} applies to section {snames[target]}")
            if sections[target] is not None:
                sections[target].rela = (sh[4], sh[5])
    obj.sections = sections
    if symtab_idx is not None:
        sh = shdrs[symtab_idx]
        if sh[6] >= nsec or sh[6] == 0 or shdrs[sh[6]][1] != elf.SHT_STRTAB:
            raise _bad(obj, f"symbol table's string table (section {sh[6]}) is no string table")
        strs = _Strtab(v, shdrs[sh[6]][4], shdrs[sh[6]][5], obj.name)
        get = strs.get
        raw = []
        xs = None
        data = _table(obj, sh, symtab_idx, elf.SYM.size, "symbol table")
        if xindex is not None:
            xs = memoryview(bytes(_table(obj, xindex, -1, 4, "extended section index"))).cast("I")
        nsyms = len(data) // elf.SYM.size
        if sh[7] > nsyms:
            raise _bad(obj, f"symbol table at offset 0x{sh[4]:x}: first global {sh[7]} past its {nsyms} symbols")
        first_global = sh[7]
        sdata = strs.data
        nstr = len(sdata)
        find = sdata.find
        # an ASCII table (every Rust and C symbol name) decoded once: str slices below, not a decode each
        text = sdata.decode("ascii") if sdata.isascii() else None
        tfind = text.find if text is not None else None
        tls = elf.STT_TLS
        # the checks in GNU ld's order, with the names decoded inline: this loop sees every symbol
        # of every object (~175k in a Rust debug link), locals included (checking the distinct
        # (st_info, st_shndx) pairs at once and building the tuples from columns was slower: 340
        # against 315 ms)
        loreserve, xindex_, known_shn = elf.SHN_LORESERVE, elf.SHN_XINDEX, _KNOWN_SHN
        section_, file_, tls_flag = elf.STT_SECTION, elf.STT_FILE, elf.SHF_TLS
        for k, (n, info, other, shndx, value, size) in enumerate(elf.SYM.iter_unpack(data)):
            if shndx >= loreserve:
                if shndx == xindex_:
                    if xs is None or k >= len(xs):
                        raise _bad(obj, f"symbol {k} needs an extended section index the file lacks")
                    shndx = xs[k]
                elif shndx not in known_shn:
                    raise Unsupported(f"{obj.name}: symbol {get(n) or k} in special section 0x{shndx:x}")
            if info not in _KNOWN_INFOS and k:
                raise Unsupported(f"{obj.name}: symbol {get(n) or k} of binding {info >> 4} and type {info & 0xF}")
            stype = info & 0xF
            if info < 16:       # STB_LOCAL
                if k >= first_global:
                    raise _bad(obj, f"local symbol at index {k} (>= sh_info of {sh[7]}) in the symbol table at "
                                    f"offset 0x{sh[4]:x}")
            else:
                if stype == section_ or stype == file_:
                    raise _bad(obj, f"symbol {k} is a {'section' if stype == section_ else 'file'} "
                                    f"symbol but not local (symbol table at offset 0x{sh[4]:x})")
                if 0 < shndx < nsec and sections[shndx] is None and k >= first_global:
                    # a global defined in a section this linker drops (relocations, a string table ...)
                    raise _bad(obj, f"symbol {get(n) or k} is defined in section {shndx}, which holds no "
                                    f"code or data")
            if shndx >= nsec and shndx not in known_shn:
                raise _bad(obj, f"symbol {get(n) or k} names section {shndx}, out of range "
                                f"(symbol table at offset 0x{sh[4]:x})")
            if stype == tls and 0 < shndx < nsec and not shdrs[shndx][2] & tls_flag:
                raise _bad(obj, f"TLS symbol {get(n) or k} defined in non-TLS section {shndx}")
            if n:
                if n >= nstr:
                    get(n)          # names the bad offset
                # the table ends in a NUL (_Strtab checked it): find never fails here
                if text is not None:
                    raw.append((text[n:tfind("\0", n)], info, other, shndx, value, size))
                else:
                    raw.append((sdata[n:find(b"\0", n)].decode("utf-8", "replace"), info, other, shndx, value, size))
            else:
                raw.append(("", info, other, shndx, value, size))
        obj.raw_syms = raw
        obj.first_global = sh[7]
        if xs is None:
            obj.symtab_span = (sh[4], nsyms)
        # symbols in sections this linker does not link (a symbol table, a group ...): rare, looked for
        # only when some symbol names such a section
        gone = {j for j in range(1, nsec) if sections[j] is None and shdrs[j][1] != elf.SHT_NULL}
        if gone and not gone.isdisjoint(map(itemgetter(3), raw)):
            obj.dropped_syms = frozenset(k for k, r in enumerate(raw) if r[3] in gone)
        if lto and any(r[0] == "__gnu_lto_slim" for r in raw):
            raise Unsupported(f"{obj.name}: LTO object (GIMPLE bytecode only) needs the LTO plugin")
    grouped = set()
    for k, sh in enumerate(shdrs):
        if sh[1] == elf.SHT_GROUP:
            words = memoryview(bytes(_table(obj, sh, k, 4, "group"))).cast("I")
            grouped.update(words[1:])
            if not len(words) or not words[0] & elf.GRP_COMDAT:
                continue
            if sh[7] >= len(obj.raw_syms):
                raise BadInput(f"{obj.name}: group section {k} names symbol {sh[7]}, out of range")
            sym = obj.raw_syms[sh[7]]
            sig = sym[0]
            if sym[1] & 0xF == elf.STT_SECTION and sym[3] < len(shdrs):
                sig = names.get(shdrs[sym[3]][0])
            members = [m for m in words[1:]]
            obj.groups.append((sig, members))
            obj.group_syms.append((sh[7], k))
            for m in members:
                if m < len(sections) and sections[m] is not None:
                    sections[m].group_sig = sig
    for sec in sections:
        if sec is not None and sec.flags & elf.SHF_GROUP and sec.index not in grouped:
            raise _bad(obj, f"section {sec.name} is marked SHF_GROUP but no group holds it")
    if nsec > elf.SHN_LORESERVE:
        _renumber_high(obj, shdrs, symtab_idx)


# With more than SHN_LORESERVE sections (gcc -ffunction-sections on a big file, ld -r of many), a
# section's number may be one of the reserved ones: 0xFFF1 is then both section 65521 and SHN_ABS.
# Every pass tells them apart by the number alone, so such a file's sections at and above
# SHN_LORESERVE are numbered 0x100 higher inside the linker (obj.sections has Nones in the gap):
# st_shndx == SHN_ABS, SHN_COMMON ... stay what they say.
_HIGH_SHIFT = 0x10000 - elf.SHN_LORESERVE


def to_internal(k):
    """A section number of the file -> the index into obj.sections."""
    return k + _HIGH_SHIFT if k >= elf.SHN_LORESERVE else k


def _renumber_high(obj, shdrs, symtab_idx):
    lo = elf.SHN_LORESERVE
    secs = obj.sections
    for sec in secs[lo:]:
        if sec is not None:
            sec.index += _HIGH_SHIFT
    obj.sections = secs[:lo] + [None] * _HIGH_SHIFT + secs[lo:]
    if symtab_idx is not None and obj.raw_syms:
        # only a symbol whose st_shndx was SHN_XINDEX names a real section at or above SHN_LORESERVE
        sh = shdrs[symtab_idx]
        data = obj.view[sh[4]:sh[4] + sh[5]]
        raw = obj.raw_syms
        for k, entry in enumerate(elf.SYM.iter_unpack(data)):
            if entry[3] == elf.SHN_XINDEX and raw[k][3] >= lo:
                r = raw[k]
                raw[k] = (r[0], r[1], r[2], r[3] + _HIGH_SHIFT, r[4], r[5])
    obj.groups = [(sig, [to_internal(m) for m in members]) for sig, members in obj.groups]
    obj.group_syms = [(sym, to_internal(k)) for sym, k in obj.group_syms]


def _read_properties(obj, k, sh):
    """.note.gnu.property -> {pr_type: value}; a property this linker cannot merge is named."""
    data = bytes(obj.view[sh[4]:sh[4] + sh[5]])
    props = {}
    pos = 0
    while pos + 12 <= len(data):
        namesz, descsz, ntype = elf.U32.unpack_from(data, pos)[0], elf.U32.unpack_from(data, pos + 4)[0], \
            elf.U32.unpack_from(data, pos + 8)[0]
        name_end = pos + 12 + ((namesz + 3) & ~3)
        desc_end = name_end + descsz
        if desc_end > len(data):
            raise _bad(obj, f"{_PROPERTY_NOTE} note at offset 0x{sh[4] + pos:x} runs past its section")
        if data[pos + 12:pos + 12 + namesz] != b"GNU\0" or ntype != 5:
            raise Unsupported(f"{obj.name}: {_PROPERTY_NOTE} note of type {ntype}")
        p = name_end
        while p + 8 <= desc_end:
            pr_type, pr_size = elf.U32.unpack_from(data, p)[0], elf.U32.unpack_from(data, p + 4)[0]
            if pr_type not in PROPERTY_AND and pr_type not in PROPERTY_OR and pr_type not in PROPERTY_OR_AND:
                raise Unsupported(f"{obj.name}: GNU property 0x{pr_type:x} in {_PROPERTY_NOTE}")
            if pr_size != 4 or p + 12 > desc_end:
                raise _bad(obj, f"GNU property 0x{pr_type:x} at offset 0x{sh[4] + p:x}: size {pr_size}, not 4")
            props[pr_type] = props.get(pr_type, 0) | elf.U32.unpack_from(data, p + 8)[0]
            p += 16   # 4-byte value padded to 8
        pos = (desc_end + 7) & ~7
    return props


# --- archives -----------------------------------------------------------------------
