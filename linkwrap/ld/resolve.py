"""RESOLVE: Inputs -> Resolution (one Symbol per global name, the objects that are linked).

Input: Options, Inputs in command-line order. Output: a frozen Resolution. The
parse records (objects, sections, libraries) are only read: what resolve
decides about them (each object's symbol list, discarded COMDAT sections,
DT_NEEDED libraries) is in the Resolution. Symbols are resolve's own records;
no later pass changes them.

Rules (GNU ld's): files are taken in order; an archive member is pulled in
only when it defines a symbol that is undefined (and strongly referenced) at
that moment; --start-group ... --end-group repeats its archives until nothing
new is pulled in. A definition in a relocatable object beats a common symbol,
which beats a shared library's; strong beats weak; two strong definitions are
an error. COMDAT groups: the first group with a signature wins and the
sections of every later one are discarded. Shared libraries under
--as-needed become DT_NEEDED only if a linked object references them.
Last, the linker-defined symbols something references (_end,
__init_array_start, __start_SEC ...) are marked defined; layout gives them
their values.
"""
from dataclasses import dataclass

from linkwrap.ld import elf


class Symbol:
    """A symbol. Globals are shared by every file that names them; locals belong to one object."""
    __slots__ = ("name", "file", "section", "value", "size", "type", "bind", "visibility",
                 "is_abs", "is_common", "dso", "version", "strong_ref", "is_local", "linker_defined")

    def __init__(self, name):
        self.name = name
        self.file = None          # defining ObjectFile (None: undefined, from a DSO, or linker-defined)
        self.section = None       # defining InputSection (None: absolute / undefined)
        self.value = 0
        self.size = 0
        self.type = elf.STT_NOTYPE
        self.bind = elf.STB_GLOBAL
        self.visibility = elf.STV_DEFAULT
        self.is_abs = False
        self.is_common = False
        self.dso = None           # SharedFile that defines it, when no object does
        self.version = None       # the DSO's version name for it (GLIBC_2.2.5 ...)
        self.strong_ref = False   # some object references it non-weakly
        self.is_local = False
        self.linker_defined = False  # the linker gives it a value (_end, __start_SEC ...)

    @property
    def defined(self):
        return self.file is not None or self.dso is not None or self.is_abs or self.linker_defined

    @property
    def is_ifunc(self):
        return self.type == elf.STT_GNU_IFUNC and self.dso is None

    def __repr__(self):
        return f"Symbol({self.name})"


@dataclass(frozen=True)
class Resolution:
    symtab: dict                  # name -> Symbol (globals)
    objects: tuple                # ObjectFiles that are linked, in order
    dsos: tuple                   # SharedFiles, in order (needed or not)
    dso_names: frozenset          # every name that some shared library defines or references
    common: tuple                 # Symbols that are still common after resolution
    syms: dict                    # ObjectFile -> list of its Symbols, by symbol index (locals included)
    discarded: frozenset          # InputSections of COMDAT groups that lost (an earlier group won)
    needed: tuple                 # SharedFiles that become DT_NEEDED, in command-line order
    # --defsym NAME=SYM+OFF for SYM linker-defined (_end, _GLOBAL_OFFSET_TABLE_ ...), in command-line
    # order: (NAME, SYM, OFF); layout gives NAME SYM's value plus OFF (NAME is linker-defined too)
    linker_aliases: tuple = ()
    # the .tbss sections resolve made for TLS common symbols nothing defines (gc and layout place them)
    tls_commons: tuple = ()


# Symbols the linker defines when something references them (GNU ld's PROVIDE); layout sets the values.
LINKER_SYMBOLS = (
    "__ehdr_start", "__executable_start", "_etext", "etext", "__etext", "_edata", "edata", "__bss_start",
    "_end", "end", "__init_array_start", "__init_array_end", "__fini_array_start", "__fini_array_end",
    "__preinit_array_start", "__preinit_array_end", "__rela_iplt_start", "__rela_iplt_end",
    "_GLOBAL_OFFSET_TABLE_", "_DYNAMIC", "__GNU_EH_FRAME_HDR", "_TLS_MODULE_BASE_",
)


def is_dynamic(opts, dsos) -> bool:
    """The output has .dynamic: a PIE, or it links a shared library."""
    return bool(opts.pie or opts.shared or dsos)


class _Resolver:
    def __init__(self, diag, muldefs=False):
        self.diag = diag
        self.muldefs = muldefs    # --allow-multiple-definition: the first definition wins, silently
        self.symtab = {}
        self.objects = []
        self.dsos = []
        self.dso_defs = {}        # name -> SharedFile, first library that defines it
        # names undefined and strongly referenced right now; a dict, not a set: archive members
        # are pulled in first-reference order, so the output never depends on the hash seed
        self.undef = {}
        self.comdats = {}         # signature -> ObjectFile that owns it
        self.discarded = set()    # sections of COMDAT groups that lost
        self.syms = {}            # ObjectFile -> [Symbol] by symbol index
        self.pulled = {}          # Archive -> header offsets of the members already added
        self.commons = {}         # name -> Symbol, the symbols that are common right now
        self.claimed = set()      # SharedFiles that satisfied a reference or a common as they were added

    def add_object(self, obj):
        self.objects.append(obj)
        discarded = self.discarded
        for sig, members in obj.groups:
            if sig in self.comdats:
                for m in members:
                    s = obj.sections[m] if m < len(obj.sections) else None
                    if s is not None:
                        discarded.add(s)
            else:
                self.comdats[sig] = obj
        secs = obj.sections
        nsec = len(secs)
        syms = []
        symtab = self.symtab
        first_global = obj.first_global
        raw = obj.raw_syms
        # the locals (~60 % of a Rust debug link's symbols) with every field set in one place:
        # Symbol(name) and then the six that differ cost a third more
        new = Symbol.__new__
        append = syms.append
        abs_ = elf.SHN_ABS
        top = nsec      # a file of more sections has a gap of Nones there (objects._renumber_high)
        for name, info, other, shndx, value, size in raw[:first_global]:
            s = new(Symbol)
            s.name = name
            s.file = obj
            s.section = secs[shndx] if 0 < shndx < top else None
            s.value = value
            s.size = size
            s.type = info & 0xF
            s.bind = elf.STB_LOCAL
            s.visibility = elf.STV_DEFAULT
            s.is_abs = shndx == abs_
            s.is_common = False
            s.dso = None
            s.version = None
            s.strong_ref = False
            s.is_local = True
            s.linker_defined = False
            append(s)
        for name, info, other, shndx, value, size in raw[first_global:]:
            bind = info >> 4
            stype = info & 0xF
            if bind == elf.STB_LOCAL:
                s = Symbol(name)
                s.is_local = True
                s.bind = elf.STB_LOCAL
                s.type = stype
                s.value = value
                s.size = size
                s.file = obj
                if shndx == elf.SHN_ABS:
                    s.is_abs = True
                elif 0 < shndx < nsec:
                    s.section = secs[shndx]
                syms.append(s)
                continue
            s = symtab.get(name)
            if s is None:
                s = symtab[name] = Symbol(name)
                if name in self.dso_defs:
                    self._bind_dso(s, self.dso_defs[name])
            syms.append(s)
            vis = other & 3
            if vis and vis != elf.STV_DEFAULT and (s.visibility == elf.STV_DEFAULT or vis < s.visibility):
                s.visibility = vis
            if shndx == elf.SHN_UNDEF:
                if s.defined and stype != elf.STT_NOTYPE and s.type != elf.STT_NOTYPE and \
                        (stype == elf.STT_TLS) != (s.type == elf.STT_TLS):
                    self._tls_mismatch(s, obj)
                if bind != elf.STB_WEAK:
                    s.strong_ref = True
                    if not s.defined:
                        self.undef[name] = None
                if s.type == elf.STT_NOTYPE and not s.defined:
                    s.type = stype
                continue
            if shndx == elf.SHN_COMMON:
                self._define_common(s, obj, value, size, stype)
                continue
            sec = None
            if shndx != elf.SHN_ABS:
                sec = secs[shndx] if shndx < nsec else None
                if sec is None or sec in discarded:
                    continue  # defined in a discarded COMDAT section: the kept copy defines it
            self._define(s, obj, sec, value, size, stype, bind, shndx == elf.SHN_ABS)
        self.syms[obj] = syms

    def add_just_symbols(self, js):
        """-R FILE: its global and weak definitions, absolute, as an object's would be defined
        (just_symbols.py; the record is no object: nothing of it is linked)."""
        for name, info, other, value, size in js.symbols:
            s = self.symtab.get(name)
            if s is None:
                s = self.symtab[name] = Symbol(name)
                if name in self.dso_defs:
                    self._bind_dso(s, self.dso_defs[name])
            vis = other & 3
            if vis and (s.visibility == elf.STV_DEFAULT or vis < s.visibility):
                s.visibility = vis
            self._define(s, js, None, value, size, info & 0xF, info >> 4, True)

    def _tls_mismatch(self, s, ref_obj):
        d = s.file.name if s.file is not None else (s.dso.name if s.dso is not None else "?")
        self.diag.error(f"{s.name}: {'TLS' if s.type == elf.STT_TLS else 'non-TLS'} definition in {d} "
                        f"mismatches {'non-TLS' if s.type == elf.STT_TLS else 'TLS'} reference in {ref_obj.name}")

    def _bind_dso(self, s, so):
        value, size, stype, bind, ver, shndx = so.defs[s.name]
        s.dso = so
        s.version = ver
        s.value = value
        s.size = size
        s.type = stype
        s.bind = bind

    def _define(self, s, obj, sec, value, size, stype, bind, is_abs):
        if s.file is not None and not s.is_common:
            if bind == elf.STB_WEAK:
                return  # a weak definition never replaces an existing one
            if s.bind != elf.STB_WEAK:
                if bind != elf.STB_GNU_UNIQUE and not self.muldefs:
                    self.diag.error(f"{obj.name}: multiple definition of `{s.name}'; "
                                    f"{s.file.name}: first defined here")
                return
        elif s.is_common and bind == elf.STB_WEAK:
            return
        if s.is_common and stype != elf.STT_NOTYPE and (s.type == elf.STT_TLS) != (stype == elf.STT_TLS):
            # a common (TLS or not) that a definition of the other kind would replace: GNU ld's error
            self.diag.error(f"{s.name}: {'TLS' if s.type == elf.STT_TLS else 'non-TLS'} reference in {s.file.name} "
                            f"mismatches {'TLS' if stype == elf.STT_TLS else 'non-TLS'} definition in {obj.name}")
            return
        if s.type != elf.STT_NOTYPE and stype != elf.STT_NOTYPE and not s.defined and \
                (s.type == elf.STT_TLS) != (stype == elf.STT_TLS):
            self.diag.error(f"{s.name}: {'TLS' if stype == elf.STT_TLS else 'non-TLS'} definition in {obj.name} "
                            f"mismatches {'non-TLS' if stype == elf.STT_TLS else 'TLS'} reference")
        s.file = obj
        s.section = sec
        s.value = value
        s.size = size
        s.type = stype
        # STB_GNU_UNIQUE (a C++ inline function's static) stays unique in .symtab and .dynsym
        s.bind = bind if bind in (elf.STB_WEAK, elf.STB_GNU_UNIQUE) else elf.STB_GLOBAL
        s.is_abs = is_abs
        s.is_common = False
        s.dso = None
        s.version = None
        self.undef.pop(s.name, None)
        self.commons.pop(s.name, None)

    def _define_common(self, s, obj, align, size, stype):
        counts = s.dso is not None and (not s.dso.as_needed or s.dso in self.claimed)
        if (s.file is not None or counts) and s.type != elf.STT_NOTYPE and \
                (s.type == elf.STT_TLS) != (stype == elf.STT_TLS):
            what = "common" if s.is_common else "definition"
            where_ = s.file.name if s.file is not None else s.dso.name
            self.diag.error(f"{s.name}: {'TLS' if stype == elf.STT_TLS else 'non-TLS'} common in {obj.name} "
                            f"mismatches {'TLS' if s.type == elf.STT_TLS else 'non-TLS'} {what} in {where_}")
            return
        if counts and s.type not in (elf.STT_FUNC, elf.STT_GNU_IFUNC):
            return  # a library's data definition seen first beats a common (GNU ld), weak or not
        if s.file is not None and not s.is_common:
            return  # a real definition beats a tentative one
        if s.is_common:
            if size > s.size:
                s.size = size
                s.file = obj
            s.value = max(s.value, align)
            return
        s.file = obj
        s.section = None
        s.is_common = True
        self.commons[s.name] = s
        s.value = align             # st_value of a common symbol is its alignment
        s.size = size
        # a .tls_common stays TLS: the references and the .tdata/.tbss definition it meets are TLS
        s.type = elf.STT_TLS if stype == elf.STT_TLS else elf.STT_OBJECT
        s.bind = elf.STB_GLOBAL
        s.dso = None
        s.version = None
        self.undef.pop(s.name, None)

    def add_dso(self, so):
        self.dsos.append(so)
        symtab = self.symtab
        dso_defs = self.dso_defs
        claimed = False
        for name in so.defs:
            if name not in dso_defs:
                dso_defs[name] = so
                s = symtab.get(name)
                if s is None:
                    continue
                if not s.defined:
                    claimed = claimed or name in self.undef
                    self._bind_dso(s, so)
                    self.undef.pop(name, None)
                elif s.is_common and _dso_def_beats_common(so.defs[name]):
                    t = so.defs[name][2]
                    if t != elf.STT_NOTYPE and (t == elf.STT_TLS) != (s.type == elf.STT_TLS):
                        continue    # TLS against non-TLS: GNU ld keeps the common, silently
                    # GNU ld (_bfd_elf_merge_symbol): a library's strong data definition beats a
                    # common seen before it; the common's object only references it then
                    claimed = True
                    self.commons.pop(name, None)
                    s.file = s.section = None
                    s.is_common = False
                    self._bind_dso(s, so)
        if claimed:
            # under --as-needed GNU ld keeps a library's symbols only when it is needed as it is
            # loaded (it satisfies a reference or a common then): later commons do not beat those
            self.claimed.add(so)

    def pull_from_archive(self, ar) -> bool:
        """Load members that define currently undefined symbols, to a fixed point."""
        pulled = False
        done = self.pulled.setdefault(ar, set())
        if ar.whole:
            for h, mname, off, size in ar.members:
                if h not in done:
                    if ar.view[off:off + 4] == elf.ELFMAG:
                        done.add(h)
                        self.add_object(ar.member(h))
                        pulled = True
            return pulled
        index = ar.index
        while True:
            progress = False
            for name in list(self.undef):
                h = index.get(name)
                if h is None or name not in self.undef or h in done:
                    continue
                done.add(h)
                self.add_object(ar.member(h))
                progress = pulled = True
            # GNU ld (elf_link_add_archive_symbols): a common symbol pulls in the member that
            # defines it for real, and that definition replaces the common one
            for s in self.commons_wanting():
                h = index.get(s.name)
                if h is None or h in done or not s.is_common:
                    continue
                member = ar.member(h)
                if not _defines_for_real(member, s.name):
                    continue
                done.add(h)
                self.add_object(member)
                progress = pulled = True
            if not progress:
                return pulled

    def commons_wanting(self):
        return list(self.commons.values())


def _dso_def_beats_common(d):
    """d: a SharedFile.defs entry. A common symbol counts as a definition against a library's
    function or weak symbol (GNU ld), so only a strong non-function definition beats it."""
    value, size, stype, bind, ver, shndx = d
    return bind != elf.STB_WEAK and stype not in (elf.STT_FUNC, elf.STT_GNU_IFUNC)


def _defines_for_real(obj, name):
    for n, info, other, shndx, value, size in obj.raw_syms[obj.first_global:]:
        if n == name and shndx not in (elf.SHN_UNDEF, elf.SHN_COMMON) and info >> 4 != elf.STB_LOCAL:
            return True
    return False


def resolve(opts, inputs, diag) -> Resolution:
    r = _Resolver(diag, opts.allow_multiple_definition)
    for name in opts.undefined:
        # -u: undefined from the start, so archive members that define it are pulled in
        s = r.symtab.setdefault(name, Symbol(name))
        s.strong_ref = True
        r.undef[name] = None
    items = inputs.items
    group_stack = []
    for pos, item in enumerate(items):
        kind = item.kind
        if kind == "object":
            r.add_object(item.file)
        elif kind == "archive":
            r.pull_from_archive(item.file)
        elif kind == "shared":
            r.add_dso(item.file)
        elif kind == "just-symbols":
            r.add_just_symbols(item.file)
        elif kind == "group-start":
            group_stack.append(pos)
        elif kind == "group-end" and group_stack:
            start = group_stack.pop()
            archives = [it.file for it in items[start:pos] if it.kind == "archive"]
            while any([r.pull_from_archive(a) for a in archives]):
                pass
    dso_names = set()
    for so in r.dsos:
        dso_names.update(so.defs)
        dso_names.update(so.undefs)
    common = tuple(s for s in r.symtab.values() if s.is_common)
    tls_commons = ()
    if not opts.relocatable:     # -r keeps it a TLS common
        tls_commons = tuple(_tls_common_section(s) for s in common if s.type == elf.STT_TLS)
        common = tuple(s for s in common if not s.is_common or s.type != elf.STT_TLS)
    if opts.defsym and opts.relocatable:
        from linkwrap.ld.diag import Unsupported
        raise Unsupported("-r with --defsym")
    aliases = _defsyms(opts, r, diag)
    if not opts.relocatable:     # -r leaves them to the final link, undefined
        _reserve_linker_symbols(opts, r)
    for name, target, off, expr in aliases:
        if not r.symtab[target].linker_defined or target in _DEFINED_TOO_LATE or \
                (target == "__GNU_EH_FRAME_HDR" and not opts.eh_frame_hdr):
            diag.error(f"--defsym {name}={expr}: undefined symbol `{target}' referenced in expression")
    for name in opts.require_defined:
        if not r.symtab[name].defined:
            diag.error(f"required symbol `{name}' not defined")
    needed = _decide_needed(r)
    return Resolution(r.symtab, tuple(r.objects), tuple(r.dsos), frozenset(dso_names), common,
                      r.syms, frozenset(r.discarded), needed, tuple(a[:3] for a in aliases), tls_commons)


def _tls_common_section(s):
    """A TLS common symbol that no object defines for real: a .tbss section of its own, as GNU ld's
    *(.tcommon) puts it after the inputs' .tbss (commons go to .bss, which is no TLS). The section is
    resolve's record, not the object's (index -1); gc keeps it when something references the symbol."""
    from linkwrap.ld.objects import InputSection
    sec = InputSection(s.file, -1, ".tbss", (0, elf.SHT_NOBITS, elf.SHF_ALLOC | elf.SHF_WRITE | elf.SHF_TLS,
                                             0, 0, s.size, 0, 0, max(1, s.value), 0))
    s.section = sec
    s.value = 0
    s.is_common = False
    return sec


# Linker-defined symbols GNU ld 2.40 gives their values only after --defsym expressions are
# evaluated, so that `--defsym x=__ehdr_start` is its "undefined symbol ... referenced in expression".
_DEFINED_TOO_LATE = ("__ehdr_start", "_TLS_MODULE_BASE_")
# Assigned by GNU ld's default script without PROVIDE, after --defsym: `--defsym _end=X` changes nothing.
_SCRIPT_ASSIGNED = ("__bss_start", "_edata", "_end")


def _may_be_linker_defined(name):
    return name in LINKER_SYMBOLS or name.startswith(("__start_", "__stop_"))


def _defsyms(opts, r, diag):
    """--defsym NAME=EXPR for EXPR a number, a symbol, or a symbol plus or minus a number.

    The value is absolute (a number) or the other symbol's address plus the offset, which the
    Symbol carries as a definition in the same section (layout needs nothing more). A symbol the
    linker defines (_end, _GLOBAL_OFFSET_TABLE_, __start_SEC ...; or an earlier such alias) has no
    value before layout: NAME becomes linker-defined too, and -> the list of
    (NAME, SYM, OFF, EXPR) whose SYM the caller checks once the linker's symbols are known."""
    import re
    aliases = []
    for name, expr in opts.defsym:
        m = re.fullmatch(r"\s*(?:(0[xX][0-9a-fA-F]+|\d+)|([A-Za-z_.$][\w.$]*)\s*(?:([+-])\s*(0[xX][0-9a-fA-F]+|\d+))?)\s*",
                         expr)
        if m is None:
            from linkwrap.ld.diag import Unsupported
            raise Unsupported(f"--defsym {name}={expr} (only a number, or a symbol plus or minus a number)")
        s = r.symtab.get(name)
        if s is None:
            s = r.symtab[name] = Symbol(name)
        r.undef.pop(name, None)
        if name in _SCRIPT_ASSIGNED:
            # GNU ld's default script assigns these after --defsym, unconditionally (no PROVIDE): its
            # value wins, and so does the linker's here (the expression is still checked)
            t = r.symtab.get(m.group(2)) if m.group(2) else None
            if m.group(2) and not (t is not None and t.defined) and not _may_be_linker_defined(m.group(2)):
                diag.error(f"--defsym {name}={expr}: undefined symbol `{m.group(2)}' referenced in expression")
            continue
        if m.group(1):
            value, target = int(m.group(1), 0), None
        else:
            target = r.symtab.get(m.group(2))
            if target is not None and target.linker_defined or \
                    (target is None or not target.defined) and _may_be_linker_defined(m.group(2)):
                # referenced here, the linker defines it (as GNU ld's PROVIDE does for a script's reference)
                if target is None:
                    target = r.symtab[m.group(2)] = Symbol(m.group(2))
                off = int(m.group(4), 0) if m.group(4) else 0
                aliases.append((name, target.name, -off if m.group(3) == "-" else off, expr))
                _make_linker_defined(s)
                continue
            if target is None or target.file is None or target.is_common or target.dso is not None:
                # GNU ld would take a shared library's symbol or a common one too; not done here
                if target is None or not target.defined:
                    diag.error(f"--defsym {name}={expr}: undefined symbol `{m.group(2)}' referenced in expression")
                    continue
                from linkwrap.ld.diag import Unsupported
                raise Unsupported(f"--defsym {name}={expr} (a symbol that is not a plain object's definition)")
            off = int(m.group(4), 0) if m.group(4) else 0
            value = target.value + (-off if m.group(3) == "-" else off)
        s.file = target.file if target is not None else None
        s.section = target.section if target is not None else None
        s.value = value
        s.size = 0
        s.type = target.type if target is not None else elf.STT_NOTYPE
        s.bind = elf.STB_GLOBAL
        s.is_abs = target is None or target.is_abs
        s.is_common = False
        s.dso = None
        s.version = None
    return aliases


def _make_linker_defined(s):
    s.file = s.section = s.dso = s.version = None
    s.value = s.size = 0
    s.type = elf.STT_NOTYPE
    s.bind = elf.STB_GLOBAL
    s.is_abs = s.is_common = False
    s.linker_defined = True


def _is_c_ident(name):
    return bool(name) and name.replace("_", "a").isalnum() and not name[0].isdigit()


def _reserve_linker_symbols(opts, r):
    """Referenced linker-defined symbols count as defined from here (values come in layout)."""
    names = set(LINKER_SYMBOLS)
    if not is_dynamic(opts, r.dsos):
        names.discard("_DYNAMIC")
    if not opts.shared and not opts.relocatable:
        # an executable's script assigns these unconditionally: GNU ld writes them in .symtab, and
        # exports them with -E, referenced or not
        for name in _SCRIPT_ASSIGNED:
            if name not in r.symtab:
                r.symtab[name] = Symbol(name)
    discarded = r.discarded
    # every kept section's name, only when some undefined symbol is a __start_/__stop_ (~75k names)
    bounded = any(name.startswith(("__start_", "__stop_")) for name, s in r.symtab.items()
                  if s.file is None and s.dso is None and not s.is_abs)
    secnames = {s.name for obj in r.objects for s in obj.sections
                if s is not None and s not in discarded} if bounded else ()
    for name, s in r.symtab.items():
        if s.file is not None or s.dso is not None or s.is_abs:
            continue
        # __start_SEC/__stop_SEC only for C-identifier names (GNU ld's rule); gc keeps those sections
        if name in names or ((name.startswith("__start_") and name[8:] in secnames and _is_c_ident(name[8:])) or
                             (name.startswith("__stop_") and name[7:] in secnames and _is_c_ident(name[7:]))):
            s.linker_defined = True


def _decide_needed(r):
    """--as-needed: a library is DT_NEEDED if a linked object references one of its symbols non-weakly,
    or did as the library was loaded."""
    wanted = {s.dso for s in r.symtab.values() if s.dso is not None and s.strong_ref}
    # GNU ld decides as a library is loaded: one that satisfied a reference then stays needed
    # even if a later object's definition (or a common) takes the symbol over
    wanted |= r.claimed
    needed = []
    for so in r.dsos:
        if not so.as_needed:
            wanted.add(so)
        if so in wanted and all(so.soname != n.soname for n in needed):
            needed.append(so)
    for s in r.symtab.values():
        if s.dso is not None and s.dso not in wanted:
            s.dso = None         # only weak references: it stays an undefined weak
            s.version = None
            s.value = 0
    return tuple(needed)
