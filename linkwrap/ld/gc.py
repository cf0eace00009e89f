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
    # ObjectFile -> rela.Table of its loaded sections' relocations when gc read them as arrays (scan
    # reads them again from here), else None
    tables: object = None

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
    kept.extend(res.tls_commons)   # TLS commons' own .tbss (resolve), after every input section
    tables = None
    if opts.gc_sections:
        alive, removed, tables = _collect(opts, res, kept, splits, fde_refs, exported)
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
    return Liveness(alive, tuple(sections), tuple(frames.values()), fde_count, removed, tables)


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
    # the section names some __start_/__stop_ symbol names (few), instead of two lookups per section
    bounded = {name[8:] if name.startswith("__start_") else name[7:]
               for name in symtab if name.startswith(("__start_", "__stop_"))}
    for sec in candidates:
        n = sec.name
        if (n in (".init", ".fini") or n.startswith(_ROOT_PREFIXES) or sec.flags & elf.SHF_GNU_RETAIN
                or sec.type in (elf.SHT_INIT_ARRAY, elf.SHT_FINI_ARRAY, elf.SHT_PREINIT_ARRAY, elf.SHT_NOTE)):
            roots.append(sec)
        elif n in bounded and _is_c_ident(n):
            roots.append(sec)
    from linkwrap.ld.symbol_lists import dynamic_list_matcher, excluded_from_export
    patterns = opts.dynamic_list + opts.export_symbols
    listed = dynamic_list_matcher(patterns) if patterns else None
    excluded = excluded_from_export(opts.exclude_libs)
    dso_names = res.dso_names
    everything = opts.export_dynamic
    for name, s in symtab.items():
        if s.section is not None and s.file is not None and (
                s in exported or ((everything or name in dso_names or (listed is not None and listed(name)))
                                  and not excluded(s))):
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
    np = _numpy_for(kept)
    tables = None
    if np is not None:
        tables = _mark_arrays(np, res, candidates, alive, work, fde_refs)
        work = []
    while work:
        sec = work.pop()
        syms = syms_of[sec.file]
        for r_off, info, add in sec.get_relocs():
            t = syms[info >> 32].section
            if t is not None and t not in alive:
                mark(t)
        for t in fde_refs.get(sec, ()):
            mark(t)
    return frozenset(alive), tuple(s for s in candidates if s not in alive), tables


def _numpy_for(sections):
    """numpy when the relocations of these sections -- the link's, debug ones included: relocate imports
    numpy for the same count -- are enough to pay for it (classify.worth_it), else None."""
    from linkwrap.ld import classify
    if not classify.worth_it([(s, 0, 0) for s in sections if s.rela is not None]):
        return None
    import numpy
    return numpy


def _mark_arrays(np, res, candidates, alive, work, fde_refs):
    """The marking of _collect with the relocations as arrays: the graph of candidate sections (an
    edge per relocation into another candidate, and from a function to its FDE's LSDA) walked
    breadth-first from the sections in `work`, a level at a time. Adds what it reaches to `alive`;
    -> {ObjectFile: rela.Table} of the candidates' relocations."""
    from itertools import repeat
    from linkwrap.ld import rela
    ids = {sec: i for i, sec in enumerate(candidates)}
    get = ids.get
    by_obj = {}
    for sec in candidates:
        if sec.rela is not None:
            by_obj.setdefault(sec.file, []).append(sec)
    srcs, dsts = [], []
    tables = {}
    for obj, secs in by_obj.items():
        t = tables[obj] = rela.read(np, obj, secs, values=False)
        syms = res.syms[obj]
        # the candidate each symbol's definition lies in (-1: none), for the symbols relocations name
        seen = np.zeros(len(syms), dtype=bool)
        seen[t.sym] = True          # a scatter, not np.unique's sort
        used = np.flatnonzero(seen)
        tgt = np.full(len(syms), -1, dtype=np.int64)
        loc = rela.local_symbols(np, obj)
        if loc is not None:
            # the locals' sections by index from the symbol table; the Symbols only for the globals
            shndx = loc[0]
            sid = np.fromiter(map(get, obj.sections, repeat(-1)), dtype=np.int64, count=len(obj.sections))
            local = used[used < len(shndx)]
            sh = shndx[local]
            ok = (sh > 0) & (sh < min(len(sid), elf.SHN_ABS))
            tgt[local[ok]] = sid[sh[ok]]
            used = used[used >= len(shndx)]
        used = used.tolist()
        tgt[used] = [get(syms[k].section, -1) for k in used]
        dst = tgt[t.sym]
        src = np.fromiter(map(ids.__getitem__, secs), dtype=np.int64, count=len(secs))[t.seg]
        keep = (dst >= 0) & (dst != src)
        srcs.append(src[keep])
        dsts.append(dst[keep])
    extra = [(ids[sec], get(x, -1)) for sec, refs in fde_refs.items() if sec in ids for x in refs]
    extra = [e for e in extra if e[1] >= 0]
    if extra:
        srcs.append(np.array([e[0] for e in extra], dtype=np.int64))
        dsts.append(np.array([e[1] for e in extra], dtype=np.int64))
    n = len(candidates)
    src = np.concatenate(srcs) if srcs else np.zeros(0, dtype=np.int64)
    dst = np.concatenate(dsts) if dsts else np.zeros(0, dtype=np.int64)
    order = np.argsort(src, kind="stable")
    dst = dst[order]
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=start[1:])
    live = np.zeros(n, dtype=bool)
    frontier = np.array(sorted({ids[sec] for sec in work}), dtype=np.int64)
    live[frontier] = True
    while len(frontier):
        lo = start[frontier]
        cnt = start[frontier + 1] - lo
        total = int(cnt.sum())
        if not total:
            break
        at = np.repeat(lo - (np.cumsum(cnt) - cnt), cnt) + np.arange(total, dtype=np.int64)
        reached = dst[at]
        frontier = np.unique(reached[~live[reached]])
        live[frontier] = True
    from itertools import compress
    alive.update(compress(candidates, live.tolist()))
    return tables
