"""Linker-made sections, each behind one small interface (after lld's SyntheticSection, base.py).

    size()        bytes it occupies; fixed once created (called by layout)
    is_needed()   whether it appears in the output at all
    finalize(lk)  compute contents that depend on addresses (after layout)
    write_to(buf, lk) -> int   write itself into the output image; returns bytes written,
                  which the writer checks against size() (wild's "filled == reserved")

Input: Options, Mode, Resolution, Liveness, Needs (all only read). Output:
Synthetics. The GOT/PLT/dynamic-symbol index of each symbol is kept by the
section that owns the slot (Got.index, Got.tp_index, Got.gd_index, Plt.index, DynSym.index),
and BssAlloc.placed holds where common symbols and copy-relocated data sit in
.bss (RelroCopies.placed: the copies of read-only data, in .data.rel.ro): no Symbol is changed. Addresses come from the Layout (lk.addr_of[section]).

The package: base.py (the interface), strings.py (.strtab/.dynstr, .comment, merged SHF_MERGE
sections), symbols.py (.symtab, .dynsym, .gnu.hash, symbol versions), got_plt.py (.got, .got.plt,
.plt), dynamic.py (.dynamic, .interp, .rela.dyn/.rela.plt, .bss's commons and copies), notes.py
(build-id, properties); .eh_frame_hdr is with the rest of .eh_frame in ld/eh_frame.py. create()
below decides which exist.
"""
import os
from dataclasses import dataclass

from linkwrap.ld import elf
from linkwrap.ld.diag import Unsupported
from linkwrap.ld.symbol_lists import dynamic_list_matcher, excluded_from_export
from linkwrap.ld.synthetic.base import Synthetic  # noqa: F401 (the interface)
from linkwrap.ld.synthetic.dynamic import BssAlloc, Dynamic, Interp, RelaDyn, RelaPlt
from linkwrap.ld.synthetic.got_plt import Got, GotPlt, Plt
from linkwrap.ld.synthetic.notes import BuildId, FEATURE_1_AND, FEATURE_1_IBT, PackageNote, PropertyNote, merge_properties
from linkwrap.ld.synthetic.strings import Comment, DynStr, MergedSection, merge_sections  # noqa: F401
from linkwrap.ld.synthetic.symbols import DynSym, GnuHash, SymTab, SysvHash, VerDef, VerNeed, VerSym


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


# the linker-defined symbols an executable exports like its own (GNU ld's script assigns them)
SCRIPT_ASSIGNED = ("__bss_start", "_edata", "_end")


def create(opts, mode, res, live, needs, shared_exports=None) -> Synthetics:
    from linkwrap.ld.eh_frame import EhFrameHdr   # eh_frame builds on synthetic.base: imported here
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
    out = [bss, bss.relro, got, plt, got_plt]
    if mode.dynamic:
        dynstr = DynStr()
        listed = dynamic_list_matcher(opts.dynamic_list + opts.export_symbols)
        excluded = excluded_from_export(opts.exclude_libs)
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
                if ((s.file is not None or (s.linker_defined and name in SCRIPT_ASSIGNED)) and not s.is_local and s.visibility == elf.STV_DEFAULT and s.defined
                        and s not in copied and (opts.export_dynamic or name in res.dso_names or listed(name))
                        and not excluded(s)):
                    exports.append(s)
        dynsym = DynSym(dynstr, imports, exports, copied, needs.canonical)
        verneed = VerNeed(dynstr, dynsym, res.needed, 1 + (verdef.info if verdef is not None else 1))
        versym = VerSym(dynsym, verneed, verdef)
        out += [dynstr, dynsym, verneed, versym]
        if opts.hash_style in ("gnu", "both"):
            out.append(GnuHash(dynsym))
        if opts.hash_style in ("sysv", "both"):
            out.append(SysvHash(dynsym))
        if verdef is not None:
            out.append(verdef)
        if mode.interp:
            out.append(Interp(opts.dynamic_linker))
    rela_dyn = RelaDyn(".rela.dyn", n_dyn, dynsym)
    rela_plt = RelaPlt(plt, dynsym)
    out += [rela_dyn, rela_plt]
    if mode.dynamic:
        # .dynamic asks only whether the init/fini arrays are there: no other name maps to them
        arrays = (".preinit_array", ".init_array", ".fini_array")
        present = {output_name(s) for s in live.sections if s.name.startswith(arrays)}
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
    if opts.package_metadata:
        out.append(PackageNote(opts.package_metadata))
    build_id = None
    if opts.build_id:
        build_id = BuildId(opts.build_id)
        out.append(build_id)
    symtab = None
    forced = frozenset()
    if opts.emit_relocs:
        from linkwrap.ld import emit_relocs
        forced = frozenset(emit_relocs.referenced(res, live))
    if not opts.strip_all:
        out.append(Comment())
        localized = frozenset()
        if shared_exports is not None:
            localized = frozenset(s for s in res.symtab.values() if s.file is not None and s.defined
                                  and s not in shared_exports.version)
        elif opts.exclude_libs or mode.dynamic:
            localized = _forced_local(opts, res)
        symtab = SymTab(opts, res, live, copied, localized,
                        (mode.interp or mode.shared) and opts.z_dynamic_undefined_weak, forced)
        out += [symtab, symtab.strtab]
    props = merge_properties(opts, res.objects)
    if props:
        if props.get(FEATURE_1_AND, 0) & FEATURE_1_IBT and needs.plt:
            # GNU ld then writes an IBT PLT (.plt.sec, endbr64 in every entry); these entries have none
            raise Unsupported("PLT entries in an IBT-enabled output (-z ibt, or every input marked IBT)")
        out.append(PropertyNote(props))
    merged = merge_sections(opts, live)
    out += merged
    merged_of = {sec: m for m in merged for sec in m.inputs}
    if opts.emit_relocs:
        from linkwrap.ld.relocate import KeptCopies
        out += emit_relocs.create(opts, live, merged_of, output_name, symtab, res, KeptCopies(res))
    needed_list = tuple(s for s in out if s.is_needed())
    if opts.emit_relocs:
        # one section symbol per output section layout will make of these (emit_relocs.py)
        names = {output_name(sec) for sec in live.sections if sec not in merged_of}
        names.update(syn.name for syn in needed_list if not isinstance(syn, emit_relocs.EmittedRelocs)
                     and syn is not symtab and syn is not symtab.strtab)
        symtab.add_section_symbols(len(names))
    return Synthetics(needed_list, dynsym, dynstr, dynamic, got, got_plt, plt, rela_dyn, rela_plt,
                      eh_hdr, build_id, bss, tuple(bss.copies), copied, needs.canonical,
                      merged_of, gnu_osabi(res))


def _forced_local(opts, res):
    """An executable's globals GNU ld writes LOCAL in .symtab (bfd's forced_local): those of the
    --exclude-libs archives, and, in a dynamic executable, the hidden ones it would otherwise
    export (-E, a dynamic list, a name a library defines or references). The other hidden ones
    stay GLOBAL HIDDEN."""
    excluded = excluded_from_export(opts.exclude_libs)
    listed = dynamic_list_matcher(opts.dynamic_list + opts.export_symbols)
    everything, dso_names = opts.export_dynamic, res.dso_names
    hidden = (elf.STV_HIDDEN, elf.STV_INTERNAL)
    return frozenset(s for name, s in res.symtab.items() if s.file is not None and not s.is_local and s.defined
                     and (excluded(s) or (s.visibility in hidden and (everything or name in dso_names or listed(name)))))


def gnu_osabi(res) -> bool:
    """GNU ld marks the output ELFOSABI_GNU when an object (not a library) gives it a global
    STT_GNU_IFUNC or STB_GNU_UNIQUE symbol (elf_link_add_object_symbols' has_gnu_osabi)."""
    return any(s.file is not None and not s.is_local and
               (s.type == elf.STT_GNU_IFUNC or s.bind == elf.STB_GNU_UNIQUE) for s in res.symtab.values())


def _defined(res, name):
    s = res.symtab.get(name)
    return s if s is not None and s.defined and s.dso is None else None
