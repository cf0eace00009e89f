"""Linker-made sections, each behind one small interface (after lld's SyntheticSection).

    size()        bytes it occupies; fixed once created (called by layout)
    is_needed()   whether it appears in the output at all
    finalize(lk)  compute contents that depend on addresses (after layout)
    write_to(buf, lk) -> int   write itself into the output image; returns bytes written,
                  which the writer checks against size() (wild's "filled == reserved")

Input: Options, Mode, Resolution, Liveness, Needs (all only read). Output:
Synthetics. The GOT/PLT/dynamic-symbol index of each symbol is kept by the
section that owns the slot (Got.index, Got.tp_index, Plt.index, DynSym.index),
and BssAlloc.placed holds where common symbols and copy-relocated data sit in
.bss: no Symbol is changed. Addresses come from the Layout (lk.addr_of[section]).

Dynamic relocations: .rela.dyn holds RELATIVE first (DT_RELACOUNT lets ld.so
do them fast), then GLOB_DAT, R_X86_64_64, TPOFF64 and COPY. .rela.plt holds
JUMP_SLOT for imported functions and IRELATIVE for the executable's own IFUNCs;
it runs after .rela.dyn, so IFUNC resolvers see relocated data. In a static
non-PIE executable .rela.plt is glibc's .rela.iplt, found by apply_irel()
through __rela_iplt_start/__rela_iplt_end.
"""
import hashlib
import os
import struct
from dataclasses import dataclass

from linkwrap.ld import elf
from linkwrap.ld import x86_64
from linkwrap.ld.diag import Unsupported
from linkwrap.ld.options import dynamic_list_matcher
from linkwrap.ld.scan import preemptible


class Synthetic:
    type = elf.SHT_PROGBITS
    flags = elf.SHF_ALLOC
    align = 8
    entsize = 0
    file = None
    link = None       # another Synthetic whose output section index goes in sh_link
    info = 0

    def __init__(self, name):
        self.name = name

    def size(self) -> int:
        raise NotImplementedError

    def is_needed(self) -> bool:
        return self.size() > 0

    def finalize(self, lk) -> None:
        pass

    def write_to(self, buf, lk) -> int:
        return 0

    def __repr__(self):
        return f"<synthetic {self.name}>"


def _put(buf, off, data):
    buf[off:off + len(data)] = data
    return len(data)


class Interp(Synthetic):
    def __init__(self, path):
        super().__init__(".interp")
        self.align = 1
        self.data = path.encode() + b"\0"

    def size(self):
        return len(self.data)

    def write_to(self, buf, lk):
        return _put(buf, lk.offset_of(self), self.data)


class Comment(Synthetic):
    """'Linker: linkwrap.ld <version>' in .comment, as lld and mold identify themselves."""
    flags = elf.SHF_MERGE | elf.SHF_STRINGS
    align = 1
    entsize = 1

    def __init__(self):
        super().__init__(".comment")
        from linkwrap import __version__
        self.data = f"Linker: linkwrap.ld {__version__}".encode() + b"\0"

    def size(self):
        return len(self.data)

    def write_to(self, buf, lk):
        return _put(buf, lk.offset_of(self), self.data)


class MergedSection(Synthetic):
    """SHF_MERGE input sections of one output name, flags, entry size and alignment, with each
    distinct string (SHF_STRINGS) or constant stored once, as GNU ld merges them.

    pieces: input section -> (its piece offsets, their offsets here), sorted; an address inside
    an input section maps to the same place inside its piece's copy (offset_in)."""

    def __init__(self, name, flags, entsize, align, sections):
        super().__init__(name)
        self.flags = flags
        self.entsize = entsize
        self.align = align
        self.type = elf.SHT_PROGBITS
        self.inputs = sections
        data = bytearray()
        seen = {}
        pieces = self.pieces = {}
        self.starts = {}          # input section -> {piece offset: its offset here}: most references
        strings = flags & elf.SHF_STRINGS
        for sec in sections:
            ins, outs = [], []
            for start, piece in _split_pieces(bytes(sec.bytes()), entsize, strings):
                off = seen.get(piece)
                if off is None:
                    pad = -len(data) % align
                    data += b"\0" * pad
                    off = seen[piece] = len(data)
                    data += piece
                ins.append(start)
                outs.append(off)
            pieces[sec] = (ins, outs)
            self.starts[sec] = dict(zip(ins, outs))
        self.data = bytes(data)

    def offset_in(self, sec, off):
        hit = self.starts[sec].get(off)
        if hit is not None:
            return hit
        import bisect
        ins, outs = self.pieces[sec]
        k = bisect.bisect_right(ins, off) - 1
        if k < 0:
            return off
        return outs[k] + off - ins[k]

    def size(self):
        return len(self.data)

    def is_needed(self):
        return True

    def write_to(self, buf, lk):
        return _put(buf, lk.offset_of(self), self.data)


def _split_pieces(data, entsize, strings):
    """-> [(offset, bytes)]: NUL-terminated strings (in units of entsize) or fixed-size entries."""
    out = []
    if not strings:
        return [(k, data[k:k + entsize]) for k in range(0, len(data), entsize)]
    if entsize == 1:
        pos = 0
        for part in data.split(b"\0")[:-1]:
            out.append((pos, part + b"\0"))
            pos += len(part) + 1
        if pos < len(data):
            out.append((pos, data[pos:]))     # no terminating NUL: kept whole, as it is
        return out
    pos = start = 0
    zero = b"\0" * entsize
    while pos < len(data):
        if data[pos:pos + entsize] == zero:
            out.append((start, data[start:pos + entsize]))
            start = pos + entsize
        pos += entsize
    if start < len(data):
        out.append((start, data[start:]))
    return out


def merge_sections(opts, live):
    """The MergedSections for the live SHF_MERGE sections that can be merged: sections with
    relocations of their own, or whose size is no multiple of the entry size, stay as they are."""
    from linkwrap.ld.layout import output_name
    groups = {}
    for sec in live.sections:
        f = sec.flags
        if not f & elf.SHF_MERGE or not sec.entsize or sec.size % sec.entsize or sec.rela is not None \
                or sec.type != elf.SHT_PROGBITS or f & elf.SHF_TLS:
            continue
        if not f & elf.SHF_ALLOC and (opts.strip_all or (opts.strip_debug and sec.name.startswith(".debug"))):
            continue
        key = (output_name(sec), f & ~elf.SHF_GROUP, sec.entsize, sec.align)
        groups.setdefault(key, []).append(sec)
    return [MergedSection(name, flags, entsize, align, secs) for (name, flags, entsize, align), secs in groups.items()]


class StrTab(Synthetic):
    """A string table: each name once, NUL-terminated, its offset fixed when it is added.
    As such it is .strtab (the names .symtab uses); DynStr is the loaded .dynstr."""
    type = elf.SHT_STRTAB
    flags = 0
    align = 1

    def __init__(self, name=".strtab", offsets=None):
        super().__init__(name)
        self.data = bytearray(b"\0")
        self.offsets = dict(offsets or {})

    def add(self, name: str) -> int:
        off = self.offsets.get(name)
        if off is None:
            off = self.offsets[name] = len(self.data)
            self.data += name.encode() + b"\0"
        return off

    def size(self):
        return len(self.data)

    def write_to(self, buf, lk):
        return _put(buf, lk.offset_of(self), self.data)


class SymTab(Synthetic):
    """.symtab as GNU ld writes it: per object its STT_FILE symbol and its locals (no section
    symbols, no .L labels), hidden globals made local, then the globals (a library's as
    `name@VERSION`, undefined). Which symbols is decided at creation; values after layout."""
    type = elf.SHT_SYMTAB
    flags = 0
    entsize = 24

    def __init__(self, res, live, copied, localized=frozenset()):
        """localized: a shared object's globals its version scripts made local (GNU ld lists them
        with the locals)."""
        super().__init__(".symtab")
        strtab = self.link = StrTab()
        local, glob = [], []
        alive = live.alive
        kinds = (elf.STT_NOTYPE, elf.STT_OBJECT, elf.STT_FUNC, elf.STT_TLS, elf.STT_GNU_IFUNC)
        for obj in res.objects:
            for s in res.syms[obj][1:obj.first_global]:
                if s.type == elf.STT_FILE:
                    local.append(s)
                elif (s.type in kinds and s.name and not s.name.startswith(".L")
                      and (s.is_abs or s.section in alive)):
                    local.append(s)
        for s in res.symtab.values():
            if s.file is not None and s.section is not None and s.section not in alive:
                continue      # a COMDAT loser's or gc's: not in the output
            if not (s.defined or s.strong_ref) or (s.dso is not None and s not in copied and not s.strong_ref
                                                    and s.bind != elf.STB_WEAK):
                continue
            if s.dso is None and s.defined and (s.visibility in (elf.STV_HIDDEN, elf.STV_INTERNAL) or s in localized):
                local.append(s)
            else:
                glob.append(s)
        self.symbols = local + glob
        self.info = 1 + len(local)
        self.names = [strtab.add(self._name(s)) for s in self.symbols]
        self.strtab = strtab
        self.values = b""

    @staticmethod
    def _name(s):
        return f"{s.name}@{s.version}" if s.dso is not None and s.version else s.name

    def size(self):
        return 24 * (1 + len(self.symbols))

    def finalize(self, lk):
        out = bytearray(24)
        bss = lk.synth.bss
        for k, (s, name) in enumerate(zip(self.symbols, self.names)):
            bind = elf.STB_LOCAL if k + 1 < self.info else (s.bind if s.bind in (elf.STB_WEAK, elf.STB_GNU_UNIQUE)
                                                            else elf.STB_GLOBAL)
            other = s.visibility
            if s.type == elf.STT_FILE:
                out += elf.SYM.pack(name, (elf.STB_LOCAL << 4) | elf.STT_FILE, 0, elf.SHN_ABS, 0, 0)
                continue
            value, shndx = 0, elf.SHN_UNDEF
            if s.section is not None:
                o = lk.osec_of.get(s.section)
                if o is None:
                    shndx = elf.SHN_ABS   # its section was stripped (-S): the symbol stays, as in GNU ld
                else:
                    value, shndx = lk.real_addr(s), o.index
            elif s in bss.placed:
                value, shndx = lk.real_addr(s), lk.osec_of[bss].index
            elif s.is_abs:
                value, shndx = s.value, elf.SHN_ABS
            elif s.linker_defined:
                value = lk.real_addr(s)
                shndx = lk.shndx_of_addr(value)
            elif s.dso is not None:
                value = lk.sym_addr(s) if s in lk.synth.canonical else 0
            if shndx == elf.SHN_UNDEF:     # an import is as strong as the references to it
                bind = elf.STB_GLOBAL if s.strong_ref else elf.STB_WEAK
            if s.type == elf.STT_TLS and shndx != elf.SHN_UNDEF:
                value -= lk.tls_start       # a TLS symbol's value is its offset in the TLS segment
            stype = s.type if s.type != elf.STT_GNU_IFUNC or s.dso is None else elf.STT_FUNC
            out += elf.SYM.pack(name, (bind << 4) | stype, other, shndx, value & 0xFFFFFFFFFFFFFFFF, s.size)
        self.values = bytes(out)

    def write_to(self, buf, lk):
        return _put(buf, lk.offset_of(self), self.values)


class BuildId(Synthetic):
    type = elf.SHT_NOTE
    align = 4

    def __init__(self, style):
        super().__init__(".note.gnu.build-id")
        self.style = style
        if style.startswith("0x"):
            self.desc_len = len(bytes.fromhex(style[2:]))
        else:
            self.desc_len = {"sha1": 20, "md5": 16, "uuid": 16}[style]

    def size(self):
        return 16 + self.desc_len

    def write_to(self, buf, lk):
        # name "GNU", type NT_GNU_BUILD_ID (3); the digest is filled by fill_digest() at the very end
        head = struct.pack("<III", 4, self.desc_len, 3) + b"GNU\0"
        return _put(buf, lk.offset_of(self), head + b"\0" * self.desc_len)

    def fill_digest(self, buf, lk):
        if self.style == "sha1":
            d = hashlib.sha1(buf).digest()
        elif self.style == "md5":
            d = hashlib.md5(buf).digest()
        elif self.style == "uuid":
            import os
            d = os.urandom(16)
        else:
            d = bytes.fromhex(self.style[2:])
        off = lk.offset_of(self)
        buf[off + 16:off + 16 + self.desc_len] = d


class PropertyNote(Synthetic):
    """.note.gnu.property: the inputs' x86 properties merged as GNU ld merges them."""
    type = elf.SHT_NOTE

    def __init__(self, props):
        super().__init__(".note.gnu.property")
        desc = b"".join(struct.pack("<IIII", t, 4, v, 0) for t, v in sorted(props.items()))
        self.data = struct.pack("<III", 4, len(desc), 5) + b"GNU\0" + desc   # NT_GNU_PROPERTY_TYPE_0

    def size(self):
        return len(self.data)

    def write_to(self, buf, lk):
        return _put(buf, lk.offset_of(self), self.data)


FEATURE_1_AND, ISA_1_NEEDED = 0xC0000002, 0xC0008002
FEATURE_1_IBT, FEATURE_1_SHSTK = 1, 2


def merge_properties(opts, objects) -> dict:
    """{pr_type: value} for the output (elfxx-x86.c's rules): an AND property survives only if every
    object has it; an OR property is the union of those that have it; an OR-AND property needs
    every object to have it. -z ibt / -z shstk force their bit, -z x86-64-vN adds an ISA level."""
    from linkwrap.ld.parse import PROPERTY_AND, PROPERTY_OR, PROPERTY_OR_AND
    lists = [obj.properties or {} for obj in objects]
    everyone = [obj.properties is not None for obj in objects]
    out = {}
    types = set().union(*lists) if lists else set()
    for t in types:
        have = [p[t] for p in lists if t in p]
        if t in PROPERTY_OR:
            out[t] = _or(have)
        elif (t in PROPERTY_AND or t in PROPERTY_OR_AND) and len(have) == len(lists) and all(everyone):
            v = have[0]
            for x in have[1:]:
                v = (v & x) if t in PROPERTY_AND else (v | x)
            out[t] = v
    forced = (FEATURE_1_IBT if opts.z_ibt else 0) | (FEATURE_1_SHSTK if opts.z_shstk else 0)
    if forced:
        out[FEATURE_1_AND] = out.get(FEATURE_1_AND, 0) | forced
    if opts.z_isa:
        out[ISA_1_NEEDED] = out.get(ISA_1_NEEDED, 0) | opts.z_isa
    return {t: v for t, v in out.items() if v}


def _or(values):
    v = 0
    for x in values:
        v |= x
    return v


class DynStr(StrTab):
    flags = elf.SHF_ALLOC

    def __init__(self):
        super().__init__(".dynstr", {"": 0})

    def is_needed(self):
        return True


class DynSym(Synthetic):
    """The null symbol, the imports (undefined, not hashed), then the defined exports (hashed)."""
    type = elf.SHT_DYNSYM
    entsize = 24
    info = 1

    def __init__(self, dynstr, imports, exports, copied, canonical=frozenset()):
        super().__init__(".dynsym")
        self.link = dynstr
        self.dynstr = dynstr
        self.copied = copied
        self.canonical = canonical
        # a canonical PLT entry is looked up like a definition: it goes in the hashed part
        undefined = [s for s in imports if s not in copied and s not in canonical]
        defined = [s for s in imports if s in copied or s in canonical] + [s for s in exports if s not in copied]
        self.symoffset = 1 + len(undefined)
        self.nbuckets = max(1, len(defined) // 8 + 1) if defined else 1
        defined.sort(key=lambda s: elf.gnu_hash(s.name.encode()) % self.nbuckets)
        self.symbols = undefined + defined
        self.index = {}           # Symbol -> its .dynsym index
        for i, s in enumerate(self.symbols, 1):
            self.index[s] = i
            dynstr.add(s.name)

    def size(self):
        return 24 * (1 + len(self.symbols))

    def is_needed(self):
        return True

    def write_to(self, buf, lk):
        off = lk.offset_of(self)
        out = bytearray(24)
        copied = self.copied
        bss_placed = lk.synth.bss.placed
        for s in self.symbols:
            name = self.dynstr.offsets[s.name]
            if s in copied or (s.dso is None and s.defined):
                stype = elf.STT_FUNC if s.type == elf.STT_GNU_IFUNC else s.type
                bind = s.bind if s.bind in (elf.STB_WEAK, elf.STB_GNU_UNIQUE) else elf.STB_GLOBAL
                if s.section is not None:
                    shndx = lk.osec_of[s.section].index
                elif s in bss_placed:
                    shndx = lk.osec_of[lk.synth.bss].index
                elif s.is_abs:
                    shndx = elf.SHN_ABS
                else:
                    shndx = lk.shndx_of_addr(lk.sym_addr(s))
                # a definition's own address (a shared object's PLT entry for it is only for its calls)
                value = lk.real_addr(s) if s.dso is None and not s.is_ifunc else lk.sym_addr(s)
                if stype == elf.STT_TLS:
                    value -= lk.tls_start     # a TLS symbol's value is its offset in the TLS segment
                out += elf.SYM.pack(name, (bind << 4) | stype, s.visibility if s.dso is None else 0, shndx,
                                    value, s.size)
            else:
                stype = elf.STT_FUNC if s.type == elf.STT_GNU_IFUNC else s.type
                bind = elf.STB_GLOBAL if s.strong_ref else elf.STB_WEAK
                # a canonical PLT entry is the function's address for the whole process
                value = lk.sym_addr(s) if s in self.canonical else 0
                out += elf.SYM.pack(name, (bind << 4) | stype, 0, 0, value, 0)
        return _put(buf, off, out)


class GnuHash(Synthetic):
    type = elf.SHT_GNU_HASH

    def __init__(self, dynsym):
        super().__init__(".gnu.hash")
        self.link = dynsym
        self.dynsym = dynsym
        n = len(dynsym.symbols) + 1 - dynsym.symoffset
        words = 1
        while words * 64 < n * 12:     # about 12 bits per symbol keeps false positives low
            words *= 2
        self.bloom_words = words
        self.count = n

    def size(self):
        return 16 + 8 * self.bloom_words + 4 * self.dynsym.nbuckets + 4 * self.count

    def is_needed(self):
        return True

    def write_to(self, buf, lk):
        ds = self.dynsym
        nb, shift, words = ds.nbuckets, 26, self.bloom_words
        hashed = ds.symbols[ds.symoffset - 1:]
        hashes = [elf.gnu_hash(s.name.encode()) for s in hashed]
        bloom = [0] * words
        buckets = [0] * nb
        chain = [0] * len(hashed)
        for i, h in enumerate(hashes):
            bloom[(h // 64) % words] |= (1 << (h % 64)) | (1 << ((h >> shift) % 64))
            b = h % nb
            if buckets[b] == 0:
                buckets[b] = ds.symoffset + i
            last = i + 1 == len(hashed) or hashes[i + 1] % nb != b
            chain[i] = (h & ~1) | (1 if last else 0)
        data = struct.pack(f"<IIII{words}Q{nb}I{len(chain)}I", nb, ds.symoffset, words, shift,
                           *bloom, *buckets, *chain)
        return _put(buf, lk.offset_of(self), data)


class VerNeed(Synthetic):
    type = elf.SHT_GNU_VERNEED

    def __init__(self, dynstr, dynsym, needed, first=2):
        super().__init__(".gnu.version_r")
        self.link = dynstr
        per_file = {}
        order = [so.soname for so in needed]
        for s in dynsym.symbols:
            if s.dso is not None and s.version:
                per_file.setdefault(s.dso.soname, {})
        nxt = first             # after the versions this output defines (.gnu.version_d)
        for s in dynsym.symbols:
            if s.dso is not None and s.version:
                vers = per_file[s.dso.soname]
                if s.version not in vers:
                    vers[s.version] = nxt
                    nxt += 1
        self.files = [(f, per_file[f]) for f in order if f in per_file] + \
                     [(f, v) for f, v in per_file.items() if f not in order]
        for f, vers in self.files:
            dynstr.add(f)
            for v in vers:
                dynstr.add(v)
        self.dynstr = dynstr
        self.info = len(self.files)

    def version_index(self, s):
        if s.dso is not None and s.version:
            for f, vers in self.files:
                if f == s.dso.soname:
                    return vers[s.version]
        return elf.VER_NDX_GLOBAL

    def size(self):
        return sum(16 + 16 * len(v) for _, v in self.files)

    def write_to(self, buf, lk):
        out = bytearray()
        st = self.dynstr.offsets
        for k, (f, vers) in enumerate(self.files):
            nxt = 0 if k + 1 == len(self.files) else 16 + 16 * len(vers)
            out += struct.pack("<HHIII", 1, len(vers), st[f], 16, nxt)
            items = list(vers.items())
            for j, (v, idx) in enumerate(items):
                out += struct.pack("<IHHII", elf.elf_hash(v.encode()), 0, idx, st[v],
                                   0 if j + 1 == len(items) else 16)
        return _put(buf, lk.offset_of(self), out)


class VerDef(Synthetic):
    """.gnu.version_d: the versions a shared object defines: its base version (named by its
    soname), then each named node of the version script with the nodes it depends on."""
    type = elf.SHT_GNU_VERDEF
    align = 8

    def __init__(self, dynstr, script, base_name, version):
        super().__init__(".gnu.version_d")
        self.link = dynstr
        self.dynstr = dynstr
        self.version = version       # exported Symbol -> version index
        nodes = [n for n in script.nodes if n.name] if script is not None else []
        self.defs = [(1, 1, base_name, ())] + [(n.index, 0, n.name, n.parents) for n in nodes]
        for _, _, name, parents in self.defs:
            dynstr.add(name)
        self.info = len(self.defs)

    def size(self):
        return sum(20 + 8 * (1 + len(p)) for _, _, _, p in self.defs)

    def is_needed(self):
        return len(self.defs) > 1

    def write_to(self, buf, lk):
        out = bytearray()
        st = self.dynstr.offsets
        for k, (idx, flags, name, parents) in enumerate(self.defs):
            names = (name,) + tuple(parents)
            size = 20 + 8 * len(names)
            out += struct.pack("<HHHHIII", 1, flags, idx, len(names), elf.elf_hash(name.encode()), 20,
                               0 if k + 1 == len(self.defs) else size)
            for j, n in enumerate(names):
                out += struct.pack("<II", st[n], 0 if j + 1 == len(names) else 8)
        return _put(buf, lk.offset_of(self), out)


class VerSym(Synthetic):
    type = elf.SHT_GNU_VERSYM
    align = 2
    entsize = 2

    def __init__(self, dynsym, verneed, verdef=None):
        super().__init__(".gnu.version")
        self.link = dynsym
        self.dynsym = dynsym
        self.verneed = verneed
        self.verdef = verdef

    def size(self):
        return 2 * (1 + len(self.dynsym.symbols))

    def is_needed(self):
        return self.verneed.size() > 0 or (self.verdef is not None and self.verdef.is_needed())

    def write_to(self, buf, lk):
        own = self.verdef.version if self.verdef is not None else {}
        vals = [0] + [own[s] if s in own else self.verneed.version_index(s) for s in self.dynsym.symbols]
        return _put(buf, lk.offset_of(self), struct.pack(f"<{len(vals)}H", *vals))


class RelaDyn(Synthetic):
    type = elf.SHT_RELA
    entsize = 24

    def __init__(self, name, reserved, dynsym):
        super().__init__(name)
        self.reserved = reserved
        self.link = dynsym
        self.relative = []        # (offset, addend)
        self.other = []           # (offset, info, addend)

    def size(self):
        return 24 * self.reserved

    def write_to(self, buf, lk):
        out = bytearray()
        for off, add in sorted(self.relative):
            out += elf.RELA.pack(off, elf.R_X86_64_RELATIVE, add)
        for off, info, add in self.other:
            out += elf.RELA.pack(off, info, add)
        return _put(buf, lk.offset_of(self), out)


class Got(Synthetic):
    """.got: address slots, thread-pointer-offset slots (initial-exec), and in a shared object
    (module, offset) pairs for general-dynamic TLS and one module pair for local-dynamic."""
    flags = elf.SHF_ALLOC | elf.SHF_WRITE

    def __init__(self, entries):
        super().__init__(".got")
        self.entries = entries
        self.index = {}           # Symbol -> slot holding its address
        self.tp_index = {}        # Symbol -> slot holding its TP offset
        self.gd_index = {}        # Symbol -> first slot of its (DTPMOD64, DTPOFF64) pair
        self.ld_index = None      # first slot of the local-dynamic (module, 0) pair
        self.first = []           # slot number of each entry
        n = 0
        for kind, s in entries:
            self.first.append(n)
            if kind == "addr":
                self.index[s] = n
            elif kind == "tp":
                self.tp_index[s] = n
            elif kind == "gd":
                self.gd_index[s] = n
            else:
                self.ld_index = n
            n += 2 if kind in ("gd", "ld") else 1
        self.n_slots = n
        self.values = []          # slot contents, filled by finalize

    def size(self):
        return 8 * self.n_slots

    def _actions(self, mode, copied):
        """(kind, symbol, slot, preemptible, the classifier's action for the slot) per entry."""
        out = x86_64.output_kind(mode)
        for (kind, s), slot in zip(self.entries, self.first):
            if kind == "ld":
                yield kind, s, slot, False, x86_64.DYNREL
                continue
            pre = not s.is_local and preemptible(s, mode, copied)
            cls = x86_64.sym_class(s, pre)
            yield kind, s, slot, pre, x86_64.action("gotslot" if kind == "addr" else "tpslot", 0, cls, out)

    def n_dynrel(self, mode, copied):
        """How many dynamic relocations finalize will add (for .rela.dyn's size)."""
        n = 0
        for kind, s, slot, pre, act in self._actions(mode, copied):
            if kind == "gd":
                n += 2 if pre else 1
            elif act is x86_64.DYNREL or act is x86_64.BASEREL:
                n += 1
        return n

    def finalize(self, lk):
        rela = lk.synth.rela_dyn
        dynidx = lk.synth.dynsym.index if lk.synth.dynsym is not None else {}
        vals = self.values = [0] * self.n_slots
        base = lk.addr_of[self]
        for kind, s, i, pre, act in self._actions(lk.mode, lk.synth.copied):
            slot = base + 8 * i
            if kind == "ld":
                rela.other.append((slot, elf.R_X86_64_DTPMOD64, 0))    # this module; offset 0
            elif kind == "gd":
                if pre:
                    rela.other.append((slot, (dynidx[s] << 32) | elf.R_X86_64_DTPMOD64, 0))
                    rela.other.append((slot + 8, (dynidx[s] << 32) | elf.R_X86_64_DTPOFF64, 0))
                else:      # this module's variable: its offset in the block is known here
                    rela.other.append((slot, elf.R_X86_64_DTPMOD64, 0))
                    vals[i + 1] = lk.dtp_offset(lk.sym_addr(s))
            elif kind == "addr":
                if act is x86_64.DYNREL:
                    rela.other.append((slot, (dynidx[s] << 32) | elf.R_X86_64_GLOB_DAT, 0))
                else:
                    a = lk.sym_addr(s)
                    if act is x86_64.BASEREL:
                        rela.relative.append((slot, a))
                    vals[i] = a
            elif act is x86_64.DYNREL:
                if pre:
                    rela.other.append((slot, (dynidx[s] << 32) | elf.R_X86_64_TPOFF64, 0))
                else:      # a shared object's own variable: the loader knows where its block is
                    rela.other.append((slot, elf.R_X86_64_TPOFF64, lk.dtp_offset(lk.sym_addr(s))))
            else:
                vals[i] = lk.tp_offset(lk.sym_addr(s))

    def write_to(self, buf, lk):
        return _put(buf, lk.offset_of(self), struct.pack(f"<{len(self.values)}q", *self.values))


class GotPlt(Synthetic):
    flags = elf.SHF_ALLOC | elf.SHF_WRITE

    def __init__(self, plt_syms, needed):
        super().__init__(".got.plt")
        self.n = len(plt_syms)
        self.needed = needed

    def size(self):
        return 8 * (3 + self.n)

    def is_needed(self):
        return self.needed or self.n > 0

    def slot(self, lk, i):
        return lk.addr_of[self] + 8 * (3 + i)

    def write_to(self, buf, lk):
        vals = [lk.addr_of[lk.synth.dynamic] if lk.synth.dynamic else 0, 0, 0]
        plt = lk.synth.plt
        for i, s in enumerate(plt.symbols):
            vals.append(lk.real_addr(s) if s.is_ifunc else plt.entry_addr(lk, i) + 6)
        return _put(buf, lk.offset_of(self), struct.pack(f"<{len(vals)}Q", *vals))


class Plt(Synthetic):
    flags = elf.SHF_ALLOC | elf.SHF_EXECINSTR
    align = 16

    def __init__(self, symbols, lazy_header):
        super().__init__(".plt")
        self.symbols = symbols
        self.header = x86_64.PLT_ENTRY_SIZE if lazy_header and any(not s.is_ifunc for s in symbols) else 0
        self.index = {s: i for i, s in enumerate(symbols)}   # Symbol -> its PLT entry

    def size(self):
        return self.header + x86_64.PLT_ENTRY_SIZE * len(self.symbols)

    def entry_addr(self, lk, i):
        return lk.addr_of[self] + self.header + x86_64.PLT_ENTRY_SIZE * i

    def write_to(self, buf, lk):
        got = lk.synth.got_plt
        out = bytearray()
        addr = lk.addr_of[self]
        if self.header:
            out += x86_64.plt0(lk.addr_of[got], addr)
        for i, s in enumerate(self.symbols):
            out += x86_64.plt_entry(got.slot(lk, i), self.entry_addr(lk, i), i, addr, bool(self.header))
        return _put(buf, lk.offset_of(self), out)


class RelaPlt(Synthetic):
    type = elf.SHT_RELA
    flags = elf.SHF_ALLOC | elf.SHF_INFO_LINK
    entsize = 24

    def __init__(self, plt, dynsym):
        super().__init__(".rela.plt")
        self.plt = plt
        self.link = dynsym

    def size(self):
        return 24 * len(self.plt.symbols)

    def write_to(self, buf, lk):
        out = bytearray()
        got = lk.synth.got_plt
        dynsym = lk.synth.dynsym
        for i, s in enumerate(self.plt.symbols):
            if s.is_ifunc:
                # the slot gets what the resolver returns; the addend is the resolver's address
                out += elf.RELA.pack(got.slot(lk, i), elf.R_X86_64_IRELATIVE, lk.real_addr(s))
            else:
                out += elf.RELA.pack(got.slot(lk, i), (dynsym.index[s] << 32) | elf.R_X86_64_JUMP_SLOT, 0)
        return _put(buf, lk.offset_of(self), out)


class Dynamic(Synthetic):
    type = elf.SHT_DYNAMIC
    flags = elf.SHF_ALLOC | elf.SHF_WRITE
    entsize = 16

    def __init__(self, opts, mode, dynstr, needed, present, synth_flags, init_fini):
        super().__init__(".dynamic")
        self.link = dynstr
        tags = []
        for so in needed:
            tags.append((elf.DT_NEEDED, dynstr.add(so.soname)))
        if opts.soname:
            tags.append((14, dynstr.add(opts.soname)))                  # DT_SONAME
        if opts.rpath:
            tags.append((29 if opts.new_dtags else 15, dynstr.add(":".join(opts.rpath))))  # DT_RUNPATH/DT_RPATH
        # DT_INIT/DT_FINI: the -init/-fini symbols (_init, _fini), when something defines them
        for t, sym in ((elf.DT_INIT, init_fini[0]), (elf.DT_FINI, init_fini[1])):
            if sym is not None:
                tags.append((t, sym))
        for name, t, tsz in ((".preinit_array", elf.DT_PREINIT_ARRAY, elf.DT_PREINIT_ARRAYSZ),
                             (".init_array", elf.DT_INIT_ARRAY, elf.DT_INIT_ARRAYSZ),
                             (".fini_array", elf.DT_FINI_ARRAY, elf.DT_FINI_ARRAYSZ)):
            if name in present:
                tags.append((t, name))
                tags.append((tsz, name + "#size"))
        tags += [(elf.DT_GNU_HASH, ".gnu.hash"), (elf.DT_STRTAB, ".dynstr"), (elf.DT_SYMTAB, ".dynsym"),
                 (elf.DT_STRSZ, ".dynstr#size"), (elf.DT_SYMENT, 24)]
        if not mode.shared:
            tags.append((elf.DT_DEBUG, 0))      # the debugger's hook into ld.so: executables only
        if synth_flags["plt"]:
            tags += [(elf.DT_PLTGOT, ".got.plt"), (elf.DT_PLTRELSZ, ".rela.plt#size"), (elf.DT_PLTREL, elf.DT_RELA),
                     (elf.DT_JMPREL, ".rela.plt")]
        if synth_flags["rela"]:
            tags += [(elf.DT_RELA, ".rela.dyn"), (elf.DT_RELASZ, ".rela.dyn#size"), (elf.DT_RELAENT, 24)]
        flags = opts.dt_flags | (elf.DF_BIND_NOW if opts.z_now else 0)
        if mode.shared and opts.bsymbolic == "all":
            flags |= 0x2                        # DF_SYMBOLIC
        if synth_flags.get("static_tls"):
            flags |= 0x10                       # DF_STATIC_TLS: initial-exec TLS in a shared object
        if flags:
            tags.append((elf.DT_FLAGS, flags))
        # NODELETE, INITFIRST, NOOPEN (-z nodelete/initfirst/nodlopen) mean something for shared objects only
        flags1 = (opts.dt_flags_1 if mode.shared else opts.dt_flags_1 & ~0x68) | \
            (elf.DF_1_NOW if opts.z_now else 0) | (elf.DF_1_PIE if mode.pic and not mode.shared else 0)
        if flags1:
            tags.append((elf.DT_FLAGS_1, flags1))
        if synth_flags["verneed"] or synth_flags.get("verdef"):
            tags.append((elf.DT_VERSYM, ".gnu.version"))
        if synth_flags.get("verdef"):
            tags += [(0x6FFFFFFC, ".gnu.version_d"), (0x6FFFFFFD, synth_flags["verdef"])]   # DT_VERDEF(NUM)
        if synth_flags["verneed"]:
            tags += [(elf.DT_VERNEED, ".gnu.version_r"), (elf.DT_VERNEEDNUM, synth_flags["verneed"])]
        if synth_flags["rela"]:
            tags.append((elf.DT_RELACOUNT, "#relcount"))
        tags.append((elf.DT_NULL, 0))
        self.tags = tags

    def size(self):
        return 16 * len(self.tags)

    def is_needed(self):
        return True

    def write_to(self, buf, lk):
        out = bytearray()
        for tag, v in self.tags:
            if not isinstance(v, (int, str)):
                v = lk.real_addr(v)       # a Symbol (DT_INIT, DT_FINI)
            elif isinstance(v, str):
                if v == "#relcount":
                    v = len(lk.synth.rela_dyn.relative)
                elif v.endswith("#size"):
                    v = lk.osec(v[:-5]).size
                else:
                    v = lk.osec(v).addr
            out += elf.DYN.pack(tag, v)
        return _put(buf, lk.offset_of(self), out)


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
        entries = _fde_table(buf, eh.offset, eh.addr, eh.size)
        if len(entries) != self.fde_count:
            raise AssertionError(f".eh_frame_hdr: found {len(entries)} FDEs, reserved {self.fde_count}")
        entries.sort()
        hdr = lk.addr_of[self]
        out = bytearray(struct.pack("<BBBBiI", 1, 0x1B, 0x03, 0x3B, eh.addr - (hdr + 4), len(entries)))
        for pc, fde in entries:
            out += struct.pack("<ii", pc - hdr, fde - hdr)
        return _put(buf, lk.offset_of(self), out)


# DW_EH_PE value formats (low nibble) -> (struct format, size): absptr, udata2/4/8, sdata2/4/8.
_EH_PE_FORMATS = {0x00: ("<Q", 8), 0x02: ("<H", 2), 0x03: ("<I", 4), 0x04: ("<Q", 8),
                  0x0A: ("<h", 2), 0x0B: ("<i", 4), 0x0C: ("<q", 8)}


def _read_encoded(buf, pos, enc, addr_of_pos):
    """A DW_EH_PE-encoded pointer at buf[pos] -> (value, size)."""
    layout = _EH_PE_FORMATS.get(enc & 0x0F)
    if layout is None:
        raise AssertionError(f"unsupported .eh_frame pointer encoding 0x{enc:x}")
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


def _fde_table(buf, off, addr, size):
    """(initial location, FDE address) for every FDE of the output .eh_frame."""
    entries = []
    cie_enc = {}
    pos = off
    end = off + size
    while pos + 4 <= end:
        length = struct.unpack_from("<I", buf, pos)[0]
        if length == 0:
            pos += 4
            continue
        cid = struct.unpack_from("<I", buf, pos + 4)[0]
        if cid == 0:
            p = pos + 9
            aug_end = buf.index(0, p)
            aug = bytes(buf[p:aug_end]).decode()
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
                        p += 1 + n
                    elif c == "L":
                        p += 1
            cie_enc[pos] = enc
        else:
            cie = pos + 4 - cid
            enc = cie_enc.get(cie, 0)
            pc, _ = _read_encoded(buf, pos + 8, enc, addr + (pos + 8 - off))
            entries.append((pc, addr + (pos - off)))
        pos += 4 + length
    return entries


class BssAlloc(Synthetic):
    """Common symbols and copy-relocated data, placed at the end of .bss.

    placed: Symbol -> offset in this section (commons, copies and their aliases);
    copied: the symbols a copy relocation brings into the executable."""
    type = elf.SHT_NOBITS
    flags = elf.SHF_ALLOC | elf.SHF_WRITE
    align = 1

    def __init__(self, commons, copies, symtab):
        super().__init__(".bss")
        placed = self.placed = {}
        copied = set()
        off = 0
        for s in sorted(commons, key=lambda s: -s.value):
            a = max(1, s.value)     # a common symbol's st_value is its alignment
            off = elf.align_up(off, a)
            self.align = max(self.align, a)
            placed[s] = off
            off += s.size
        self.copies = []
        self.primary = []         # the copies that get an R_X86_64_COPY (aliases share them)
        done = {}
        for s in copies:
            so = s.dso
            key = (so.name, s.value)
            if key in done:
                placed[s] = done[key]
                copied.add(s)
                continue
            a = _copy_align(so, s.value)
            off = elf.align_up(off, a)
            self.align = max(self.align, a)
            done[key] = off
            orig = s.value
            group = [s]
            # aliases (environ/__environ): the library's own references must find the copy too;
            # like GNU ld, the COPY relocation names the non-weak alias and that one is exported
            primary = s
            for name in so.by_value.get(orig, ()):
                if name == s.name:
                    continue
                v, sz, t, b, ver, _ = so.defs[name]
                a_sym = symtab.get(name)
                if a_sym is not None and a_sym.dso is not so:
                    continue            # defined by an object, or bound elsewhere: not this copy's alias
                if a_sym is None:
                    if b == elf.STB_WEAK or primary.bind != elf.STB_WEAK:
                        continue
                    # no object names it: a Symbol of this section's own, for .dynsym
                    from linkwrap.ld.resolve import Symbol
                    a_sym = Symbol(name)
                    a_sym.strong_ref = True
                    a_sym.dso, a_sym.version, a_sym.size, a_sym.type, a_sym.bind = so, ver, sz, t, b
                group.append(a_sym)
                if primary.bind == elf.STB_WEAK and b != elf.STB_WEAK:
                    primary = a_sym
            for g in group:
                placed[g] = off
                copied.add(g)
                if g not in self.copies:
                    self.copies.append(g)
            self.primary.append(primary)
            off += s.size
        self.copied = frozenset(copied)
        self.total = off

    def size(self):
        return self.total

    def finalize(self, lk):
        rela = lk.synth.rela_dyn
        for s in self.primary:     # copies exist only with shared libraries, so with .dynsym
            rela.other.append((lk.real_addr(s), (lk.synth.dynsym.index[s] << 32) | elf.R_X86_64_COPY, 0))


def _copy_align(so, value):
    for start, end, align in so.section_aligns:
        if start <= value < end:
            a = min(align, 64)
            break
    else:
        a = 16
    while a > 1 and value % a:
        a //= 2
    return max(a, 1)


@dataclass(frozen=True)
class Synthetics:
    all: tuple              # every synthetic section that is needed, in no particular order
    dynsym: object = None
    dynstr: object = None
    dynamic: object = None
    got: object = None
    got_plt: object = None
    plt: object = None
    rela_dyn: object = None
    rela_plt: object = None
    eh_frame_hdr: object = None
    build_id: object = None
    bss: object = None
    copies: tuple = ()
    copied: frozenset = frozenset()   # symbols bound to their copy in .bss (no longer preemptible)
    canonical: frozenset = frozenset()  # imported functions whose PLT entry is their address
    merged_of: dict = None            # SHF_MERGE input section -> the MergedSection holding its pieces
    gnu_osabi: bool = False           # EI_OSABI is ELFOSABI_GNU (an object defines IFUNC or unique symbols)


def create(opts, mode, res, live, needs, shared_exports=None) -> Synthetics:
    from linkwrap.ld.layout import output_name
    bss = BssAlloc(res.common, needs.copies, res.symtab)
    copied = bss.copied
    exports = []
    imports = list(needs.dynsyms)
    for s in bss.copies:
        if s not in imports:
            imports.append(s)
    dynsym = dynstr = dynamic = verneed = None
    got = Got(needs.got)
    plt = Plt(list(needs.plt), mode.dynamic)
    got_plt = GotPlt(needs.plt, needs.uses_got_base or bool(needs.plt) or mode.dynamic)
    n_got_rel = got.n_dynrel(mode, copied)
    n_dyn = needs.n_relative + needs.n_symbolic + n_got_rel + len(bss.primary)
    out = [bss, got, plt, got_plt]
    if mode.dynamic:
        dynstr = DynStr()
        listed = dynamic_list_matcher(opts.dynamic_list)
        verdef = None
        if shared_exports is not None:
            # a shared object: what the version scripts leave global, in symbol-table order
            version = dict(shared_exports.version)
            exports = [s for s in res.symtab.values() if s in version and (s.section is None or s.section in live.alive)]
            imports = [s for s in imports if s not in version]
            # GNU ld names each version node with an absolute symbol of that version, too
            from linkwrap.ld.resolve import Symbol
            for node in (shared_exports.script.nodes if shared_exports.script is not None else ()):
                if node.name:
                    v = Symbol(node.name)
                    v.is_abs, v.type = True, elf.STT_OBJECT
                    exports.append(v)
                    version[v] = node.index
            verdef = VerDef(dynstr, shared_exports.script, opts.soname or os.path.basename(opts.output), version)
        else:
            for name, s in res.symtab.items():
                if (s.file is not None and not s.is_local and s.visibility == elf.STV_DEFAULT and s.defined
                        and s not in copied and (opts.export_dynamic or name in res.dso_names or listed(name))):
                    exports.append(s)
        dynsym = DynSym(dynstr, imports, exports, copied, needs.canonical)
        verneed = VerNeed(dynstr, dynsym, res.needed, 1 + (verdef.info if verdef is not None else 1))
        versym = VerSym(dynsym, verneed, verdef)
        out += [dynstr, dynsym, verneed, versym, GnuHash(dynsym)]
        if verdef is not None:
            out.append(verdef)
        if mode.interp:
            out.append(Interp(opts.dynamic_linker))
    rela_dyn = RelaDyn(".rela.dyn", n_dyn, dynsym)
    rela_plt = RelaPlt(plt, dynsym)
    out += [rela_dyn, rela_plt]
    if mode.dynamic:
        present = {output_name(s) for s in live.sections}
        init_fini = tuple(_defined(res, name) for name in (opts.init, opts.fini))
        dynamic = Dynamic(opts, mode, dynstr, res.needed, present,
                          {"plt": rela_plt.size() > 0, "rela": n_dyn > 0,
                           "verneed": verneed.info if verneed.size() else 0,
                           "verdef": verdef.info if verdef is not None and verdef.is_needed() else 0,
                           "static_tls": mode.shared and bool(got.tp_index)}, init_fini)
        out.append(dynamic)
    eh_hdr = None
    if opts.eh_frame_hdr and live.eh_frames:
        eh_hdr = EhFrameHdr(live.fde_count)
        out.append(eh_hdr)
    build_id = None
    if opts.build_id:
        build_id = BuildId(opts.build_id)
        out.append(build_id)
    if not opts.strip_all:
        out.append(Comment())
        localized = frozenset()
        if shared_exports is not None:
            localized = frozenset(s for s in res.symtab.values() if s.file is not None and s.defined
                                  and s not in shared_exports.version)
        symtab = SymTab(res, live, copied, localized)
        out += [symtab, symtab.strtab]
    props = merge_properties(opts, res.objects)
    if props:
        if props.get(FEATURE_1_AND, 0) & FEATURE_1_IBT and needs.plt:
            # GNU ld then writes an IBT PLT (.plt.sec, endbr64 in every entry); these entries have none
            raise Unsupported("PLT entries in an IBT-enabled output (-z ibt, or every input marked IBT)")
        out.append(PropertyNote(props))
    merged = merge_sections(opts, live)
    out += merged
    needed_list = tuple(s for s in out if s.is_needed())
    return Synthetics(needed_list, dynsym, dynstr, dynamic, got, got_plt, plt, rela_dyn, rela_plt,
                      eh_hdr, build_id, bss, tuple(bss.copies), copied, needs.canonical,
                      {sec: m for m in merged for sec in m.inputs}, gnu_osabi(res))


def gnu_osabi(res) -> bool:
    """GNU ld marks the output ELFOSABI_GNU when an object (not a library) gives it a global
    STT_GNU_IFUNC or STB_GNU_UNIQUE symbol (elf_link_add_object_symbols' has_gnu_osabi)."""
    return any(s.file is not None and not s.is_local and
               (s.type == elf.STT_GNU_IFUNC or s.bind == elf.STB_GNU_UNIQUE) for s in res.symtab.values())


def _defined(res, name):
    s = res.symtab.get(name)
    return s if s is not None and s.defined and s.dso is None else None
