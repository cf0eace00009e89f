"""The dynamic linking tables: .interp, .dynamic, .rela.dyn, .rela.plt, and .bss's tail (common
symbols and copy-relocated data).

Dynamic relocations: .rela.dyn holds RELATIVE first (DT_RELACOUNT lets ld.so do them fast), then
GLOB_DAT, R_X86_64_64, TPOFF64, DTPMOD64/DTPOFF64 and COPY. .rela.plt holds JUMP_SLOT for imported
functions and IRELATIVE for the output's own IFUNCs; it runs after .rela.dyn, so IFUNC resolvers see
relocated data. In a static non-PIE executable .rela.plt is glibc's .rela.iplt, found by
apply_irel() through __rela_iplt_start/__rela_iplt_end."""

from linkwrap.ld import elf
from linkwrap.ld.symbol_lists import shared_interposable_list
from linkwrap.ld.synthetic.base import _put, signed64, Synthetic


class Interp(Synthetic):
    def __init__(self, path):
        super().__init__(".interp")
        self.align = 1
        self.data = path.encode() + b"\0"

    def size(self):
        return len(self.data)

    def write_to(self, buf, lk):
        return _put(buf, lk.offset_of(self), self.data)


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
            out += elf.RELA.pack(off, elf.R_X86_64_RELATIVE, signed64(add))
        for off, info, add in self.other:
            out += elf.RELA.pack(off, info, signed64(add))
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
        if opts.soname:                    # GNU ld writes it for an executable too
            tags.append((14, dynstr.add(opts.soname)))                  # DT_SONAME
        if opts.rpath:
            tags.append((29 if opts.new_dtags else 15, dynstr.add(":".join(opts.rpath))))  # DT_RUNPATH/DT_RPATH
        if opts.filter:
            tags.append((0x7FFFFFFF, dynstr.add(opts.filter)))                      # DT_FILTER (-F)
        for name in opts.auxiliary:
            tags.append((0x7FFFFFFD, dynstr.add(name)))                              # DT_AUXILIARY (-f)
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
        if opts.hash_style in ("sysv", "both"):
            tags.append((elf.DT_HASH, ".hash"))
        if opts.hash_style in ("gnu", "both"):
            tags.append((elf.DT_GNU_HASH, ".gnu.hash"))
        tags += [(elf.DT_STRTAB, ".dynstr"), (elf.DT_SYMTAB, ".dynsym"),
                 (elf.DT_STRSZ, ".dynstr#size"), (elf.DT_SYMENT, 24)]
        if not mode.shared:
            tags.append((elf.DT_DEBUG, 0))      # the debugger's hook into ld.so: executables only
        if synth_flags["plt"]:
            tags += [(elf.DT_PLTGOT, ".got.plt"), (elf.DT_PLTRELSZ, ".rela.plt#size"), (elf.DT_PLTREL, elf.DT_RELA),
                     (elf.DT_JMPREL, ".rela.plt")]
        if synth_flags["rela"]:
            tags += [(elf.DT_RELA, ".rela.dyn"), (elf.DT_RELASZ, ".rela.dyn#size"), (elf.DT_RELAENT, 24)]
        flags = opts.dt_flags | (elf.DF_BIND_NOW if opts.z_now else 0)
        if mode.shared and opts.bsymbolic == "all" and shared_interposable_list(opts) is None:
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


class RelroCopies(Synthetic):
    """The copies of what a library keeps read-only (a read-only section, or its PT_GNU_RELRO),
    at the end of .data.rel.ro: inside the executable's PT_GNU_RELRO, so that a write to one faults
    there too (GNU ld >= 2.38's .data.rel.ro dynamic section, mold's .copyrel.rel.ro). Zeros in the
    file; ld.so copies the data in before it protects the segment.

    placed: Symbol -> offset in this section (filled by BssAlloc)."""
    flags = elf.SHF_ALLOC | elf.SHF_WRITE
    align = 1

    def __init__(self):
        super().__init__(".data.rel.ro")
        self.placed = {}
        self.total = 0

    def size(self):
        return self.total

    def write_to(self, buf, lk):
        return _put(buf, lk.offset_of(self), bytes(self.total))

    def finalize(self, lk):
        _copy_relocs(lk, lk.synth.bss.primary, self.placed)


class BssAlloc(Synthetic):
    """Common symbols and copy-relocated data, placed at the end of .bss; the copies of read-only
    data in self.relro instead (RelroCopies).

    placed: Symbol -> offset in this section (commons, copies and their aliases);
    copied: the symbols a copy relocation brings into the executable (both sections')."""
    type = elf.SHT_NOBITS
    flags = elf.SHF_ALLOC | elf.SHF_WRITE
    align = 1

    def __init__(self, commons, copies, symtab):
        super().__init__(".bss")
        placed = self.placed = {}
        relro = self.relro = RelroCopies()
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
        read_only = {}
        for s in copies:
            so = s.dso
            key = (so.name, s.value)
            if key in done:
                home, at = done[key]
                home[s] = at
                copied.add(s)
                continue
            a = _copy_align(so, s.value)
            ranges = read_only.get(so)
            if ranges is None:
                ranges = read_only[so] = _read_only_ranges(so)
            if any(lo <= s.value < hi for lo, hi in ranges):
                home, at = relro.placed, elf.align_up(relro.total, a)
                relro.align = max(relro.align, a)
                relro.total = at + s.size
            else:
                home, at = placed, elf.align_up(off, a)
                self.align = max(self.align, a)
                off = at + s.size
            done[key] = (home, at)
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
                home[g] = at
                copied.add(g)
                if g not in self.copies:
                    self.copies.append(g)
            self.primary.append(primary)
        self.copied = frozenset(copied)
        self.total = off

    def size(self):
        return self.total

    def finalize(self, lk):
        _copy_relocs(lk, self.primary, self.placed)


def _copy_relocs(lk, primary, placed):
    """Each section its own COPY relocations: either may be the only one in the output."""
    rela = lk.synth.rela_dyn
    for s in primary:     # copies exist only with shared libraries, so with .dynsym
        if s in placed:
            rela.other.append((lk.real_addr(s), (lk.synth.dynsym.index[s] << 32) | elf.R_X86_64_COPY, 0))


def _read_only_ranges(so):
    """-> [(start, end)] of the addresses a shared library keeps read-only once loaded: its
    allocated sections without SHF_WRITE, and its PT_GNU_RELRO (.data.rel.ro, .got ...)."""
    from linkwrap.ld.objects import _elf_header
    _, shdrs, _ = _elf_header(so)
    out = [(sh[3], sh[3] + sh[5]) for sh in shdrs if sh[2] & elf.SHF_ALLOC and not sh[2] & elf.SHF_WRITE]
    phoff, = elf.U64.unpack_from(so.view, 0x20)
    phnum, = elf.U16.unpack_from(so.view, 0x38)
    for k in range(phnum):
        p_type, _, _, vaddr, _, _, memsz, _ = elf.PHDR.unpack_from(so.view, phoff + elf.PHDR.size * k)
        if p_type == elf.PT_GNU_RELRO:
            out.append((vaddr, vaddr + memsz))
    return out


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
