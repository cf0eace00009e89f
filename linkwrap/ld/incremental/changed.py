"""One changed input: what must hold for its patch to equal a full link, and its new places.

examine() -> None (the file is new but its sections are the same bytes: a rename, rustc's salt),
or a Plan: the object parsed alone, its symbols resolved as the full link resolved them (its own
definitions, stand-ins for the rest), its live sections, its members' new addresses. Each
condition that fails raises Fallback with the reason, in this order:
  sections added, removed or changed in kind; symbols added, removed or changed in kind; a COMDAT
  group's or merged-strings section's contents changed; it defines an IFUNC; the liveness of its
  sections changed (--gc-sections); what it references in other inputs changed (the GOT, PLT and
  dynamic tables could differ); its .eh_frame changed size; a section changed size where its chunk
  has no slack (debug sections, .init/.fini, arrays); a chunk overflowed.
"""
import os
from array import array

from linkwrap.ld import elf
from linkwrap.ld.incremental import full, record as rec, state as st
from linkwrap.ld.incremental.facade import Fallback, stand_in


class Plan:
    __slots__ = ("k", "obj", "syms", "live", "members", "places", "addr_of", "merged", "eh", "record", "block",
                 "lk", "symtab")


def hashed(paths):
    """-> {path: (its mapping, its file_hash)}, the files hashed on up to 4 threads at once:
    rustc rewrites every object of a crate it rebuilt (110 of 146 here, 148 MB), and hashlib lets
    go of the GIL while it hashes, so on 2 cores this takes half the time of one after another.
    A file that cannot be read maps to its Fallback."""
    from linkwrap.ld import parse
    from linkwrap.errors import LinkwrapError
    out = {}
    for path in paths:
        try:
            out[path] = parse._map(path)
        except LinkwrapError as e:
            out[path] = Fallback(f"{path}: {e}")
    todo = [p for p, v in out.items() if not isinstance(v, Fallback)]
    sums = {}

    def work(part):
        for p in part:
            sums[p] = st.file_hash(out[p])
    n = min(4, os.cpu_count() or 1, len(todo))
    if n > 1:
        import threading
        threads = [threading.Thread(target=work, args=(todo[i::n],)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        work(todo)
    return {p: v if isinstance(v, Fallback) else (v, sums[p]) for p, v in out.items()}


def examine(opts, state, k, path, ident, mapped=None):
    from linkwrap.ld.objects import ObjectFile
    from linkwrap.errors import LinkwrapError
    r = state["inputs"][k]
    got = mapped if mapped is not None else hashed([path])[path]
    if isinstance(got, Fallback):
        raise got
    view, sha = got
    if sha == r.get("sha"):
        return None                    # the same bytes under a new name or inode (rustc's rebuilds)
    try:
        obj = ObjectFile(path, view)
    except LinkwrapError as e:
        raise Fallback(f"{path}: {e}") from None
    old = r["secs"]
    was = _match(obj.sections, old, path)       # new section index -> old index, None: a new one
    hashes = [None if sec is None else st.section_hash(sec) for sec in obj.sections]
    same = [j is not None and h == old[j][6] for h, j in zip(hashes, was)]
    now = {j: i for i, j in enumerate(was) if j is not None}
    gone = [j for j, o in enumerate(old) if o is not None and j not in now]
    added = [sec for sec, j in zip(obj.sections, was) if sec is not None and j is None]
    shape = st.symbol_shape(obj)
    if not added and not gone and shape == r["shape"] and all(ok or sec is None for ok, sec in zip(same, obj.sections)):
        return None
    if "gshape" not in r:
        raise Fallback(f"{path}: its symbols changed, and the state is older than the relink that patches that")
    if rec.global_shape(obj) != r["gshape"]:
        raise Fallback(_globals_changed(state, r, obj, path))
    merged_idx = {m[0] for m in r["merged"]}
    for j in gone:
        o = old[j]
        if o[5] is not None:
            raise Fallback(f"{path}: COMDAT group {o[5]} went away")
        if j in merged_idx:
            raise Fallback(f"{path}: its merged strings or constants ({o[0]}) went away")
    for sec in added:
        if sec.group_sig is not None:
            raise Fallback(f"{path}: a new COMDAT group ({sec.group_sig})")
        if sec.flags & elf.SHF_MERGE and sec.flags & elf.SHF_ALLOC:
            raise Fallback(f"{path}: new merged strings or constants ({sec.name})")
    for sec, j, ok in zip(obj.sections, was, same):
        if ok or sec is None or j is None:
            continue
        if sec.group_sig is not None:
            raise Fallback(f"{path}: the contents of COMDAT group {sec.group_sig} changed")
        if j in merged_idx:
            raise Fallback(f"{path}: its merged strings or constants ({sec.name}) changed")
    from linkwrap.ld.diag import Diagnostics
    from linkwrap.ld.resolve import _Resolver
    rv = _Resolver(Diagnostics())
    rv.add_object(obj)
    syms = rv.syms[obj]
    glob = state["globals"]
    own = {}
    for s in syms:
        if s.is_local:
            continue
        g = glob.get(s.name)
        if g is None:
            raise Fallback(f"{path}: symbol {s.name} is new to the link")
        stand_in(s, g, k)
        if s.section is not None:
            own[s.name] = s
            if s.type == elf.STT_GNU_IFUNC:
                raise Fallback(f"{path}: defines an IFUNC ({s.name})")
    discarded = {obj.sections[now[j]] for j, o in enumerate(old) if o is not None and o[7] and j in now}
    live, split = _liveness(opts, state, r, obj, syms, own, discarded)
    kept_old = sorted(now[j] for j in r["live"] if j in now)
    if sorted(s.index for s in live if was[s.index] is not None) != kept_old:
        raise Fallback(f"{path}: which of its sections are live changed (--gc-sections)")
    refs = set()
    for sec in live:
        if sec.flags & elf.SHF_ALLOC and sec.rela is not None:
            for _off, info, _a in sec.get_relocs():
                s = syms[info >> 32]
                if not s.is_local:
                    refs.add((s.name, info & 0xFFFFFFFF))
    if st.digest(repr(sorted(refs)).encode()) != r["refs"]:
        raise Fallback(f"{path}: what it references in other inputs changed")
    eh = _eh_frame(opts, obj, syms, live, discarded, split)
    p = Plan()
    p.k, p.obj, p.syms, p.live, p.eh = k, obj, syms, live, eh
    p.lk = p.symtab = None
    merged = [(now[m[0]], m[1], m[2], m[3]) for m in r["merged"]]
    p.merged = {obj.sections[i]: (base, _arr(ins), _arr(outs)) for i, base, ins, outs in merged}
    _place(opts, state, r, p, path, now, set(added))
    # the .symtab block of its locals is written anew when its symbols or sections changed
    # (symtab.py); else its entries keep their places and only their values are written
    p.block = shape != r["shape"] or bool(added) or bool(gone)
    p.record = {"secs": [None if s is None else (s.name, s.type, s.flags, s.align, s.entsize, s.group_sig, h,
                                                 old[j][7] if j is not None else False)
                         for s, h, j in zip(obj.sections, hashes, was)],
                "sha": sha, "shape": shape, "gshape": rec.global_shape(obj), "merged": merged,
                "live": sorted(s.index for s in live)}
    return p


def _globals_changed(state, r, obj, path):
    """The reason a changed input's globals cannot be patched, as precise as the state says."""
    glob = state["globals"]
    fg = obj.first_global
    names = {n for n, _i, _o, x, _v, _s in obj.raw_syms[fg:]}
    for n, _i, _o, x, _v, _s in obj.raw_syms[fg:]:
        if glob.get(n) is None:
            return (f"{path}: a new global symbol {n} (its place among .symtab's globals follows the "
                    f"link's resolution order, which the state does not keep)" if x else
                    f"{path}: symbol {n} is new to the link")
    for n in r.get("defs", ()):
        if n not in names:
            return f"{path}: global symbol {n} was removed"
    return f"{path}: its global symbols changed in binding, type, visibility or definedness"


def _match(sections, old, path):
    """-> per section of the new object the index of the same section in the old record (None:
    new). By position when the kinds agree there (the usual case), else by name: a new function
    in its own section (-ffunction-sections, rustc) shifts the indexes of those after it."""
    if len(sections) == len(old) and all(
            (sec is None) == (o is None) and (sec is None or (sec.name, sec.type, sec.flags, sec.entsize,
                                                            sec.group_sig) == (o[0], o[1], o[2], o[4], o[5]))
            for sec, o in zip(sections, old)):
        return [None if sec is None else i for i, sec in enumerate(sections)]
    by_key = {}
    for j, o in enumerate(old):
        if o is not None:
            key = (o[0], o[1], o[2], o[4], o[5])
            if key in by_key:
                raise Fallback(f"{path}: sections were added or removed (and two have the same name)")
            by_key[key] = j
    out, seen = [], set()
    for sec in sections:
        if sec is None:
            out.append(None)
            continue
        key = (sec.name, sec.type, sec.flags, sec.entsize, sec.group_sig)
        if key in seen:
            raise Fallback(f"{path}: sections were added or removed (and two have the same name)")
        seen.add(key)
        j = by_key.get(key)
        if j is None and any(o is not None and o[0] == sec.name and o[5] == sec.group_sig for o in old):
            raise Fallback(f"{path}: section {sec.name} changed its kind or flags")
        out.append(j)
    return out


def _arr(b):
    a = array("q")
    a.frombytes(b)
    return a


def _liveness(opts, state, r, obj, syms, own, discarded):
    """-> (live sections of obj, the .eh_frame's split or None): gc's rules, within this object,
    seeded by what other inputs reference in it (the state's ext) and its own roots."""
    from linkwrap.ld import gc as gcpass
    from linkwrap.ld.eh_frame import _split_eh_frame
    kept = [s for s in obj.sections if s is not None and s not in discarded]
    ehsec = next((s for s in kept if s.name == ".eh_frame"), None)
    whole = not opts.gc_sections and not discarded
    fde_refs = {}
    split = None if ehsec is None or whole else _split_eh_frame(ehsec, syms, fde_refs)
    if not opts.gc_sections:
        return set(kept), split
    cand = {s for s in kept if s.flags & elf.SHF_ALLOC and s.name != ".eh_frame"}
    alive = set(kept) - cand
    work = []

    def mark(sec):
        if sec is not None and sec not in alive and sec in cand:
            alive.add(sec)
            work.append(sec)

    bounded = set(state["bounded"])
    for sec in kept:
        if sec not in cand:
            continue
        n = sec.name
        if (n in (".init", ".fini") or n.startswith(gcpass._ROOT_PREFIXES) or sec.flags & elf.SHF_GNU_RETAIN
                or sec.type in (elf.SHT_INIT_ARRAY, elf.SHT_FINI_ARRAY, elf.SHT_PREINIT_ARRAY, elf.SHT_NOTE)):
            mark(sec)
        elif n in bounded and gcpass._is_c_ident(n):
            mark(sec)
    for name in r["ext"]:
        s = own.get(name)
        if s is not None:
            mark(s.section)
    if split is not None and split.cies_relocs:
        for rec_relocs in split.cies_relocs:
            for rr in rec_relocs:
                mark(syms[rr[1] >> 32].section)
    while work:
        sec = work.pop()
        for _off, info, _a in sec.get_relocs():
            mark(syms[info >> 32].section)
        for t in fde_refs.get(sec, ()):
            mark(t)
    return alive, split


def _eh_frame(opts, obj, syms, live, discarded, split):
    from linkwrap.ld.eh_frame import EhFrame, _drop_dead_fdes
    ehsec = next((s for s in live if s.name == ".eh_frame"), None)
    if ehsec is None:
        return None
    if split is None:
        return EhFrame(ehsec, ehsec.bytes(), ehsec.get_relocs())
    frame, _n = _drop_dead_fdes(ehsec, split, live)
    return frame


def _place(opts, state, r, p, path, now, added):
    """New addresses of the object's members, chunk by chunk (layout's rule: each at its
    alignment, in section order); a chunk without slack must keep every member's size. now: old
    section index -> new; added: its new sections, placed in the chunk of their output section."""
    from linkwrap.ld.layout import output_name
    osecs = state["layout"]["osecs"]
    obj = p.obj
    addr_of = p.addr_of = {}
    p.members = []
    p.places = []
    chunk_of = {name: c for c, (name, _s, _c, _m) in enumerate(r["places"])}
    extra = {}
    for sec in sorted(added, key=lambda s: s.index):
        if sec not in p.live or sec in p.merged or not full.in_output(opts, sec):
            continue
        name = output_name(sec)
        if name not in chunk_of:
            raise Fallback(f"{path}: its new section {sec.name} goes to {name}, where it has no chunk")
        extra.setdefault(name, []).append(sec)
    for name, start, cap, mem in r["places"]:
        o = osecs[name]
        first = obj.sections[now[mem[0][0]]] if mem[0][0] in now else None
        # the policy's answer, not whether room is left: a chunk its input filled keeps its slack
        slack = first is not None and full.gets_slack(name, first)
        olds = {}
        for idx, old_off, old_size in mem:
            if idx not in now:
                if not slack:
                    raise Fallback(f"{path}: a section of its {name} went away where it has no slack")
                continue
            olds[now[idx]] = (old_off, old_size)
        order = sorted(list(olds) + [s.index for s in extra.get(name, ())])
        if not order:
            raise Fallback(f"{path}: its last section in {name} went away")
        if not slack and len(order) != len(mem):
            raise Fallback(f"{path}: a section was added to its {name}, where it has no slack")
        off = start
        placed = []
        for i in order:
            m = p.eh if (p.eh is not None and i == p.eh.input.index and name == ".eh_frame") else obj.sections[i]
            if m is None or (m is not p.eh and m not in p.live):
                raise Fallback(f"{path}: which of its sections are live changed")
            if not slack:
                old_off, old_size = olds[i]
                if m.size != old_size or (old_off % m.align if m.align > 1 else 0):
                    raise Fallback(f"{path}: {m.name} changed size where it has no slack "
                                   f"({old_size} -> {m.size} bytes in {name})")
                off = old_off
            else:
                a = m.align
                if a > 1:
                    off = (off + a - 1) & ~(a - 1)
                if a > o[6]:
                    raise Fallback(f"{path}: {m.name} needs a greater alignment than {name} has")
            if not placed and off != start:
                raise Fallback(f"{path}: its {name} chunk would start elsewhere (alignment)")
            placed.append((m, off))
            addr_of[m] = o[0] + off
            if m is p.eh:
                addr_of[m.input] = o[0] + off
            off += m.size
        if off > start + cap:
            raise Fallback(f"{path}: its {name} outgrew its chunk ({off - start} of {cap} bytes)")
        left = start + cap - off
        if slack and name == ".eh_frame" and left and (left < full.MIN_FILLER or left % 4):
            raise Fallback(f"{path}: its .eh_frame would leave {left} bytes of its chunk, too few for a "
                           f"filler record")
        p.places.append((name, start, cap, placed, off - start if slack else cap))
        p.members += [(m, name, off) for m, off in placed]
