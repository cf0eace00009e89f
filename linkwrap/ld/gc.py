"""GC: Resolution -> Liveness. Which sections are kept; .eh_frame cut to the kept functions.

This file implements a mark-sweep garbage collector for --gc-sections. The
vertices are sections and the edges are relocations. Roots are the entry
symbol, init/fini arrays, .init/.fini, notes, SHF_GNU_RETAIN sections,
sections that __start_/__stop_ symbols name, and symbols shared libraries may
look up. .eh_frame is not a root and its relocations are not edges: an FDE
keeps its LSDA alive only when the function it describes is alive.

Without --gc-sections every section is kept except COMDAT duplicates. In both
cases each .eh_frame is then rewritten without the FDEs of dropped functions
(their CIE pointers adjusted), which is what lets .eh_frame_hdr be exact.

Input: Options, Resolution. Output: a frozen Liveness: the set of live input
sections (`sec in live`), and the list layout bins, where each .eh_frame is a
new EhFrame record standing in for the InputSection parse made (which stays
as it was).
"""
from dataclasses import dataclass

from linkwrap.ld import elf
from linkwrap.ld.eh_frame import EhFrame, _count_fdes, _drop_dead_fdes, _split_eh_frame  # noqa: F401 (gc.EhFrame)


@dataclass(frozen=True)
class Liveness:
    alive: frozenset          # live InputSections (ALLOC and not); `sec in liveness` asks this
    sections: tuple           # what layout places, in input order: live InputSections, EhFrames for .eh_frame
    eh_frames: tuple          # the EhFrames, in input order
    fde_count: int            # FDEs kept in all of them (sizes .eh_frame_hdr)
    removed: tuple            # sections dropped by --gc-sections (for --print-gc-sections)

    def __contains__(self, sec):
        return sec in self.alive


_ROOT_PREFIXES = (".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors", ".jcr", ".note")


def _is_c_ident(name):
    return name.replace("_", "a").isalnum() and not name[0].isdigit()


def mark_live(opts, res, diag, exported=()) -> Liveness:
    """exported: a shared object's exported Symbols (roots, like an executable's entry)."""
    discarded = res.discarded
    syms_of = res.syms
    kept = []           # sections resolution kept, in input order
    eh_at = []          # index in kept of each .eh_frame
    splits = {}         # .eh_frame InputSection -> _Split, or None: taken whole (only counted)
    fde_refs = {}       # section -> sections its FDEs reference (LSDA): kept alive with it
    for obj in res.objects:
        secs = obj.sections
        # Only objects that lost sections (COMDAT duplicates, or any with --gc-sections) need
        # their .eh_frame cut into records and rewritten; the others are just counted.
        whole = not opts.gc_sections and not (discarded and any(s in discarded for s in secs))
        for sec in secs:
            if sec is None or sec in discarded:
                continue
            if sec.name == ".eh_frame":
                eh_at.append(len(kept))
                splits[sec] = None if whole else _split_eh_frame(sec, syms_of[obj], fde_refs)
            kept.append(sec)
    if opts.gc_sections:
        alive, removed = _collect(opts, res, kept, splits, fde_refs, exported)
    else:
        alive, removed = frozenset(kept), ()
    frames = {}
    fde_count = 0
    for sec, split in splits.items():
        if split is None:
            fde_count += _count_fdes(sec)
            frames[sec] = EhFrame(sec, sec.bytes(), sec.get_relocs())
        else:
            frames[sec], n = _drop_dead_fdes(sec, split, alive)
            fde_count += n
    sections = list(kept)
    for k in eh_at:
        sections[k] = frames[kept[k]]
    if opts.gc_sections:
        sections = [s for s in sections if s in alive or s.__class__ is EhFrame]
    return Liveness(alive, tuple(sections), tuple(frames.values()), fde_count, removed)


def _collect(opts, res, kept, splits, fde_refs, exported=()):
    """Mark from the roots; -> (live sections, sections removed)."""
    symtab = res.symtab
    syms_of = res.syms
    work = []
    candidates = [sec for sec in kept if sec.flags & elf.SHF_ALLOC and sec.name != ".eh_frame"]
    # non-alloc (debug) sections are kept; .eh_frame is filtered by FDE
    cand = set(candidates)
    alive = set(kept)
    alive.difference_update(cand)

    def mark(sec):
        if sec is not None and sec not in alive and sec in cand:
            alive.add(sec)
            work.append(sec)

    roots = []
    entry = symtab.get(opts.entry)
    if entry is not None and entry.section is not None:
        roots.append(entry.section)
    for sec in candidates:
        n = sec.name
        if (n in (".init", ".fini") or n.startswith(_ROOT_PREFIXES) or sec.flags & elf.SHF_GNU_RETAIN
                or sec.type in (elf.SHT_INIT_ARRAY, elf.SHT_FINI_ARRAY, elf.SHT_PREINIT_ARRAY, elf.SHT_NOTE)):
            roots.append(sec)
        elif _is_c_ident(n) and (f"__start_{n}" in symtab or f"__stop_{n}" in symtab):
            roots.append(sec)
    from linkwrap.ld.options import dynamic_list_matcher
    listed = dynamic_list_matcher(opts.dynamic_list)
    for name, s in symtab.items():
        if s.section is not None and s.file is not None and (opts.export_dynamic or name in res.dso_names
                                                             or listed(name) or s in exported):
            roots.append(s.section)
    # what -u, -init/-fini and --defsym name is kept, as GNU ld keeps it
    for name in (*opts.undefined, opts.init, opts.fini, *(d[0] for d in opts.defsym)):
        s = symtab.get(name)
        if s is not None and s.section is not None:
            roots.append(s.section)
    for sec in roots:
        mark(sec)
    # the live .eh_frame's CIEs reference personality routines; FDEs are handled per function
    for sec, split in splits.items():
        if split is not None and split.cies_relocs:
            syms = syms_of[sec.file]
            for rec_relocs in split.cies_relocs:
                for r in rec_relocs:
                    mark(syms[r[1] >> 32].section)
    while work:
        sec = work.pop()
        syms = syms_of[sec.file]
        for r_off, info, add in sec.get_relocs():
            t = syms[info >> 32].section
            if t is not None and t not in alive:
                mark(t)
        for t in fde_refs.get(sec, ()):
            mark(t)
    return frozenset(alive), tuple(s for s in candidates if s not in alive)
