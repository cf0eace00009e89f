"""PARSE: command-line inputs -> Inputs (objects, archives, shared libraries, in order).

Input: Options. Output: a frozen Inputs whose `items` list the command line's
files in order, with glibc's linker scripts (libc.so: GROUP, AS_NEEDED, INPUT,
OUTPUT_FORMAT) expanded in place. Relocatable objects get their section
headers and symbol table read; archives only their index (members are parsed
when resolution pulls them in); shared libraries their dynamic symbols and
version definitions. Section bytes and relocations stay in the mmap until
later passes ask for them.
"""
import mmap
import os
from dataclasses import dataclass
from operator import itemgetter

from linkwrap.ld import elf
from linkwrap.ld.diag import BadInput, Unsupported
from linkwrap.ld.options import find_library


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


class SharedFile:
    """A shared library: soname, defined dynamic symbols with their default versions."""

    def __init__(self, name, view, as_needed, needed_name=None):
        self.name = name
        self.view = view
        self.as_needed = as_needed
        # without DT_SONAME, DT_NEEDED is the name as GNU ld was given it: the path of a file
        # argument, the file name of a -l search
        self.soname = needed_name or name
        self.defs = {}                  # name -> (value, size, type, bind, version or None, shndx)
        self.undefs = set()
        self.by_value = {}              # value -> [names] (aliases, for copy relocations)
        self.section_aligns = []        # (start, end, align) of the library's sections
        _parse_shared(self)


class Archive:
    """An ar archive: its symbol index; members parsed on demand (member())."""

    def __init__(self, name, view, whole):
        self.name = name
        self.view = view
        self.whole = whole
        self.members = []               # (header offset, member name, data offset, size)
        self.index = {}                 # symbol name -> header offset
        self.loaded = {}                # header offset -> ObjectFile parsed to build a missing index
        _parse_archive(self)

    def member(self, hdr_off):
        """The member at hdr_off, parsed now (resolve keeps track of what it pulled in)."""
        obj = self.loaded.get(hdr_off)
        if obj is None:
            for h, mname, off, size in self.members:
                if h == hdr_off:
                    break
            else:
                raise BadInput(f"{self.name}: symbol index points to offset {hdr_off}, which is no member")
            if self.view[off:off + 4] != elf.ELFMAG:
                raise BadInput(f"{self.name}({mname}): member is not an ELF object")
            obj = ObjectFile(f"{self.name}({mname})", self.view[off:off + size], self)
        return obj


@dataclass(frozen=True)
class InputItem:
    """One entry of the link order: kind is 'object', 'archive', 'shared', 'group-start' or 'group-end'."""
    kind: str
    file: object = None


@dataclass(frozen=True)
class Inputs:
    items: tuple


def read_inputs(opts, diag) -> Inputs:
    items = []
    for arg in opts.inputs:
        if arg.kind in ("group-start", "group-end"):
            items.append(InputItem(arg.kind))
        elif arg.kind == "lib":
            path = find_library(arg.name, opts, arg.static or opts.static)
            if path is None:
                diag.error(f"cannot find -l{arg.name}: No such file or directory")
                continue
            _read_file(path, arg, opts, items, diag, 0)
        elif not os.path.exists(arg.name):
            diag.error(f"cannot find {arg.name}: No such file or directory")
        else:
            _read_file(arg.name, arg, opts, items, diag, 0)
    diag.checkpoint()
    return Inputs(tuple(items))


def _map(path):
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return memoryview(b"")
            return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory") from None
    except FileNotFoundError:
        raise BadInput(f"cannot find {path}: No such file or directory") from None
    except OSError as e:
        raise BadInput(f"cannot open {path}: {e.strerror}") from None


def _read_file(path, arg, opts, items, diag, depth):
    view = _map(path)
    head = bytes(view[:8])
    if head[:4] == elf.ELFMAG:
        if len(view) < 64:
            raise BadInput(f"{path}: file truncated")
        if head[4] != 2 or head[5] != 1:
            raise BadInput(f"{path}: file in wrong format (not 64-bit little-endian ELF)")
        if head[7] not in (0, 3):   # ELFOSABI_NONE, ELFOSABI_GNU
            raise Unsupported(f"{path}: ELF OS ABI {head[7]}")
        etype = elf.U16.unpack_from(view, 16)[0]
        if etype == elf.ET_REL:
            items.append(InputItem("object", ObjectFile(path, view)))
        elif etype == elf.ET_DYN:
            if opts.static:
                raise BadInput(f"attempted static link of dynamic object `{path}'")
            needed_name = os.path.basename(path) if arg.kind == "lib" and depth == 0 else path
            items.append(InputItem("shared", SharedFile(path, view, arg.as_needed, needed_name)))
        else:
            raise BadInput(f"{path}: file format not recognized (ELF type {etype} is no object or library)")
    elif head == b"!<arch>\n":
        items.append(InputItem("archive", Archive(path, view, arg.whole_archive)))
    elif head == b"!<thin>\n":
        raise Unsupported(f"thin archive {path}")
    elif head[:4] == b"BC\xc0\xde" or head[:4] == b"\xde\xc0\x17\x0b":
        raise Unsupported(f"{path}: LLVM bitcode (LTO object) needs the LTO plugin")
    else:
        _read_script(path, bytes(view), arg, opts, items, diag, depth)


# --- linker scripts: only the subset glibc and gcc ship -------------------------

def _tokens(text):
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace() or c == ",":
            i += 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c in "();":
            out.append(c)
            i += 1
        elif c == '"':
            j = text.find('"', i + 1)
            if j < 0:
                j = n
            out.append(text[i + 1:j])
            i = j + 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in '(),;"':
                j += 1
            out.append(text[i:j])
            i = j
    return out


def _read_script(path, data, arg, opts, items, diag, depth):
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise BadInput(f"{path}: file format not recognized") from None
    if "\0" in text:
        raise BadInput(f"{path}: file format not recognized")
    toks = _tokens(text)
    if not toks or toks[0] not in ("GROUP", "INPUT", "OUTPUT_FORMAT", "SEARCH_DIR", "OUTPUT_ARCH", "AS_NEEDED"):
        if toks and toks[0] in ("SECTIONS", "MEMORY", "PHDRS", "ENTRY", "VERSION", "INCLUDE", "PROVIDE"):
            raise Unsupported(f"linker script command {toks[0]} in {path}")
        raise BadInput(f"{path}: file format not recognized")
    if depth > 8:
        raise BadInput(f"{path}: linker scripts nested too deeply")
    i = 0

    def parens():
        nonlocal i
        if i >= len(toks) or toks[i] != "(":
            raise BadInput(f"{path}: syntax error in linker script near '{toks[i - 1]}'")
        depth_ = 0
        start = i + 1
        while i < len(toks):
            if toks[i] == "(":
                depth_ += 1
            elif toks[i] == ")":
                depth_ -= 1
                if depth_ == 0:
                    i += 1
                    return toks[start:i - 1]
            i += 1
        raise BadInput(f"{path}: syntax error in linker script: unbalanced parentheses")

    base = os.path.dirname(path)
    while i < len(toks):
        cmd = toks[i]
        i += 1
        if cmd == ";":
            continue
        if cmd in ("OUTPUT_FORMAT", "OUTPUT_ARCH", "SEARCH_DIR"):
            parens()
        elif cmd in ("GROUP", "INPUT"):
            body = parens()
            if cmd == "GROUP":
                items.append(InputItem("group-start"))
            _script_inputs(path, base, body, arg, opts, items, diag, depth, False)
            if cmd == "GROUP":
                items.append(InputItem("group-end"))
        else:
            raise Unsupported(f"linker script command {cmd} in {path}")


def _script_inputs(path, base, body, arg, opts, items, diag, depth, as_needed):
    from dataclasses import replace
    j = 0
    while j < len(body):
        t = body[j]
        if t == "AS_NEEDED":
            k = j + 2
            level = 1
            while k < len(body) and level:
                level += {"(": 1, ")": -1}.get(body[k], 0)
                k += 1
            _script_inputs(path, base, body[j + 2:k - 1], arg, opts, items, diag, depth, True)
            j = k
            continue
        sub = replace(arg, as_needed=arg.as_needed or as_needed)
        if t.startswith("-l"):
            p = find_library(t[2:], opts, arg.static or opts.static)
            if p is None:
                diag.error(f"cannot find {t}: No such file or directory")
            else:
                _read_file(p, sub, opts, items, diag, depth + 1)
        else:
            p = t
            if os.path.isabs(t) and opts.sysroot and _inside(path, opts.sysroot):
                p = t = opts.sysroot.rstrip("/") + t     # a sysroot's script names files in the sysroot
            elif t.startswith("=") and opts.sysroot:
                p = t = opts.sysroot.rstrip("/") + t[1:]
            if not os.path.isabs(t) and not os.path.exists(t):
                cands = [os.path.join(base, t)] + [os.path.join(d, t) for d in opts.lib_dirs]
                p = next((c for c in cands if os.path.exists(c)), t)
            if not os.path.exists(p):
                diag.error(f"cannot find {t} (named in {path})")
            else:
                _read_file(p, sub, opts, items, diag, depth + 1)
        j += 1


def _inside(path, root):
    root = os.path.realpath(root)
    return os.path.realpath(path).startswith(root.rstrip("/") + "/")


# --- ELF relocatable objects -----------------------------------------------------

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

def _parse_archive(ar):
    v = ar.view
    n = len(v)
    off = 8
    longnames = b""
    index_raw = None
    index64 = False
    while off < n:
        if off + 60 > n:
            if bytes(v[off:n]).strip(b"\n") == b"":
                break
            raise BadInput(f"{ar.name}: truncated archive (member header at offset {off} cut short)")
        hdr = bytes(v[off:off + 60])
        if hdr[58:60] != b"`\n":
            raise BadInput(f"{ar.name}: malformed archive (bad member header at offset {off})")
        try:
            size = int(hdr[48:58].decode().strip() or 0)
        except ValueError:
            raise BadInput(f"{ar.name}: malformed archive (bad member size at offset {off})") from None
        if size < 0:
            raise BadInput(f"{ar.name}: malformed archive (bad member size at offset {off})")
        data = off + 60
        if data + size > n:
            raise BadInput(f"{ar.name}: truncated archive (member at offset {off} needs {size} bytes, "
                           f"{n - data} left)")
        raw_name = hdr[:16].decode("ascii", "replace").rstrip()
        if raw_name == "/":
            index_raw = (data, size)
        elif raw_name == "/SYM64/":
            index_raw, index64 = (data, size), True
        elif raw_name == "//":
            longnames = bytes(v[data:data + size])
        else:
            if raw_name.startswith("/") and raw_name[1:].isdigit():
                p = int(raw_name[1:])
                end = longnames.find(b"/\n", p)
                mname = longnames[p:end if end >= 0 else None].decode("utf-8", "replace")
            else:
                mname = raw_name[:-1] if raw_name.endswith("/") else raw_name
            ar.members.append((off, mname, data, size))
        off = data + size + (size & 1)
    if index_raw is not None:
        d, size = index_raw
        w = 8 if index64 else 4
        fmt = ">Q" if index64 else ">I"
        import struct
        if size < w:
            raise BadInput(f"{ar.name}: malformed archive symbol index")
        count = struct.unpack_from(fmt, v, d)[0]
        if w + count * w > size:
            raise BadInput(f"{ar.name}: malformed archive symbol index (claims {count} symbols)")
        offsets = struct.unpack_from(f">{count}{fmt[1]}", v, d + w)
        names = bytes(v[d + w + count * w:d + size]).split(b"\0")
        idx = ar.index
        for k in range(count):
            nm = names[k].decode("utf-8", "replace")
            if nm not in idx:
                idx[nm] = offsets[k]
    elif ar.members:
        _build_index(ar)


def _build_index(ar):
    """An archive without a symbol index (no ranlib): read every member's globals."""
    for h, mname, off, size in ar.members:
        if ar.view[off:off + 4] != elf.ELFMAG:
            continue
        obj = ar.loaded[h] = ar.member(h)
        for name, info, other, shndx, value, sz in obj.raw_syms[obj.first_global:]:
            if shndx != elf.SHN_UNDEF and name and name not in ar.index:
                ar.index[name] = h


# --- shared libraries ----------------------------------------------------------------

def _parse_shared(so):
    _backstop(_parse_shared_checked, so, "shared library")


def _parse_shared_checked(so):
    _, shdrs, shstrndx = _elf_header(so)
    v = so.view
    dynsym = versym = verdef = dynamic = None
    for sh in shdrs:
        t = sh[1]
        if t == elf.SHT_DYNSYM:
            dynsym = sh
        elif t == elf.SHT_GNU_VERSYM:
            versym = sh
        elif t == elf.SHT_GNU_VERDEF:
            verdef = sh
        elif t == elf.SHT_DYNAMIC:
            dynamic = sh
        if sh[2] & elf.SHF_ALLOC:
            so.section_aligns.append((sh[3], sh[3] + sh[5], sh[8] or 1))
    if dynsym is None:
        raise BadInput(f"{so.name}: shared library has no dynamic symbol table")
    if dynsym[6] >= len(shdrs):
        raise _bad(so, f"dynamic symbol table's string table index {dynsym[6]} out of range")
    strs = _Strtab(v, shdrs[dynsym[6]][4], shdrs[dynsym[6]][5], so.name)
    if dynamic is not None:
        for tag, val in elf.DYN.iter_unpack(_table(so, dynamic, -1, elf.DYN.size, "dynamic")):
            if tag == elf.DT_SONAME:
                so.soname = strs.get(val)
            elif tag == elf.DT_NULL:
                break
    vnames = {}
    if verdef is not None:
        off = verdef[4]
        for _ in range(verdef[7]):
            vd_version, vd_flags, vd_ndx, vd_cnt, vd_hash, vd_aux, vd_next = \
                __import__("struct").unpack_from("<HHHHIII", v, off)
            name_off = elf.U32.unpack_from(v, off + vd_aux)[0]
            vnames[vd_ndx] = strs.get(name_off)
            if not vd_next:
                break
            off += vd_next
    vers = None
    if versym is not None:
        vers = memoryview(bytes(_table(so, versym, -1, 2, "symbol version"))).cast("H")
    defs = so.defs
    by_value = so.by_value
    get = strs.get
    for k, (n, info, other, shndx, value, size) in enumerate(elf.SYM.iter_unpack(_table(so, dynsym, -1, elf.SYM.size, "dynamic symbol table"))):
        if k == 0:
            continue
        bind = info >> 4
        if bind == elf.STB_LOCAL:
            continue
        name = get(n)
        if shndx == elf.SHN_UNDEF:
            so.undefs.add(name)
            continue
        ver = None
        if vers is not None and k < len(vers):
            vi = vers[k]
            if vi & elf.VERSYM_HIDDEN:
                continue  # a non-default version (name@VER): only explicit requests bind to it
            vi &= 0x7FFF
            if vi >= 2:
                ver = vnames.get(vi)
        defs[name] = (value, size, info & 0xF, bind, ver, shndx)
        if info & 0xF == elf.STT_OBJECT:
            by_value.setdefault(value, []).append(name)
