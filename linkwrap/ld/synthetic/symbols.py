"""Symbol tables and what describes them: .symtab, .dynsym, .gnu.hash, and the symbol versions
(.gnu.version, .gnu.version_r for what libraries define, .gnu.version_d for what a shared object
defines)."""
import struct
from itertools import compress, repeat
from operator import attrgetter, ne

from linkwrap.ld import elf
from linkwrap.ld.synthetic.base import _put, Synthetic
from linkwrap.ld.synthetic.strings import StrTab


_type_of = attrgetter("type")


class FileSymbol:
    """An STT_FILE symbol the linker writes (no object's): what .symtab's writer reads of one."""
    __slots__ = ("name",)
    type = elf.STT_FILE

    def __init__(self, name):
        self.name = name


def _file_name(obj):
    """The name GNU ld gives an object in its STT_FILE symbol: an archive member's name, else the
    file's base name."""
    if obj.archive is not None and obj.name.startswith(obj.archive.name + "(") and obj.name.endswith(")"):
        return obj.name[len(obj.archive.name) + 1:-1]
    return obj.name.rsplit("/", 1)[-1]


def is_local_label(name):
    """bfd's _bfd_elf_is_local_label_name: the assembler's local labels (.L*, ..*, _.L_*) and its
    fake symbols (L<digit>^A...; bfd's loop answers no for every other L<digits>^B form)."""
    return name.startswith((".L", "..", "_.L_")) or (name[:1] == "L" and name[1:2].isdigit() and name[2:3] == "\x01")


class SymTab(Synthetic):
    """.symtab as GNU ld writes it: per object its STT_FILE symbol and its locals (no section
    symbols, no local labels in SHF_MERGE sections: Options.discard says which), a shared object's
    hidden globals made local, then the globals (a library's as
    `name@VERSION`, undefined). Which symbols is decided at creation; values after layout."""
    type = elf.SHT_SYMTAB
    flags = 0
    entsize = 24

    def __init__(self, opts, res, live, copied, localized=frozenset(), undef_weak=False, forced=frozenset()):
        """forced: symbols kept whatever the rules above say (those --emit-relocs's relocations name,
        emit_relocs.referenced). undef_weak: the undefined weak symbols nothing defines are the loader's (GNU ld writes them
        then, WEAK UND, and not in a static link). localized: a shared object's globals its version scripts made local (GNU ld lists them
        with the locals)."""
        super().__init__(".symtab")
        strtab = self.link = StrTab()
        local, glob = [], []
        alive = live.alive
        keep = local.append
        kinds = frozenset((elf.STT_NOTYPE, elf.STT_OBJECT, elf.STT_FUNC, elf.STT_TLS, elf.STT_GNU_IFUNC))
        file_type = elf.STT_FILE
        not_section = repeat(elf.STT_SECTION)
        discard = opts.discard
        merge = elf.SHF_MERGE
        files = 0
        for obj in res.objects if discard != "all" else ():
            seg = res.syms[obj][1:obj.first_global]
            start, named = len(local), False
            # section symbols (two thirds of a Rust object's locals) never go in: passed over in C
            for s in compress(seg, map(ne, map(_type_of, seg), not_section)):
                t = s.type
                if t == file_type:
                    keep(s)
                    named = True
                elif t in kinds and (s.section in alive or s.is_abs):
                    n = s.name
                    # GNU ld's default drops local labels (.LC0) only in SHF_MERGE sections, -X
                    # all of them, --discard-none none
                    if n and (not (discard != "none" and is_local_label(n) and
                                   (discard == "labels" or (s.section is not None and s.section.flags & merge)))
                              or s in forced):
                        keep(s)
            if not named and len(local) > start:
                # GNU ld names an object without an STT_FILE symbol of its own by its file name
                local.insert(start, FileSymbol(_file_name(obj)))
                named = True
            files += named
        shared = opts.shared
        made_local = []
        for s in res.symtab.values():
            if s.file is not None and s.section is not None and s.section not in alive:
                continue      # a COMDAT loser's or gc's: not in the output
            # an undefined weak that nothing defines stays, WEAK UND, as GNU ld writes it
            if s not in forced and (not (s.defined or s.strong_ref or (undef_weak and s.dso is None)) or (
                    s.dso is not None and s not in copied and not s.strong_ref and s.bind != elf.STB_WEAK)):
                continue
            # GNU ld forces a shared object's hidden globals local (elf_link_output_extsym, their
            # visibility cleared); an executable keeps them GLOBAL HIDDEN
            if s.dso is None and s.defined and (s in localized or (
                    shared and s.visibility in (elf.STV_HIDDEN, elf.STV_INTERNAL))):
                made_local.append(s)
            else:
                glob.append(s)
        if made_local and files:
            # an empty STT_FILE ends the last object's locals, as GNU ld writes it
            local.append(FileSymbol(""))
        self.n_input_locals = len(local)
        local += made_local
        self.symbols = local + glob
        self.info = 1 + len(local)
        self.names = strtab.add_all([s.name for s in local] + [self._name(s) for s in glob])
        self.strtab = strtab
        self.values = b""
        self.n_sections = 0       # STT_SECTION symbols first, one per output section (--emit-relocs)

    def add_section_symbols(self, n):
        """--emit-relocs: n section symbols after the null one (GNU ld's, one per output section but
        the symbol and string tables and the emitted relocations)."""
        self.n_sections = n
        self.info += n

    def has_section_symbol(self, o):
        first = o.members[0]
        return not (first is self or first is self.strtab or
                    first.type == elf.SHT_RELA and first.flags == elf.SHF_INFO_LINK)

    def index_of(self, lk):
        """-> {OutputSection or Symbol: its index here} (what emitted relocations name)."""
        secs = [o for o in lk.osecs if self.has_section_symbol(o)]
        out = {o: k for k, o in enumerate(secs, 1)}
        out.update((s, k) for k, s in enumerate(self.symbols, 1 + len(secs)))
        return out

    @staticmethod
    def _name(s):
        return f"{s.name}@{s.version}" if s.dso is not None and s.version else s.name

    def size(self):
        return 24 * (1 + self.n_sections + len(self.symbols))

    def finalize(self, lk):
        out = bytearray(self.size())
        pack_into = elf.SYM.pack_into
        bss = lk.synth.bss
        osec_get = lk.osec_of.get
        addr_get = lk.addr_of.get
        file_type = elf.STT_FILE
        file_info = (elf.STB_LOCAL << 4) | file_type
        tls, ifunc, und = elf.STT_TLS, elf.STT_GNU_IFUNC, elf.SHN_UNDEF
        nlocal = self.info - 1 - self.n_sections
        n_input = self.n_input_locals
        pos = 0
        if self.n_sections:
            secs = [o for o in lk.osecs if self.has_section_symbol(o)]
            if len(secs) != self.n_sections:
                raise AssertionError(f".symtab: {len(secs)} output sections, {self.n_sections} section symbols")
            section_info = (elf.STB_LOCAL << 4) | elf.STT_SECTION
            for o in secs:
                pos += 24
                pack_into(out, pos, 0, section_info, 0, o.index, o.addr, 0)
        for k, (s, name) in enumerate(zip(self.symbols, self.names)):
            pos += 24
            stype = s.type
            if stype == file_type:
                pack_into(out, pos, name, file_info, 0, elf.SHN_ABS, 0, 0)
                continue
            sec = s.section
            if sec is not None:
                # most symbols: a section with an address (Layout.real_addr's first case, inline)
                o = osec_get(sec)
                if o is None:
                    value, shndx = 0, elf.SHN_ABS   # its section was stripped (-S): kept, as in GNU ld
                else:
                    a = addr_get(sec)
                    value, shndx = a + s.value if a is not None else lk.real_addr(s), o.index
            else:
                value, shndx = 0, und
                if s in bss.placed:
                    value, shndx = lk.real_addr(s), lk.osec_of[bss].index
                elif s in bss.relro.placed:
                    value, shndx = lk.real_addr(s), lk.osec_of[bss.relro].index
                elif s.is_abs:
                    value, shndx = s.value, elf.SHN_ABS
                elif s.linker_defined:
                    value = lk.real_addr(s)
                    shndx = lk.shndx_of_addr(value)
                elif s.dso is not None:
                    value = lk.sym_addr(s) if s in lk.synth.canonical else 0
            vis = s.visibility
            if k < nlocal:
                bind = elf.STB_LOCAL
                if k >= n_input:
                    vis = elf.STV_DEFAULT     # a global made local

            else:
                bind = s.bind if s.bind in (elf.STB_WEAK, elf.STB_GNU_UNIQUE) else elf.STB_GLOBAL
            if shndx == und:     # an import is as strong as the references to it
                bind = elf.STB_GLOBAL if s.strong_ref else elf.STB_WEAK
            elif stype == tls:
                value -= lk.tls_start       # a TLS symbol's value is its offset in the TLS segment
            if stype == ifunc and s.dso is not None:
                stype = elf.STT_FUNC
            pack_into(out, pos, name, (bind << 4) | stype, vis, shndx, value & 0xFFFFFFFFFFFFFFFF, s.size)
        self.values = bytes(out)

    def write_to(self, buf, lk):
        return _put(buf, lk.offset_of(self), self.values)


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
                # an executable's IFUNC is its canonical PLT entry; a shared object exports the
                # resolver as STT_GNU_IFUNC (GNU ld's way), so each lookup calls it
                shared_ifunc = lk.mode.shared and s.is_ifunc
                stype = elf.STT_FUNC if s.type == elf.STT_GNU_IFUNC and not shared_ifunc else s.type
                bind = s.bind if s.bind in (elf.STB_WEAK, elf.STB_GNU_UNIQUE) else elf.STB_GLOBAL
                if s.section is not None:
                    shndx = lk.osec_of[s.section].index
                elif s in bss_placed:
                    shndx = lk.osec_of[lk.synth.bss].index
                elif s in lk.synth.bss.relro.placed:
                    shndx = lk.osec_of[lk.synth.bss.relro].index
                elif s.is_abs:
                    shndx = elf.SHN_ABS
                else:
                    shndx = lk.shndx_of_addr(lk.sym_addr(s))
                # a definition's own address (a shared object's PLT entry for it is only for its calls)
                value = lk.real_addr(s) if s.dso is None and (shared_ifunc or not s.is_ifunc) else lk.sym_addr(s)
                if stype == elf.STT_TLS:
                    value -= lk.tls_start     # a TLS symbol's value is its offset in the TLS segment
                # wrapped to 64 bits as .symtab's: a symbol value near 2**64 plus its section's address
                out += elf.SYM.pack(name, (bind << 4) | stype, s.visibility if s.dso is None else 0, shndx,
                                    value & 0xFFFFFFFFFFFFFFFF, s.size)
            else:
                stype = elf.STT_FUNC if s.type == elf.STT_GNU_IFUNC else s.type
                bind = elf.STB_GLOBAL if s.strong_ref else elf.STB_WEAK
                # a canonical PLT entry is the function's address for the whole process
                value = lk.sym_addr(s) if s in self.canonical else 0
                out += elf.SYM.pack(name, (bind << 4) | stype, 0, 0, value & 0xFFFFFFFFFFFFFFFF, 0)
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


# bfd's elf_buckets: .hash gets the largest of these bucket counts not above the symbol count
_SYSV_BUCKETS = (1, 3, 17, 37, 67, 97, 131, 197, 263, 521, 1031, 2053, 4099, 8209, 16411, 32771, 65537, 131101,
                 262147)


class SysvHash(Synthetic):
    """.hash (--hash-style=sysv|both): nbucket, nchain, the buckets, one chain entry per .dynsym
    entry (the null one included), every symbol hashed with the SysV ELF hash."""
    type = elf.SHT_HASH
    entsize = 4

    def __init__(self, dynsym):
        super().__init__(".hash")
        self.link = dynsym
        self.dynsym = dynsym
        n = len(dynsym.symbols)
        self.nbuckets = next((b for b, nxt in zip(_SYSV_BUCKETS, _SYSV_BUCKETS[1:] + (None,))
                              if nxt is None or n < nxt), 1)

    def size(self):
        return 4 * (2 + self.nbuckets + 1 + len(self.dynsym.symbols))

    def is_needed(self):
        return True

    def write_to(self, buf, lk):
        nb = self.nbuckets
        nchain = 1 + len(self.dynsym.symbols)
        buckets, chain = [0] * nb, [0] * nchain
        for i, s in enumerate(self.dynsym.symbols, 1):
            b = elf.elf_hash(s.name.encode()) % nb
            chain[i] = buckets[b]       # each new symbol heads its bucket's chain
            buckets[b] = i
        data = struct.pack(f"<II{nb}I{nchain}I", nb, nchain, *buckets, *chain)
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
