"""RELOCATE: Layout -> the output image with every section copied and relocated.

Input: Resolution, Layout, Liveness (only read). Output: a bytearray of the
whole output file in which input sections are copied to their offsets and
relocations are applied. The R_X86_64_64 relocations that the loader must
finish (RELATIVE in a PIE, symbolic ones against shared-library symbols) are
appended to .rela.dyn's lists (the buffers it writes out; their count was
reserved by scan).

Each relocation is one lookup in x86_64.RECIPES (width, overflow check,
formula), and what it needs is the classifier's action (classify.action). Overflows and references into discarded sections are reported with
their location (object, section and offset), all in one run. In non-alloc
sections (.debug_*) a reference to a discarded section becomes 0, the way GNU
ld writes it. A link with enough relocations to pay for numpy applies them per
object in bulk (relocate_loaded.py: loaded sections, then relocate_bulk.py: the others), and this
loop takes only what a batch leaves it, section by section in output order.
"""
from linkwrap.ld import classify, elf
from linkwrap.ld import x86_64
from linkwrap.ld.classify import (BASEREL, DESC_CALL_NOP, DESC_TO_IE, DESC_TO_LE, DIRECT, DYNREL, GD_TO_IE,
                                  GD_TO_LE, GOT, LD_TO_LE, NONE, PLT, TLS_TPOFF, TLSDESC, TLSGD, TLSLD,
                                  TOMBSTONE_ONE, preemptible)
from linkwrap.ld.diag import where
from linkwrap.ld.objects import drop_pages

_PACK = {
    (8, ""): elf.U64.pack_into, (4, "s"): elf.I32.pack_into, (4, "u"): elf.U32.pack_into,
    (2, "s"): __import__("struct").Struct("<h").pack_into, (2, "u"): elf.U16.pack_into,
    (1, "s"): __import__("struct").Struct("<b").pack_into, (1, "u"): __import__("struct").Struct("<B").pack_into,
}
_LIMITS = {(4, "s"): (-2**31, 2**31), (4, "u"): (0, 2**32), (2, "s"): (-2**15, 2**15), (2, "u"): (0, 2**16),
           (1, "s"): (-128, 128), (1, "u"): (0, 256)}
MASK64 = (1 << 64) - 1
# per relocation type: (overflow check, its (lo, hi) bounds, the packer, width) -- one lookup per
# relocation instead of building a (size, check) key and two dict lookups
_TAIL = {t: (r.check, _LIMITS.get((r.size, r.check)), _PACK.get((r.size, r.check) if r.check else (8, "")), r.size)
         for t, r in x86_64.RECIPES.items()}


# the copy's input and image pages leave the RSS every this many bytes copied (drop_inputs): input
# pages come in by 64 KiB (the kernel's fault-around), so each byte copied holds several
_DROP_EVERY = 4 << 20


def apply_all(res, lk, live, diag, stats=None, buf=None):
    """-> buf (a new bytearray when None), the whole output file with every section relocated."""
    buf = bytearray(lk.file_size) if buf is None else buf
    syms_of = res.syms
    kept = KeptCopies(res)
    bulk = []       # non-alloc sections with relocations: copied and relocated per object at the end
    loaded = []     # loaded sections with relocations, copied: relocated after the copies
    drop_inputs(res)
    memo = ({}, {})     # per link: Symbol -> symbol class, (type, class, writable) -> action
    from linkwrap.ld.objects import InputSection
    nobits, alloc = elf.SHT_NOBITS, elf.SHF_ALLOC
    copied = 0
    for o in lk.osecs:
        if o.type == nobits:
            continue
        base, addr = o.offset, o.addr
        for m, out_off in zip(o.members, o.offsets):
            if m.file is None:
                continue   # synthetic: written by the writer
            if m.type == nobits:
                continue
            start = base + out_off
            if m.rela is not None and not m.flags & alloc:
                bulk.append((m, start, addr + out_off))
                continue
            if m.__class__ is InputSection:
                # InputSection.bytes() inline: ~70k sections in a Rust debug link
                size = m.size
                buf[start:start + size] = m.file.view[m.offset:m.offset + size]
                copied += size
                if copied >= _DROP_EVERY:
                    copied = 0
                    drop_inputs(res)    # the copies' input pages: the image holds them now
                    drop_pages(buf)     # and the image's own (a mapped file's: read again from the page cache)
            else:
                data = m.bytes()
                buf[start:start + len(data)] = data
            if m.rela is not None or m.relocs:
                loaded.append((m, start, addr + out_off))
    drop_inputs(res)
    drop_pages(buf)
    relocate_bulk = None
    if bulk or loaded:
        from linkwrap.ld import relocate_bulk
        if not classify.worth_it(bulk + loaded):
            relocate_bulk = None
    # what the bulk path left (or all): section by section, in output order, so errors come in that order
    cache = {}      # ObjectFile -> its locals' addresses, for both bulk paths
    if relocate_bulk is not None:
        from linkwrap.ld import relocate_loaded
    slow = relocate_loaded.apply_loaded(buf, lk, loaded, res, live.alive, memo, stats, cache) if relocate_bulk else {}
    for m, start, addr in loaded:
        relocs = slow.get(m, ()) if relocate_bulk else None
        if relocs is None or relocs:
            _relocate_section(buf, lk, m, start, addr, syms_of[m.file], live.alive, diag, kept, memo, relocs)
    if bulk:
        drop_inputs(res)    # the loaded relocation tables' pages, before the debug sections fill the image
        if relocate_bulk is not None:
            relocate_bulk.apply(buf, lk, bulk, res, live.alive, diag, kept, _relocate_section, stats, cache)
        else:
            for m, start, addr in bulk:
                data = m.bytes()
                buf[start:start + len(data)] = data
                _relocate_section(buf, lk, m, start, addr, syms_of[m.file], live.alive, diag, kept)
    return buf


def drop_inputs(res):
    """The input pages earlier passes read (symbol tables, relocations, merged strings) leave this
    process's RSS before the image fills up: MADV_DONTNEED on a shared file mapping, so what is read
    again faults in from the page cache. A debug link's peak is image + inputs otherwise."""
    seen = set()
    for obj in res.objects:
        m = obj.view.obj
        if id(m) not in seen:
            seen.add(id(m))
            drop_pages(m)


class KeptCopies:
    """COMDAT loser section -> the winner's section of the same name and size (built when first asked).

    GNU ld points debug info about a dropped copy of an inline function at the copy it kept
    (_bfd_elf_check_kept_section); a 0 there would end a .debug_ranges list early."""

    def __init__(self, res):
        self.res = res
        self.table = None

    def get(self, sec):
        if self.table is None:
            discarded = self.res.discarded
            self.table = {(s.group_sig, s.name): s for obj in self.res.objects for s in obj.sections
                          if s is not None and s.group_sig is not None and s not in discarded}
        k = self.table.get((sec.group_sig, sec.name))
        return k if k is not None and k.size == sec.size else None


def _relocate_section(buf, lk, sec, start, sec_addr, syms, alive, diag, kept, memo=None, relocs=None):
    """memo: (classes, actions) dicts shared by a link's loaded sections; the class and the action
    are pure functions of the symbol and of (type, class, writable), so each is computed once.
    relocs: the section's relocations the bulk path left (None: all of them)."""
    mode = lk.mode
    pic = mode.pic
    out = classify.output_kind(mode)
    alloc = sec.flags & elf.SHF_ALLOC
    recipes = x86_64.RECIPES
    rela = lk.synth.rela_dyn
    copied = lk.synth.copied
    merged_of = lk.synth.merged_of
    dynidx = lk.synth.dynsym.index if lk.synth.dynsym is not None else {}
    addr_get = lk.addr_of.get
    sym_addr = lk.sym_addr
    writable = classify.writable(sec)
    classes, acts = memo if memo is not None else ({}, {})
    cls_of = classes.get
    act_of = acts.get
    STT_SECTION = elf.STT_SECTION
    STT_GNU_IFUNC = elf.STT_GNU_IFUNC
    tail = _TAIL
    skip_next = False
    for r_off, info, A in sec.get_relocs() if relocs is None else relocs:
        if skip_next:
            skip_next = False
            continue
        rtype = info & 0xFFFFFFFF
        r = recipes.get(rtype)
        if r is None:
            if not alloc:
                diag.error(f"{where(sec, r_off, syms)}: unsupported relocation {elf.reloc_name(rtype)}")
            continue
        s = syms[info >> 32]
        loc = start + r_off
        P = sec_addr + r_off
        tsec = s.section
        a = None if tsec is None else addr_get(tsec)
        if a is not None:
            # defined in an output section: bound here; only an IFUNC goes through its PLT entry
            S = a + s.value
            if s.type == STT_GNU_IFUNC:
                S = sym_addr(s)
        elif tsec in merged_of:
            # a merged string or constant: a section symbol's addend says which one (GNU ld, lld)
            if s.type == STT_SECTION:
                S, A = lk.merged_addr(tsec, s.value + A), 0
            else:
                S = lk.merged_addr(tsec, s.value)
        elif tsec is not None and tsec not in alive:
            # discarded (COMDAT loser, gc); a live section without an address was stripped (-S/-s)
            if not alloc:
                k = kept.get(tsec) if tsec.group_sig is not None else None
                a = None if k is None else addr_get(k)
                if a is None:
                    if sec.name in TOMBSTONE_ONE and r.kind in ("abs64", "abs32"):
                        # a (0, 0) pair would end the range or location list early: GNU ld and lld write 1
                        _PACK[(r.size, "u") if r.size < 8 else (8, "")](buf, loc, 1)
                    continue   # other debug info about a function gc dropped: leave 0, as GNU ld does
                S = a + s.value
            elif s.is_local and tsec.group_sig is not None:
                diag.error(f"{where(sec, r_off, syms)}: relocation refers to a discarded COMDAT section "
                           f"{tsec.name} of {tsec.file.name}")
                continue
            else:
                S = 0
        else:
            S = sym_addr(s)
        kind = r.kind
        if not alloc:
            act = DIRECT      # debug info: the link-time value, never a dynamic relocation
        else:
            cls = cls_of(s)
            if cls is None:
                cls = classes[s] = classify.sym_class(s, not s.is_local and preemptible(s, mode, copied))
            act = act_of((rtype, cls, writable))
            if act is None:
                act = acts[(rtype, cls, writable)] = classify.action(kind, rtype, cls, out, writable)
            if act is PLT and tsec is not None:
                S = sym_addr(s)   # a shared object's own interposable function: called through its PLT
        if act is DIRECT:
            pass              # most relocations: straight to the formula
        elif act is DYNREL:
            if kind == "abs64":
                rela.other.append((P, (dynidx[s] << 32) | elf.R_X86_64_64, A))
                elf.U64.pack_into(buf, loc, 0)
                continue
        elif act is BASEREL:
            v = (S + A) & MASK64
            rela.relative.append((P, v))
            elf.U64.pack_into(buf, loc, v)
            continue
        elif act is GD_TO_LE or act is GD_TO_IE:
            form = x86_64.gd_call_form(buf, loc)
            if form is None:
                diag.error(f"{where(sec, r_off, syms)}: R_X86_64_TLSGD not followed by the expected "
                           f"__tls_get_addr call sequence")
                continue
            if act is GD_TO_IE:
                x86_64.relax_gd_to_ie(buf, loc, P, lk.gottp_slot(s))
            else:
                x86_64.relax_gd_to_le(buf, loc, lk.tp_offset(S + A + 4))
            skip_next = True
            continue
        elif act is LD_TO_LE:
            form = x86_64.ld_call_form(buf, loc)
            if form is None:
                diag.error(f"{where(sec, r_off, syms)}: R_X86_64_TLSLD not followed by the expected "
                           f"__tls_get_addr call sequence")
                continue
            x86_64.relax_ld_to_le(buf, loc, form)
            skip_next = True
            continue
        elif act is DESC_TO_LE or act is DESC_TO_IE or act is DESC_CALL_NOP:
            if act is DESC_CALL_NOP:
                ok = x86_64.relax_tlsdesc_call(buf, loc)
            elif act is DESC_TO_IE:
                ok = x86_64.relax_tlsdesc(buf, loc, lk.gottp_slot(s) + A - P, True)
            else:
                ok = x86_64.relax_tlsdesc(buf, loc, lk.tp_offset(S + A + 4), False)
            if not ok:
                diag.error(f"{where(sec, r_off, syms)}: {r.name} not at the instruction the psABI prescribes")
            continue
        elif act is GOT:
            if kind == "got" and rtype != elf.R_X86_64_GOTPCREL and s.defined and not s.is_ifunc \
                    and not (s.is_abs and pic) and (s.is_local or not preemptible(s, mode, copied)) \
                    and x86_64.relax_gotpcrelx(buf, loc, S + A - P):
                continue
        elif act is TLSGD:
            v = lk.gd_slot(s) + A - P
            _PACK[(4, "s")](buf, loc, v)
            continue
        elif act is TLSLD:
            v = lk.ld_slot() + A - P
            _PACK[(4, "s")](buf, loc, v)
            continue
        elif act is TLSDESC:
            v = lk.desc_slot(s) + A - P      # lea x@tlsdesc(%rip): the descriptor's GOT pair
            _PACK[(4, "s")](buf, loc, v)
            continue
        elif act is NONE:
            continue                         # the descriptor call of a shared object stays as it is
        if act is TLS_TPOFF:
            # after the local-dynamic sequence became local-exec, x@dtpoff is a TP offset
            v = lk.tp_offset(S) + A
        else:
            v = r.calc(S, A, P, s, lk)
        check, lim, pack, size = tail[rtype]
        if check:
            if not lim[0] <= v < lim[1]:
                diag.error(f"{where(sec, r_off, syms)}: relocation truncated to fit: {r.name} against "
                           f"`{s.name or (tsec.name if tsec else '')}' (value 0x{v & MASK64:x})")
                continue
        elif size == 8:
            v &= MASK64
        elif size == 0:
            continue
        pack(buf, loc, v)
