"""SCAN: live sections' relocations -> Needs (GOT, PLT, copy relocations, dynamic symbols).

Input: Options, Mode, Resolution, Liveness (all only read). Output: a frozen Needs that sizes
every linker-made table before layout: the GOT slots (address and TP-offset
kinds), PLT entries (imports from shared libraries and local IFUNCs), copy
relocations, the dynamic symbol list, and how many dynamic relocations each
table will hold. Reports every undefined symbol (with the object and place
that references it) and every relocation this linker cannot do.

A symbol is *preemptible* when the dynamic loader picks its definition: it
is defined by a shared library, or it is an undefined weak in a dynamically
linked output. Everything the executable defines itself is bound here.
"""
from dataclasses import dataclass

from linkwrap.ld import elf
from linkwrap.ld.diag import Unsupported
from linkwrap.ld.x86_64 import RECIPES

NEED_GOT, NEED_PLT, NEED_GOTTP, NEED_COPY, NEED_DYNSYM, NEED_CANON = 1, 2, 4, 8, 16, 32


@dataclass(frozen=True)
class Mode:
    """What kind of executable is being made."""
    pic: bool            # position independent: -pie (dynamic or static-pie)
    dynamic: bool        # has .dynamic (PIE or links a shared library)
    interp: bool         # has PT_INTERP (links a shared library)
    base: int            # address of the ELF header


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


def preemptible(s, mode, copied=frozenset()):
    """copied: the symbols synthetic placed in .bss by copy relocations (bound here after all)."""
    if s.dso is not None:
        return s not in copied
    return (mode.interp and not s.is_local and not s.defined and s.visibility == elf.STV_DEFAULT)


def where(sec, off, syms):
    """'obj.o: in function `f': (.text+0x1c)' like GNU ld (the function when one covers the offset).

    syms: the Symbols of sec's object (Resolution.syms)."""
    fn = None
    for s in syms or ():
        if s.section is sec and s.type == elf.STT_FUNC and s.value <= off < s.value + max(s.size, 1):
            fn = s.name
            break
    head = f"{sec.file.name}: in function `{fn}':" if fn else f"{sec.file.name}:"
    return f"{head}({sec.name}+0x{off:x})"


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
    ignore_undefined = opts.unresolved in ("ignore-all", "ignore-in-object-files")
    abs64_pre = {}       # preemptible symbol -> R_X86_64_64 count (symbolic, unless it gets copied)
    pic = mode.pic
    for sec in live.sections:
        if not sec.flags & elf.SHF_ALLOC:
            continue
        relocs = sec.get_relocs()
        if not relocs:
            continue
        syms = syms_of[sec.file]
        writable = sec.flags & elf.SHF_WRITE
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
            if not s.is_local and not s.defined and s.strong_ref:
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
                need[s] = get(s, 0) | NEED_PLT
            pre = not s.is_local and preemptible(s, mode)
            if kind == "pc":
                if pre:
                    if s.type == elf.STT_OBJECT and s.dso is not None:
                        need[s] = get(s, 0) | NEED_COPY
                    elif s.dso is not None or rtype == elf.R_X86_64_PLT32:
                        need[s] = get(s, 0) | NEED_PLT | NEED_DYNSYM
                        if rtype != elf.R_X86_64_PLT32 and s.dso is not None and not pic:
                            need[s] |= NEED_CANON     # its address is taken, not only called
            elif kind == "abs64":
                if pre and not pic and not writable and s.dso is not None:
                    # a read-only pointer in a non-PIE executable: bound here, to a copy of the
                    # library's data or to the function's canonical PLT entry (GNU ld does both)
                    need[s] = get(s, 0) | (NEED_COPY if s.type == elf.STT_OBJECT else
                                           NEED_PLT | NEED_DYNSYM | NEED_CANON)
                elif pre:
                    if not writable:
                        diag.error(f"{where(sec, off, syms)}: relocation R_X86_64_64 against `{s.name}' in "
                                   f"read-only section needs a text relocation")
                    need[s] = get(s, 0) | NEED_DYNSYM
                    abs64_pre[s] = abs64_pre.get(s, 0) + 1
                elif pic and not _absolute(s, mode):
                    if not writable:
                        diag.error(f"{where(sec, off, syms)}: relocation R_X86_64_64 against `{s.name or sec.name}' "
                                   f"in read-only section `{sec.name}' needs a text relocation")
                    n_relative += 1
            elif kind == "abs32":
                if pic and not _absolute(s, mode):
                    diag.error(f"{where(sec, off, syms)}: relocation {r.name} against `{s.name or sec.name}' can not "
                               f"be used when making a PIE object; recompile with -fPIE")
                elif pre:
                    need[s] = get(s, 0) | (NEED_COPY if s.type == elf.STT_OBJECT else NEED_PLT | NEED_DYNSYM)
                    if s.type != elf.STT_OBJECT and s.dso is not None:
                        need[s] |= NEED_CANON
            elif kind == "got":
                need[s] = get(s, 0) | NEED_GOT
                if pre:
                    need[s] = get(s, 0) | NEED_DYNSYM
            elif kind == "gottp":
                need[s] = get(s, 0) | NEED_GOTTP
                if pre:
                    need[s] = get(s, 0) | NEED_DYNSYM
            elif kind == "tpoff":
                if pre:
                    diag.error(f"{where(sec, off, syms)}: relocation {r.name} against `{s.name}' can not be used: "
                               f"it is defined in a shared library")
            elif kind == "tlsgd":
                if pre:
                    need[s] = get(s, 0) | NEED_GOTTP | NEED_DYNSYM
                skip_next = True   # the __tls_get_addr call disappears with the relaxation
            elif kind == "tlsld":
                skip_next = True
            elif kind == "tlsdesc":
                if pre:   # relaxed to initial-exec: a GOT slot with the TP offset
                    need[s] = get(s, 0) | NEED_GOTTP | NEED_DYNSYM
            elif kind == "got64":
                need[s] = get(s, 0) | NEED_GOT
                if pre:
                    need[s] = get(s, 0) | NEED_DYNSYM
                uses_got_base = True
            elif kind == "pltoff":
                if pre:
                    need[s] = get(s, 0) | NEED_PLT | NEED_DYNSYM
                uses_got_base = True
            elif kind == "gotbase":
                uses_got_base = True
                if pre and rtype == elf.R_X86_64_GOTOFF64:
                    # S - GOT needs S at link time; GNU ld refuses it for a symbol bound at run time
                    diag.error(f"{where(sec, off, syms)}: relocation R_X86_64_GOTOFF64 against `{s.name}' can not "
                               f"be used: the symbol is bound at run time")
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
        if n & NEED_PLT and (s.is_ifunc or (s.dso is not None and not n & NEED_COPY) or
                             (mode.interp and not s.defined)):
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
            if n & NEED_PLT and s.is_ifunc:
                plt_syms.append(s)
    if "_GLOBAL_OFFSET_TABLE_" in res.symtab:
        uses_got_base = True
    canonical = frozenset(s for s in plt_syms if get(s, 0) & NEED_CANON)
    return Needs(tuple(got_syms), tuple(plt_syms), tuple(copies), tuple(imports),
                 n_relative, n_symbolic, uses_got_base, canonical)


def _absolute(s, mode):
    """Its address does not move with the load address (absolute, or an unresolved weak -> 0)."""
    return s.is_abs or (not s.defined and not s.is_local)
