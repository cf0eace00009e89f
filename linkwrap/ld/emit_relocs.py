"""--emit-relocs (-q): the inputs' relocations kept in the output, as GNU ld 2.40 writes them.

Post-link tools (BOLT, kernel relocation tools, profilers) read them to know where every address is
stored. One `.rela<NAME>` (SHT_RELA, SHF_INFO_LINK, sh_link .symtab, sh_info NAME) per output
section whose input sections have relocations, each input section's relocations in output order, as
bfd's elf_link_input_bfd moves them:

* r_offset is the place's output address (an offset in the section for non-loaded sections);
* a relocation against a section symbol names the output section's symbol (.symtab then starts with
  one STT_SECTION symbol per output section, as GNU ld writes it with --emit-relocs), its addend
  moved by where the input section went (for a merged section, where the piece went); against a
  local or global symbol, that symbol's .symtab entry (a local label otherwise dropped is kept);
* a relocation against a section the output does not have (a COMDAT loser, --gc-sections), and in
  .eh_frame one of a record gc removed, becomes R_X86_64_NONE with symbol 0 and addend 0 (bfd's
  RELOC_AGAINST_DISCARDED_SECTION; debug info about a dropped COMDAT copy names the kept one);
* a GOTPCRELX access relaxed to a direct one is R_X86_64_PC32, as bfd's convert_load_reloc rewrites
  the relocation (a `jmp *` one byte earlier: `jmp rel32; nop`).

Input: Options, Resolution, Liveness; after layout, the Layout and the relocated image (read). Output:
the EmittedRelocs synthetic sections; `referenced()` names the symbols .symtab must keep for them.
"""
from linkwrap.ld import elf
from linkwrap.ld.diag import Unsupported
from linkwrap.ld.synthetic.base import Synthetic

R_NONE = 0
R_GOTPCRELX, R_REX_GOTPCRELX = elf.R_X86_64_GOTPCRELX, elf.R_X86_64_REX_GOTPCRELX


def check_options(opts):
    """What --emit-relocs cannot be combined with here, named (GNU ld's handling of these is its own)."""
    if opts.strip_all or opts.strip_debug:
        raise Unsupported("--emit-relocs with -s or -S (GNU ld keeps the relocations of what it strips)")
    if opts.discard == "all":
        raise Unsupported("--emit-relocs with -x (GNU ld then keeps the locals the relocations name)")


def _sources(live, merged_of):
    """The live sections whose relocations are emitted, with their relocation counts as GNU ld
    counts them (an .eh_frame's count is its input's: a removed record's relocations stay, as NONE)."""
    out = []
    for sec in live.sections:
        inp = getattr(sec, "input", sec)
        n = len(inp.get_relocs()) if inp.rela is not None else 0
        if not n:
            continue
        if sec in merged_of:
            raise Unsupported(f"--emit-relocs with relocations in the merged section {sec!r}")
        out.append((sec, n))
    return out


def referenced(res, live):
    """The symbols the emitted relocations name that .symtab must hold: locals other than section
    symbols (a local label GNU ld keeps only then), and globals."""
    keep = set()
    section = elf.STT_SECTION
    for sec in live.sections:
        inp = getattr(sec, "input", sec)
        if inp.rela is None:
            continue
        syms = res.syms[sec.file]
        for _, info, _ in sec.get_relocs():
            s = syms[info >> 32]
            if s.type != section and info >> 32:
                keep.add(s)
    return keep


def create(opts, live, merged_of, output_name, symtab, res, kept):
    """-> the EmittedRelocs sections, one per output section whose inputs have relocations."""
    per_out = {}
    for sec, n in _sources(live, merged_of):
        name = output_name(sec)
        per_out[name] = per_out.get(name, 0) + n
    return [EmittedRelocs(name, n, symtab, res, kept) for name, n in per_out.items()]


class EmittedRelocs(Synthetic):
    type = elf.SHT_RELA
    flags = elf.SHF_INFO_LINK
    align = 8
    entsize = 24

    def __init__(self, target, count, symtab, res, kept):
        super().__init__(".rela" + target)
        self.target = target        # the output section they apply to: sh_info (write.py resolves it)
        self.info = target
        self.link = symtab
        self.symtab = symtab
        self.count = count
        self.res = res
        self.kept = kept            # relocate.KeptCopies: a dropped COMDAT copy -> the copy kept

    def size(self):
        return 24 * self.count

    def write_to(self, buf, lk):
        o = lk.by_name[self.target]
        index_of = self.symtab.index_of(lk)
        alive = lk.osec_of
        out = bytearray()
        pack = elf.RELA.pack
        for m, off in zip(o.members, o.offsets):
            if m.file is None:
                continue
            inp = getattr(m, "input", m)
            if inp.rela is None:
                continue
            relocs = m.get_relocs()
            syms = self.res.syms[m.file]
            base = lk.addr_of[m]
            fpos = o.offset + off          # the member's place in the file (the relocated bytes)
            loaded = bool(m.flags & elf.SHF_ALLOC)
            raw = m.bytes()
            last = base
            for r_off, info, addend in relocs:
                typ, k = info & 0xFFFFFFFF, info >> 32
                where = base + r_off
                s = syms[k]
                if k == 0:
                    sym = 0
                elif s.type == elf.STT_SECTION:
                    target = s.section
                    if target not in alive and not loaded:
                        target = self.kept.get(target) if target is not None else None
                    if target is None or target not in alive:
                        out += pack(where, R_NONE, 0)
                        last = where
                        continue
                    to = alive[target]
                    sym = index_of[to]
                    if target in lk.synth.merged_of:
                        addend = lk.merged_addr(target, s.value + addend) - to.addr
                    else:
                        addend += lk.addr_of[target] + s.value - to.addr
                else:
                    if s.is_local and s.section is not None and s.section not in alive:
                        out += pack(where, R_NONE, 0)
                        last = where
                        continue
                    sym = index_of.get(s)
                    if sym is None:     # a symbol .symtab has no row for (a nameless local ...)
                        raise Unsupported(f"--emit-relocs: a relocation at {m!r}+0x{r_off:x} against `{s.name}', "
                                          f"which .symtab does not hold")
                if typ in (R_GOTPCRELX, R_REX_GOTPCRELX) and loaded:
                    typ, where = _relaxed(typ, where, buf, fpos + r_off, raw, r_off)
                out += pack(where, (sym << 32) | typ, addend)
                last = where
            # .eh_frame: the relocations of the records gc removed, as NONE at the last offset
            for _ in range(len(inp.get_relocs()) - len(relocs)):
                out += pack(last, R_NONE, 0)
        if len(out) != 24 * self.count:
            raise AssertionError(f"{self.name}: {len(out) // 24} relocations, {self.count} reserved")
        buf[lk.offset_of(self):lk.offset_of(self) + len(out)] = out
        return len(out)


def _relaxed(typ, where, buf, pos, raw, r_off):
    """A GOTPCRELX whose instruction relocate rewrote -> (R_X86_64_PC32, where) as bfd rewrites the
    relocation; else as it was."""
    before, now = raw[r_off - 2], buf[pos - 2]
    if before == 0x8B and now == 0x8D:             # mov foo@GOTPCREL(%rip) -> lea foo(%rip)
        return elf.R_X86_64_PC32, where
    if before == 0xFF and bytes(buf[pos - 2:pos]) == b"\x67\xe8":    # call * -> addr32 call
        return elf.R_X86_64_PC32, where
    if before == 0xFF and now == 0xE9:             # jmp * -> jmp rel32; nop: one byte earlier
        return elf.R_X86_64_PC32, where - 1
    return typ, where
