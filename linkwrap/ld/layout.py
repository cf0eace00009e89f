"""LAYOUT: sections -> Layout (output sections, segments, every address and file offset).

Input: Options, Mode, Resolution, Liveness, Synthetics (all only read). Output:
a frozen Layout. Where each input or synthetic section went is the Layout's
own tables (osec_of: section -> OutputSection; addr_of: section -> address),
and so are the linker-defined symbols' values (linker_values); input
sections and Symbols are not written to.

Input sections are binned into output sections by GNU ld's default script
rules (.text.* -> .text, .rodata.* -> .rodata, .init_array.N sorted by
priority, ...); every other name keeps its own output section. Output
sections are grouped in five classes that become PT_LOAD segments, each
starting on a fresh page (file offset = address - base, like ld's
-z separate-code layout):

  0 R    ELF and program headers, .interp, notes, dynamic symbol and relocation tables
  1 RX   .init .plt .text ... .fini
  2 R    .rodata ... .eh_frame_hdr .eh_frame .gcc_except_table
  3 RW   RELRO: .tdata .tbss .init_array .fini_array .data.rel.ro .dynamic .got
  4 RW   .got.plt .data ... .bss

Class 3 ends on a page boundary, so PT_GNU_RELRO protects all of it. .tbss
takes no address space: sections after it overlap its (per-thread) range.
Non-alloc sections (.comment, .debug_*) follow, then the section headers.
Linker-defined symbols (__init_array_start, _end, __start_SEC ...) get their
values here.
"""
from dataclasses import dataclass, replace
from operator import attrgetter

from linkwrap.ld import elf, x86_64
from linkwrap.ld.diag import Unsupported

_PREFIX_MAP = (
    (".text.", ".text"), (".rodata.", ".rodata"), (".data.rel.ro.", ".data.rel.ro"), (".data.", ".data"),
    (".bss.", ".bss"), (".tdata.", ".tdata"), (".tbss.", ".tbss"), (".init_array.", ".init_array"),
    (".fini_array.", ".fini_array"), (".preinit_array.", ".preinit_array"),
    (".gcc_except_table.", ".gcc_except_table"), (".ldata.", ".ldata"), (".lrodata.", ".lrodata"),
    (".lbss.", ".lbss"),
)

# (class, rank) of known output sections; others are classified by their flags.
_RANKS = {
    ".interp": (0, 0), ".note.gnu.property": (0, 0.5), ".note.gnu.build-id": (0, 1), ".hash": (0, 2.5), ".gnu.hash": (0, 3),
    ".dynsym": (0, 4), ".dynstr": (0, 5), ".gnu.version": (0, 6), ".gnu.version_d": (0, 6.5),
    ".gnu.version_r": (0, 7),
    ".rela.dyn": (0, 8), ".rela.plt": (0, 9),
    ".init": (1, 0), ".plt": (1, 1), ".text": (1, 2), ".fini": (1, 9),
    ".rodata": (2, 0), ".eh_frame_hdr": (2, 5), ".eh_frame": (2, 6), ".gcc_except_table": (2, 7),
    ".tdata": (3, 0), ".tbss": (3, 1), ".preinit_array": (3, 2), ".init_array": (3, 3),
    ".fini_array": (3, 4), ".data.rel.ro": (3, 5), ".dynamic": (3, 6), ".got": (3, 7),
    ".got.plt": (4, 0), ".data": (4, 1), ".bss": (4, 8),
}


# each prefix above ends at the name's second dot: one dict lookup instead of a scan of the list
# (a Rust debug link asks for 70k names), .data.rel.ro. the one prefix inside another
_BY_PREFIX = dict(_PREFIX_MAP)


def output_name(sec, _alloc=elf.SHF_ALLOC, _tls=elf.SHF_TLS) -> str:
    n = sec.name
    f = sec.flags
    if not f & _alloc:
        return n
    if f & _tls:
        return ".tbss" if sec.type == elf.SHT_NOBITS else ".tdata"
    out = _BY_PREFIX.get(n[:n.find(".", 1) + 1])
    if out is None:
        return n
    if out == ".data" and n.startswith(".data.rel.ro."):
        return ".data.rel.ro"
    return out


def _init_priority(sec):
    """.init_array.00101 -> 101; plain .init_array comes after every prioritised one."""
    tail = sec.name.rsplit(".", 1)[-1]
    return int(tail) if tail.isdigit() else 65536


class OutputSection:
    """Layout's own record; filled while compute() runs, not changed after."""
    __slots__ = ("name", "type", "flags", "align", "members", "offsets", "addr", "offset", "size", "index",
                 "cls", "rank", "entsize", "link", "info", "first_input")

    def __init__(self, name, cls, rank):
        self.name = name
        self.type = elf.SHT_NULL
        self.flags = 0
        self.align = 1
        self.members = []         # input sections (EhFrames for .eh_frame) and Synthetics
        self.offsets = []         # offset of each member inside this output section
        self.addr = 0
        self.offset = 0
        self.size = 0
        self.index = 0
        self.cls = cls
        self.rank = rank
        self.entsize = 0
        self.link = None
        self.info = 0
        self.first_input = 0

    def __repr__(self):
        return f"OutputSection({self.name} @0x{self.addr:x} size 0x{self.size:x})"


@dataclass(frozen=True)
class Segment:
    type: int
    flags: int
    offset: int
    vaddr: int
    filesz: int
    memsz: int
    align: int


@dataclass(frozen=True)
class Layout:
    mode: object
    synth: object
    osecs: tuple              # every output section in file order (index 1..n in the section headers)
    by_name: dict
    segments: tuple
    entry: int
    tls_start: int
    tls_end_tp: int           # end of the TLS block, aligned: the thread pointer's offset 0
    file_size: int
    shoff: int
    shstrtab: bytes
    shstr_offsets: dict
    osec_of: dict             # input/synthetic section -> its OutputSection; absent: not in the output
    addr_of: dict             # input/synthetic section -> its address (an .eh_frame's under both records)
    linker_values: dict       # linker-defined symbol name -> value
    got_addr: int             # address of .got (0 without one)
    plt_base: int             # address of the first PLT entry after PLT0
    plt_index: dict           # Symbol -> PLT entry (Plt.index)
    bss_addr: int             # address of the BssAlloc section
    bss_placed: dict          # Symbol -> offset in it (commons, copies: BssAlloc.placed)
    relro_copies_addr: int = 0    # address of the RelroCopies section (copies of read-only data)
    relro_copies: dict = None     # Symbol -> offset in it (RelroCopies.placed)

    # --- addresses used by relocation recipes and synthetic sections ---
    def osec(self, name):
        return self.by_name[name]

    def offset_of(self, sec):
        o = self.osec_of[sec]
        return o.offset + self.addr_of[sec] - o.addr

    @property
    def got_base(self):
        return self.addr_of.get(self.synth.got_plt, 0)

    def got_slot(self, s):
        return self.got_addr + 8 * self.synth.got.index[s]

    def gottp_slot(self, s):
        return self.got_addr + 8 * self.synth.got.tp_index[s]

    def gd_slot(self, s):
        return self.got_addr + 8 * self.synth.got.gd_index[s]

    def desc_slot(self, s):
        return self.got_addr + 8 * self.synth.got.desc_index[s]

    def ld_slot(self):
        return self.got_addr + 8 * self.synth.got.ld_index

    def tp_offset(self, addr):
        return addr - self.tls_end_tp

    def dtp_offset(self, addr):
        return addr - self.tls_start

    def merged_addr(self, sec, off):
        """The address of offset off of SHF_MERGE input section sec, wherever its piece went."""
        m = self.synth.merged_of[sec]
        return self.addr_of[m] + m.offset_in(sec, off)

    def real_addr(self, s):
        sec = s.section
        if sec is not None:
            try:
                return self.addr_of[sec] + s.value
            except KeyError:
                if sec in self.synth.merged_of:
                    return self.merged_addr(sec, s.value)
                return 0                  # discarded (COMDAT, gc) or stripped
        off = self.bss_placed.get(s)
        if off is not None:
            return self.bss_addr + off
        if self.relro_copies:
            off = self.relro_copies.get(s)
            if off is not None:
                return self.relro_copies_addr + off
        if s.dso is not None:
            return 0
        if s.linker_defined:
            return self.linker_values.get(s.name, 0)
        return s.value

    def sym_addr(self, s):
        """The address references to s resolve to: its PLT entry for IFUNCs and imported functions."""
        if s in self.plt_index and (s.type == elf.STT_GNU_IFUNC or
                                    (s.dso is not None and s not in self.synth.copied) or
                                    (self.mode.shared and (s in self.mode.interposable or not s.defined))):
            return self.plt_base + x86_64.PLT_ENTRY_SIZE * self.plt_index[s]
        return self.real_addr(s)

    def shndx_of_addr(self, addr):
        end = None
        for o in self.osecs:
            if o.flags & elf.SHF_ALLOC:
                if o.addr <= addr < o.addr + max(o.size, 1):
                    return o.index
                if addr == o.addr + o.size:
                    end = o.index       # the address just past a section (_end, _edata): GNU ld's section
        return elf.SHN_ABS if end is None else end


_flags_of, _type_of, _align_of = attrgetter("flags"), attrgetter("type"), attrgetter("align")


def compute(opts, mode, res, live, synth) -> Layout:
    osecs = {}

    def osec_for(name, member):
        o = osecs.get(name)
        if o is None:
            cls, rank = _classify(name, member, opts)
            o = osecs[name] = OutputSection(name, cls, rank)
            o.first_input = len(osecs)
        return o

    merged_of = synth.merged_of
    get = osecs.get
    strip = opts.strip_debug or opts.strip_all
    for sec in live.sections:
        if sec in merged_of:
            continue              # its pieces are in a MergedSection
        if strip and not sec.flags & elf.SHF_ALLOC:
            if opts.strip_debug and sec.name.startswith((".debug", ".zdebug")):
                continue
            if opts.strip_all and sec.name != ".comment":
                continue
        name = output_name(sec)
        o = get(name)
        if o is None:
            o = osec_for(name, sec)
        o.members.append(sec)
    for syn in synth.all:
        osec_for(syn.name, syn).members.append(syn)

    # merge flags/types, sort init/fini arrays by priority, place members
    # (per distinct value, not per member: .text has tens of thousands of members in a Rust link)
    kept_flags = (elf.SHF_ALLOC | elf.SHF_WRITE | elf.SHF_EXECINSTR | elf.SHF_TLS | elf.SHF_MERGE |
                  elf.SHF_STRINGS)
    for o in osecs.values():
        members = o.members
        if o.name in (".init_array", ".fini_array", ".preinit_array"):
            members.sort(key=_init_priority)
        if o.name == ".bss":
            members.sort(key=lambda m: m.file is None)   # commons and copies after input .bss
        for f in set(map(_flags_of, members)):
            o.flags |= f & kept_flags
        progbits = any(t != elf.SHT_NOBITS for t in set(map(_type_of, members)))
        o.align = max(o.align, max(map(_align_of, members)))
        first = members[0]
        if first.file is None:
            o.flags |= first.flags & elf.SHF_INFO_LINK    # .rela.plt's sh_info names .got.plt
        o.type = first.type if first.type != elf.SHT_NOBITS or not progbits else elf.SHT_PROGBITS
        if o.type == elf.SHT_NOBITS and progbits:
            o.type = elf.SHT_PROGBITS
        o.entsize = first.entsize if len(o.members) == 1 or o.flags & elf.SHF_MERGE else 0
        if o.flags & elf.SHF_MERGE and any(m.entsize != o.entsize for m in o.members):
            o.flags &= ~(elf.SHF_MERGE | elf.SHF_STRINGS)
            o.entsize = 0
        off = 0
        append = o.offsets.append
        for m in members:
            a = m.align
            if a > 1:
                off = (off + a - 1) & ~(a - 1)      # elf.align_up without a call per member
            append(off)
            off += m.size if m.file is not None else m.size()
        o.size = off
        if first.file is None:
            o.link = first.link
            o.info = first.info
            if len(members) == 1:
                # (merged pieces of two entry sizes, .rodata.cst4 and .rodata.str1.1: 0 from above)
                o.entsize = first.entsize

    started = dict(opts.section_start)
    if started:
        from linkwrap.ld import section_start
        section_start.place(opts, osecs, _RANKS)
    ordered = sorted(osecs.values(), key=lambda o: (o.cls, o.rank, o.first_input))
    alloc = [o for o in ordered if o.flags & elf.SHF_ALLOC]
    nonalloc = [o for o in ordered if not o.flags & elf.SHF_ALLOC]

    # which program headers exist decides how big the headers are
    classes = sorted({o.cls for o in alloc} | {0})
    has = {o.name for o in alloc}
    tls = [o for o in alloc if o.flags & elf.SHF_TLS]
    notes = [o for o in alloc if o.type == elf.SHT_NOTE]
    # one PT_NOTE per run of notes with the same alignment: a reader steps through a PT_NOTE
    # with its p_align, so 8-aligned .note.gnu.property cannot share one with 4-aligned notes
    note_runs = []
    for o in notes:
        if note_runs and note_runs[-1][-1].align == o.align:
            note_runs[-1].append(o)
        else:
            note_runs.append([o])
    page = opts.max_page_size
    relro = opts.z_relro and any(o.cls == 3 for o in alloc)
    ph_types = []
    if mode.interp:
        ph_types += [elf.PT_PHDR, elf.PT_INTERP]
    ph_types += [elf.PT_LOAD] * len(classes)
    if mode.dynamic:
        ph_types.append(elf.PT_DYNAMIC)
    ph_types += [elf.PT_NOTE] * len(note_runs)
    if ".note.gnu.property" in has:
        ph_types.append(elf.PT_GNU_PROPERTY)
    if tls:
        ph_types.append(elf.PT_TLS)
    if ".eh_frame_hdr" in has:
        ph_types.append(elf.PT_GNU_EH_FRAME)
    ph_types.append(elf.PT_GNU_STACK)
    if relro:
        ph_types.append(elf.PT_GNU_RELRO)

    base = mode.base
    hdr_size = 64 + 56 * len(ph_types)
    addr = base + hdr_size
    seg_ranges = {}
    seg_offsets = {}          # a --section-start class's file offset (the others': address - base)
    file_hi = hdr_size
    prev_cls = 0
    for o in alloc:
        if o.cls != prev_cls:
            addr = elf.align_up(addr, page)
            prev_cls = o.cls
        if started and o.name in started:
            addr = o.addr = section_start.address(o, started[o.name], addr)
            # the file keeps no hole up to the address: an offset congruent to it modulo the page
            o.offset = seg_offsets[o.cls] = elf.align_up(file_hi, page) + addr % page
        else:
            addr = elf.align_up(addr, o.align)
            o.addr = addr
            o.offset = addr - base
        if started and o.type != elf.SHT_NOBITS:
            file_hi = max(file_hi, o.offset + o.size)
        start, end_file, end_mem = seg_ranges.get(o.cls, (addr if o.cls else base, 0, 0))
        if o.flags & elf.SHF_TLS and o.type == elf.SHT_NOBITS:
            # .tbss: counted in PT_TLS, but later sections reuse its addresses
            seg_ranges[o.cls] = (start, end_file, max(end_mem, addr))
            continue
        addr += o.size
        if o.type != elf.SHT_NOBITS:
            end_file = addr
        seg_ranges[o.cls] = (start, end_file, max(end_mem, addr))
    file_end = max((o.offset + (o.size if o.type != elf.SHT_NOBITS else 0) for o in alloc), default=hdr_size)
    file_end = max(file_end, hdr_size)
    for o in nonalloc:
        file_end = elf.align_up(file_end, o.align)
        o.addr = 0
        o.offset = file_end
        file_end += o.size if o.type != elf.SHT_NOBITS else 0

    # section header string table and section indexes
    out_osecs = alloc + nonalloc
    if len(out_osecs) + 2 >= elf.SHN_LORESERVE:
        # -r writes SHN_XINDEX and .symtab_shndx (relocatable.py); an executable's .symtab does not yet
        raise Unsupported(f"an output of {len(out_osecs) + 2} sections (more than {elf.SHN_LORESERVE - 1}: "
                          f"extended section numbers)")
    shstr = bytearray(b"\0")
    shstr_off = {}
    for k, o in enumerate(out_osecs, 1):
        o.index = k
    for name in [o.name for o in out_osecs] + [".shstrtab"]:
        if name not in shstr_off:
            shstr_off[name] = len(shstr)
            shstr += name.encode() + b"\0"
    shstr_pos = file_end
    file_end += len(shstr)
    shoff = elf.align_up(file_end, 8)
    file_size = shoff + 64 * (len(out_osecs) + 2)

    addr_of = {}
    osec_of = {}
    for o in out_osecs:
        a = o.addr
        addr_of.update(zip(o.members, [a + off for off in o.offsets]))
        osec_of.update(dict.fromkeys(o.members, o))
    for sec, m in merged_of.items():
        if m in osec_of:
            osec_of[sec] = osec_of[m]   # placed, piece by piece, where m is (no single address)
    # symbols and relocations name the InputSection an EhFrame stands in for
    for e in live.eh_frames:
        if e in addr_of:
            addr_of[e.input] = addr_of[e]
            osec_of[e.input] = osec_of[e]

    # program headers
    segs = []
    by_name = {o.name: o for o in out_osecs}
    if mode.interp:
        segs.append(Segment(elf.PT_PHDR, elf.PF_R, 64, base + 64, hdr_size - 64, hdr_size - 64, 8))
        it = by_name[".interp"]
        segs.append(Segment(elf.PT_INTERP, elf.PF_R, it.offset, it.addr, it.size, it.size, 1))
    for cls in classes:
        start, end_file, end_mem = seg_ranges.get(cls, (base, base + hdr_size, base + hdr_size))
        if cls == 0:
            start = base
            end_file = max(end_file, base + hdr_size)
            end_mem = max(end_mem, end_file)
        flags = {0: elf.PF_R, 1: elf.PF_R | elf.PF_X, 2: elf.PF_R, 3: elf.PF_R | elf.PF_W,
                 4: elf.PF_R | elf.PF_W}.get(cls) or section_start.flags(cls, alloc)
        filesz = max(end_file - start, 0)
        if cls == 3 and relro:
            # PT_GNU_RELRO ends on a page boundary (ld.so protects whole pages): the segment
            # it lies in reaches that far too, as eu-elflint requires
            end_mem = elf.align_up(end_mem, elf.PAGE)
        segs.append(Segment(elf.PT_LOAD, flags, seg_offsets.get(cls, start - base), start, filesz, end_mem - start,
                            page))
    if mode.dynamic:
        d = by_name[".dynamic"]
        segs.append(Segment(elf.PT_DYNAMIC, elf.PF_R | elf.PF_W, d.offset, d.addr, d.size, d.size, 8))
    for run in note_runs:
        n0, n1 = run[0], run[-1]
        sz = n1.addr + n1.size - n0.addr
        segs.append(Segment(elf.PT_NOTE, elf.PF_R, n0.offset, n0.addr, sz, sz, n0.align))
    if ".note.gnu.property" in has:
        p = by_name[".note.gnu.property"]
        segs.append(Segment(elf.PT_GNU_PROPERTY, elf.PF_R, p.offset, p.addr, p.size, p.size, p.align))
    tls_start = tls_end_tp = 0
    if tls:
        t0 = tls[0]
        talign = max(o.align for o in tls)
        tls_start = t0.addr
        memsz = tls[-1].addr + tls[-1].size - tls_start
        filesz = sum(o.size for o in tls if o.type != elf.SHT_NOBITS)
        filesz = max((o.addr + o.size - tls_start for o in tls if o.type != elf.SHT_NOBITS), default=0)
        tls_end_tp = tls_start + elf.align_up(memsz, talign)
        segs.append(Segment(elf.PT_TLS, elf.PF_R, t0.offset, tls_start, filesz, memsz, talign))
    if ".eh_frame_hdr" in has:
        e = by_name[".eh_frame_hdr"]
        segs.append(Segment(elf.PT_GNU_EH_FRAME, elf.PF_R, e.offset, e.addr, e.size, e.size, 4))
    segs.append(Segment(elf.PT_GNU_STACK, elf.PF_R | elf.PF_W | (elf.PF_X if exec_stack(opts, res) else 0),
                        0, 0, 0, 0, 16))
    if relro:
        start, end_file, end_mem = seg_ranges[3]
        sz = elf.align_up(end_mem, elf.PAGE) - start
        segs.append(Segment(elf.PT_GNU_RELRO, elf.PF_R, start - base, start, sz, sz, 1))
    assert len(segs) == len(ph_types), (segs, ph_types)

    linker_values = _linker_values(mode, res, synth, by_name, addr_of, seg_ranges, alloc, tls_start,
                                   tls_end_tp)
    plt = synth.plt
    plt_base = addr_of[plt] + plt.header if plt in addr_of else 0
    lk = Layout(mode, synth, tuple(out_osecs), by_name, tuple(segs), 0, tls_start, tls_end_tp,
                file_size, shoff, bytes(shstr), {**shstr_off, "#pos": shstr_pos},
                osec_of, addr_of, linker_values, addr_of.get(synth.got, 0), plt_base, plt.index,
                addr_of.get(synth.bss, 0), synth.bss.placed, addr_of.get(synth.bss.relro, 0),
                synth.bss.relro.placed)
    entry_sym = res.symtab.get(opts.entry)
    if mode.shared and opts.entry == "_start" and (entry_sym is None or not entry_sym.defined):
        return lk                 # a shared object has no entry point unless -e names one
    if entry_sym is not None and entry_sym.defined:
        return replace(lk, entry=lk.sym_addr(entry_sym))
    number = entry_number(opts.entry)
    if number is None:
        # GNU ld warns and starts the program at .text: the real linker says it (falling back)
        raise Unsupported(f"entry symbol {opts.entry} not found (GNU ld would warn and start at .text)")
    return replace(lk, entry=number)


def entry_number(text):
    """-e NUMBER (GNU ld: a number when no symbol has that name; 0x hex, 0 octal, else decimal)."""
    try:
        if text.lower().startswith("0x"):
            return int(text, 16)
        return int(text, 8) if text.startswith("0") else int(text, 10)
    except ValueError:
        return None


def exec_stack(opts, res) -> bool:
    """PT_GNU_STACK gets PF_X as GNU ld decides: -z execstack/noexecstack, else when some object
    asks for it (an executable .note.GNU-stack) or, once any object has the note, lacks it."""
    if opts.z_execstack is not None:
        return opts.z_execstack
    notes = [obj.stack_note for obj in res.objects]
    return any(n == "x" for n in notes) or (None in notes and any(n is not None for n in notes))


def _classify(name, m, opts):
    if name in _RANKS:
        cls, rank = _RANKS[name]
        if name == ".got.plt" and opts.z_now:
            return 3, 8
        return cls, rank
    f = m.flags
    if not f & elf.SHF_ALLOC:
        return 5, 0
    if m.type == elf.SHT_NOTE:
        return 0, 2
    if f & elf.SHF_TLS:
        return 3, 1 if m.type == elf.SHT_NOBITS else 0
    if f & elf.SHF_EXECINSTR:
        return 1, 5
    if f & elf.SHF_WRITE:
        if m.type == elf.SHT_INIT_ARRAY or m.type == elf.SHT_FINI_ARRAY or m.type == elf.SHT_PREINIT_ARRAY:
            return 3, 3
        return (4, 9) if m.type == elf.SHT_NOBITS else (4, 2)
    return 2, 1


def _linker_values(mode, res, synth, by, addr_of, seg_ranges, alloc, tls_start, tls_end_tp):
    """-> {name: value} for the linker-defined symbols (resolve marked which are referenced)."""
    base = mode.base
    vals = {"__ehdr_start": base, "__executable_start": base}
    if 1 in seg_ranges:
        etext = seg_ranges[1][1]
    else:
        etext = base
    vals["_etext"] = vals["etext"] = vals["__etext"] = etext
    data_end = seg_ranges.get(4, seg_ranges.get(3, (base, base, base)))
    vals["_edata"] = vals["edata"] = data_end[1] or data_end[0]
    bss = by.get(".bss")
    vals["__bss_start"] = bss.addr if bss is not None else vals["_edata"]
    vals["_end"] = vals["end"] = max((o.addr + o.size for o in alloc), default=base)
    fallback = seg_ranges.get(3, (base,))[0]
    for arr in ("init_array", "fini_array", "preinit_array"):
        o = by.get("." + arr)
        vals[f"__{arr}_start"] = o.addr if o else fallback
        vals[f"__{arr}_end"] = o.addr + o.size if o else fallback
    rp = synth.rela_plt
    if not mode.pic and rp is not None and rp in addr_of:
        vals["__rela_iplt_start"] = addr_of[rp]
        vals["__rela_iplt_end"] = addr_of[rp] + rp.size()
    else:
        # PIE: ld.so or _dl_relocate_static_pie applies IRELATIVE; apply_irel must find nothing
        vals["__rela_iplt_start"] = vals["__rela_iplt_end"] = base
    if synth.got_plt is not None and synth.got_plt in addr_of:
        vals["_GLOBAL_OFFSET_TABLE_"] = addr_of[synth.got_plt]
    elif synth.got is not None and synth.got in addr_of:
        vals["_GLOBAL_OFFSET_TABLE_"] = addr_of[synth.got]
    if synth.dynamic is not None:
        vals["_DYNAMIC"] = addr_of[synth.dynamic]
    if synth.eh_frame_hdr is not None:
        vals["__GNU_EH_FRAME_HDR"] = addr_of[synth.eh_frame_hdr]
    # the base local-dynamic x@dtpoff offsets add to: a shared object keeps its descriptor call
    # (DTPOFF from the block's start); an executable's sequence becomes local-exec and its x@dtpoff
    # a TP offset (TLS_TPOFF), so the base must be the thread pointer itself, TP offset 0 (GNU ld's
    # _bfd_x86_elf_set_tls_module_base: the aligned end of the TLS block)
    vals["_TLS_MODULE_BASE_"] = tls_start if mode.shared else tls_end_tp
    for name, s in res.symtab.items():
        if not s.linker_defined or name in vals:
            continue
        if name.startswith("__start_"):
            o = by.get(name[8:])
            vals[name] = o.addr if o else 0
        elif name.startswith("__stop_"):
            o = by.get(name[7:])
            vals[name] = o.addr + o.size if o else 0
    for name, target, off in res.linker_aliases:     # --defsym NAME=SYM+OFF, SYM linker-defined
        vals[name] = vals.get(target, 0) + off
    return vals
