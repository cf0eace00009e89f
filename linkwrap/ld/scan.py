"""SCAN: live sections' relocations -> Needs (GOT, PLT, copy relocations, dynamic symbols).

Input: Options, Mode, Resolution, Liveness (all only read). Output: a frozen Needs that sizes
every linker-made table before layout: the GOT slots (address and TP-offset
kinds), PLT entries (imports from shared libraries and local IFUNCs), copy
relocations, the dynamic symbol list, and how many dynamic relocations each
table will hold. Reports every undefined symbol (with the object and place
that references it) and every relocation this linker cannot do.

What each relocation needs is the classifier's answer (classify.action, against
classify.preemptible and the symbol's class); this pass turns actions into needs.
"""
from dataclasses import dataclass

from linkwrap.ld import classify, elf
from linkwrap.ld.classify import (BASEREL, CALL_DROPPED, CANONICAL_PLT, CLASSES, COPYREL, DESC_TO_IE, DIRECT,
                                  DYNREL, ERR_PIC, ERR_PREEMPT, ERR_TEXT, GD_TO_IE, GD_TO_LE, GOT,
                                  GOT_BASE_KINDS, GOTTP, LD_TO_LE, NONE, PLT, TLS_SEQUENCES, TLSDESC, TLSGD,
                                  TLSLD, preemptible)
from linkwrap.ld.diag import Unsupported, where
from linkwrap.ld.x86_64 import RECIPES

NEED_GOT, NEED_PLT, NEED_GOTTP, NEED_COPY, NEED_DYNSYM, NEED_CANON, NEED_GD, NEED_DESC = 1, 2, 4, 8, 16, 32, 64, 128


@dataclass(frozen=True)
class Mode:
    """What kind of executable is being made."""
    pic: bool            # position independent: -pie (dynamic or static-pie)
    dynamic: bool        # has .dynamic (PIE or links a shared library)
    interp: bool         # has PT_INTERP (links a shared library)
    base: int            # address of the ELF header
    shared: bool = False  # -shared: a shared object
    # a shared object's own definitions the loader may bind elsewhere (exported, default
    # visibility, not -Bsymbolic): references to them go through the GOT and PLT
    interposable: frozenset = frozenset()
    # an executable's undefined weak symbols are the loader's (GNU ld's x86 default, and -z
    # dynamic-undefined-weak); False (-z nodynamic-undefined-weak): 0 here, not in .dynsym
    undef_weak_dynamic: bool = True


@dataclass(frozen=True)
class Needs:
    got: tuple           # (kind, Symbol) per .got slot; kind 'addr' or 'tp'
    plt: tuple           # Symbols with a PLT entry, in entry order
    copies: tuple        # Symbols copied into .bss (copy relocations)
    dynsyms: tuple       # Symbols in .dynsym after the null entry, imports first
    n_relative: int      # RELATIVE relocations the relocate pass will emit for R_X86_64_64
    n_symbolic: int      # R_X86_64_64 against preemptible symbols
    uses_got_base: bool  # something references _GLOBAL_OFFSET_TABLE_ or GOT-relative values
    # library functions whose address a non-PIE executable takes: their PLT entry is the
    # function's address everywhere (.dynsym gives it as st_value), GNU ld's canonical PLT entry
    canonical: frozenset = frozenset()


def scan(opts, mode, res, live, diag) -> Needs:
    need = {}            # Symbol -> NEED_* bits
    get = need.get
    syms_of = res.syms
    got_syms = []
    plt_syms = []
    copies = []
    imports = []
    n_relative = 0
    n_symbolic = 0
    uses_got_base = False
    reported = set()
    # a shared object may leave symbols to the modules it is loaded with (GNU ld's default)
    allow_undefined = mode.shared and not opts.no_undefined
    ignore_undefined = opts.unresolved in ("ignore-all", "ignore-in-object-files")
    abs64_pre = {}       # preemptible symbol -> R_X86_64_64 count (symbolic, unless it gets copied)
    pic = mode.pic
    out = classify.output_kind(mode)
    needs_ld = False
    done = ()
    np = _numpy_for(live)
    if np is not None:
        # most relocations as arrays, per object; the loop below takes the sections they leave
        done, n_relative, uses_got_base = _scan_arrays(np, mode, res, live, need, abs64_pre, allow_undefined)
    for sec in live.sections:
        if not sec.flags & elf.SHF_ALLOC:
            continue
        if sec in done:
            continue
        relocs = sec.get_relocs()
        if not relocs:
            continue
        syms = syms_of[sec.file]
        writable = classify.writable(sec)
        skip_next = False
        for off, info, add in relocs:
            if skip_next:
                skip_next = False
                t = syms[info >> 32]
                if t.dso is not None and info & 0xFFFFFFFF == elf.R_X86_64_PLT32:
                    need[t] = get(t, 0) | NEED_PLT | NEED_DYNSYM   # GNU ld keeps __tls_get_addr's PLT entry
                continue
            rtype = info & 0xFFFFFFFF
            r = RECIPES.get(rtype)
            if r is None:
                diag.error(f"not supported yet: relocation {elf.reloc_name(rtype)} at "
                           f"{where(sec, off, syms)}")
                continue
            s = syms[info >> 32]
            if not s.is_local and not s.defined and s.strong_ref and not allow_undefined:
                if ignore_undefined:
                    raise Unsupported(f"--unresolved-symbols={opts.unresolved} with an undefined "
                                      f"reference (to `{s.name}')")
                key = (s.name, sec.file)
                if key not in reported:
                    reported.add(key)
                    diag.error(f"{where(sec, off, syms)}: undefined reference to `{s.name}'")
                continue
            kind = r.kind
            if s.is_ifunc and kind != "size":
                need[s] = get(s, 0) | NEED_PLT     # an IFUNC is reached through its PLT entry, always
            pre = not s.is_local and preemptible(s, mode)
            act = classify.action(kind, rtype, classify.sym_class(s, pre), out, writable)
            if pre:
                need[s] = get(s, 0) | NEED_DYNSYM
            if act is DIRECT or act is NONE:
                pass
            elif act is BASEREL:
                n_relative += 1
            elif act is DYNREL:
                abs64_pre[s] = abs64_pre.get(s, 0) + 1
            elif act is GOT:
                need[s] = get(s, 0) | NEED_GOT
            elif act is PLT:
                need[s] = get(s, 0) | NEED_PLT
            elif act is COPYREL:
                need[s] = get(s, 0) | NEED_COPY
            elif act is CANONICAL_PLT:
                need[s] = get(s, 0) | NEED_PLT | NEED_CANON
            elif act is GOTTP or act is GD_TO_IE or act is DESC_TO_IE:
                need[s] = get(s, 0) | NEED_GOTTP
            elif act is TLSGD:
                need[s] = get(s, 0) | NEED_GD
            elif act is TLSLD:
                needs_ld = True
            elif act is TLSDESC:
                need[s] = get(s, 0) | NEED_DESC
            elif act is ERR_PIC:
                what = "a shared object; recompile with -fPIC" if mode.shared else "a PIE object; recompile with -fPIE"
                diag.error(f"{where(sec, off, syms)}: relocation {r.name} against `{s.name or sec.name}' can not "
                           f"be used when making {what}")
            elif act is ERR_TEXT:
                if not opts.z_text:
                    # GNU ld links it with a warning and DT_TEXTREL (an error only under -z text):
                    # named, so that linkwrap falls back to it
                    raise Unsupported(f"text relocations (DT_TEXTREL): relocation {r.name} against "
                                      f"`{s.name or sec.name}' in read-only section `{sec.name}' ({sec.file.name})")
                diag.error(f"{where(sec, off, syms)}: relocation {r.name} against `{s.name or sec.name}' "
                           f"in read-only section `{sec.name}' needs a text relocation")
            elif act is ERR_PREEMPT:
                why = "it is defined in a shared library" if s.dso is not None else "the symbol is bound at run time"
                diag.error(f"{where(sec, off, syms)}: relocation {r.name} against `{s.name}' can not be used: {why}")
            if act in CALL_DROPPED:
                skip_next = True   # the __tls_get_addr call disappears with the relaxation
            if kind in GOT_BASE_KINDS:
                uses_got_base = True
    for s, n in abs64_pre.items():
        if get(s, 0) & NEED_COPY:
            n_relative += n if pic else 0   # the copy lives in the executable: bound here
        else:
            n_symbolic += n
    # Copy relocations bring the symbol (and its aliases) into the executable.
    for s in res.symtab.values():
        n = get(s)
        if not n:
            continue
        if n & NEED_COPY and s.dso is not None:
            copies.append(s)
        if n & NEED_GOT:
            got_syms.append(("addr", s))
        if n & NEED_GOTTP:
            got_syms.append(("tp", s))
        if n & NEED_GD:
            got_syms.append(("gd", s))
        if n & NEED_DESC:
            got_syms.append(("desc", s))
        if n & NEED_PLT and (s.is_ifunc or (s.dso is not None and not n & NEED_COPY) or
                             ((mode.interp or mode.shared) and not s.defined) or
                             (mode.shared and s.file is not None)):
            plt_syms.append(s)
        if n & NEED_DYNSYM or n & NEED_COPY:
            imports.append(s)
    # Like GNU ld, every library symbol a linked object names is in .dynsym (and so in the
    # version needs), even when no relocation is left that uses it (__tls_get_addr after relaxation).
    listed = set(imports)
    for s in res.symtab.values():
        if s.dso is not None and s not in listed:
            imports.append(s)
    # local symbols with GOT/PLT needs (static functions referenced via GOTPCREL),
    # in object order, then symbol order
    by_file = {}
    for s in need:
        if s.is_local:
            by_file.setdefault(s.file, []).append(s)
    for obj in res.objects:
        mine = by_file.get(obj)
        if mine is None:
            continue
        pos = {s: k for k, s in enumerate(syms_of[obj])}
        for s in sorted(mine, key=pos.__getitem__):
            n = need[s]
            if n & NEED_GOT:
                got_syms.append(("addr", s))
            if n & NEED_GOTTP:
                got_syms.append(("tp", s))
            if n & NEED_GD:
                got_syms.append(("gd", s))
            if n & NEED_DESC:
                got_syms.append(("desc", s))
            if n & NEED_PLT and s.is_ifunc:
                plt_syms.append(s)
    if needs_ld:
        got_syms.append(("ld", None))   # one (module, 0) pair serves every local-dynamic access
    if "_GLOBAL_OFFSET_TABLE_" in res.symtab:
        uses_got_base = True
    canonical = frozenset(s for s in plt_syms if get(s, 0) & NEED_CANON)
    return Needs(tuple(got_syms), tuple(plt_syms), tuple(copies), tuple(imports),
                 n_relative, n_symbolic, uses_got_base, canonical)


def _absolute(s, mode):
    """Its address does not move with the load address (absolute, or an unresolved weak -> 0)."""
    return s.is_abs or (not s.defined and not s.is_local)


def _numpy_for(live):
    """numpy when gc already read the relocations as arrays, or when they are enough to pay for it."""
    if classify.choice() == "python":
        return None
    # the link's relocations, debug ones included: relocate imports numpy for the same count
    if live.tables is None and not classify.worth_it([(s, 0, 0) for s in live.sections if s.rela is not None]):
        return None
    import numpy
    return numpy


# action -> (NEED_* bits, what else it asks: 0 nothing, 1 a RELATIVE, 2 a symbolic R_X86_64_64, 4 the
# loop: an error to name, a TLS sequence whose call it skips, the local-dynamic GOT pair)
_EFFECT = {DIRECT: (0, 0), NONE: (0, 0), BASEREL: (0, 1), DYNREL: (0, 2), GOT: (NEED_GOT, 0), PLT: (NEED_PLT, 0),
           COPYREL: (NEED_COPY, 0), CANONICAL_PLT: (NEED_PLT | NEED_CANON, 0), GOTTP: (NEED_GOTTP, 0),
           GD_TO_IE: (NEED_GOTTP, 4), DESC_TO_IE: (NEED_GOTTP, 0), TLSGD: (NEED_GD, 0), TLSLD: (0, 4),
           TLSDESC: (NEED_DESC, 0), GD_TO_LE: (0, 4), LD_TO_LE: (0, 4), ERR_PIC: (0, 4), ERR_TEXT: (0, 4),
           ERR_PREEMPT: (0, 4)}


def _scan_arrays(np, mode, res, live, need, abs64_pre, allow_undefined):
    """What the loop in scan() decides, per object with numpy: the needs of each symbol, RELATIVE and
    symbolic R_X86_64_64 counts. A section with anything to report (an undefined symbol, an unknown
    type, an action that is an error) or a TLS sequence is left to the loop, which names it in order.
    -> (the sections done, RELATIVE relocations, whether the GOT's base is used)."""
    from linkwrap.ld import rela
    from linkwrap.ld.objects import InputSection
    alive = live.alive
    tables = live.tables
    # gc's tables cover its candidates; an .eh_frame kept as parsed is read here
    covered = {sec for t in tables.values() for sec in t.secs} if tables is not None else ()
    by_obj = {}
    frames = []
    for sec in live.sections:
        if not sec.flags & elf.SHF_ALLOC:
            continue
        if sec.__class__ is InputSection:
            if sec.rela is not None and sec not in covered:
                by_obj.setdefault(sec.file, []).append(sec)
        elif sec.get_relocs():
            frames.append(sec)          # gc's .eh_frame copy: its own list
    work = []
    for obj, secs in by_obj.items():
        work.append((obj, rela.read(np, obj, secs, values=False), None))
    if tables is not None:
        for obj, t in tables.items():
            work.append((obj, t, np.fromiter(map(alive.__contains__, t.secs), dtype=bool, count=len(t.secs))))
    for sec in frames:
        work.append((sec.file, rela.from_rows(np, sec, sec.get_relocs()), None))
    out = classify.output_kind(mode)
    known = np.zeros(64, dtype=bool)
    seq = np.zeros(64, dtype=bool)
    sized = np.zeros(64, dtype=bool)
    gotbase = np.zeros(64, dtype=bool)
    for t, r in RECIPES.items():
        if t < 64:
            known[t] = True
            sized[t] = r.kind == "size"
            gotbase[t] = r.kind in GOT_BASE_KINDS
    seq[list(TLS_SEQUENCES)] = True   # sections holding these go to the loop, which skips their calls
    lut_bits = np.zeros(64 * 16, dtype=np.int64)
    lut_eff = np.zeros(64 * 16, dtype=np.int8)
    filled = set()
    bound = not mode.shared
    ifunc_type = elf.STT_GNU_IFUNC
    done = set()
    n_relative = 0
    uses_got_base = False
    get = need.get
    for obj, t, live_secs in work:
        syms = res.syms[obj]
        nsec = len(t.secs)
        typ = t.typ
        small = typ < 64
        typc = np.where(small, typ, 0)
        rows = live_secs[t.seg] if live_secs is not None else np.ones(len(typ), dtype=bool)
        slow = np.zeros(nsec, dtype=bool)
        odd = rows & (~small | ~known[typc] | seq[typc])
        if odd.any():
            slow[t.seg[odd]] = True
        nsym = len(syms)
        seen = np.zeros(nsym, dtype=bool)
        seen[t.sym[rows]] = True    # a scatter, not np.unique's sort
        used = np.flatnonzero(seen).tolist()
        undef = np.zeros(nsym, dtype=bool)
        ifunc = np.zeros(nsym, dtype=bool)
        pre = np.zeros(nsym, dtype=bool)
        cls = np.zeros(nsym, dtype=np.int64)
        other = []
        loc = rela.local_symbols(np, obj)
        if loc is not None and used:
            # the locals defined in a section, from the symbol table: class LOCAL, an IFUNC or not
            shndx, _, stype = loc
            ks = np.array(used, dtype=np.int64)
            lk = ks[ks < len(shndx)]
            sh = shndx[lk]
            plain = (sh > 0) & (sh < min(len(obj.sections), elf.SHN_ABS))
            if plain.any():
                # a local in a section parse did not keep has no section: the Symbols say
                plain &= rela.sections_kept(np, obj)[np.where(plain, sh, 0)]
            ifunc[lk[plain]] = stype[lk[plain]] == ifunc_type
            used = np.concatenate([lk[~plain], ks[ks >= len(shndx)]]).tolist()
        for k in used:
            s = syms[k]
            if s.section is not None and (bound or s.is_local) and not s.is_abs:
                if s.type == ifunc_type:
                    ifunc[k] = True         # class LOCAL, not preemptible, defined
                continue
            other.append(k)
        for k in other:
            s = syms[k]
            if not s.is_local and not s.defined and s.strong_ref and not allow_undefined:
                undef[k] = True
                continue
            p = not s.is_local and preemptible(s, mode)
            pre[k] = p
            ifunc[k] = s.is_ifunc
            cls[k] = CLASSES.index(classify.sym_class(s, p))
        sym = t.sym
        bad = rows & undef[sym]
        if bad.any():
            slow[t.seg[bad]] = True
        writable = np.fromiter((classify.writable(s) for s in t.secs), dtype=np.int64, count=nsec)
        combo = (typc * 8 + cls[sym]) * 2 + writable[t.seg]
        for c in np.unique(combo[rows & ~slow[t.seg]]).tolist():
            if c not in filled:
                filled.add(c)
                rtype = c >> 4
                act = classify.action(RECIPES[rtype].kind, rtype, CLASSES[(c >> 1) & 7], out, c & 1)
                lut_bits[c], lut_eff[c] = _EFFECT.get(act, (0, 0))
        eff = lut_eff[combo]
        bad = rows & (eff == 4)
        if bad.any():
            slow[t.seg[bad]] = True
        good = rows & ~slow[t.seg]
        if not good.any():
            continue
        bits = lut_bits[combo] | np.where(ifunc[sym] & ~sized[typc], NEED_PLT, 0) | np.where(pre[sym], NEED_DYNSYM, 0)
        n_relative += int(np.count_nonzero(good & (eff == 1)))
        dyn = good & (eff == 2)
        if dyn.any():
            ks, counts = np.unique(sym[dyn], return_counts=True)
            for k, n in zip(ks.tolist(), counts.tolist()):
                s = syms[k]
                abs64_pre[s] = abs64_pre.get(s, 0) + n
        if not uses_got_base and (good & gotbase[typc]).any():
            uses_got_base = True
        has = good & (bits != 0)
        if has.any():
            for key in np.unique(sym[has].astype(np.int64) * 256 + bits[has]).tolist():
                s = syms[key >> 8]
                need[s] = get(s, 0) | (key & 0xFF)
        done.update(s for s, sl, lv in zip(t.secs, slow.tolist(),
                                           live_secs.tolist() if live_secs is not None else [True] * nsec)
                    if lv and not sl)
    return done, n_relative, uses_got_base
