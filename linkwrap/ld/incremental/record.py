"""What a relink needs, read from a finished full incremental link: the state dict (state.py).

  inputs    per input file in link order: its key, path and identity; for an object (not an
            archive member) the hash and shape of each section, its liveness, its chunks and
            members' places, its merged-string pieces, its symbols' .symtab/.dynsym entries, the
            (global, type) pairs its live sections reference, and its dynamic relocations' count
  globals   name -> what a reference to it resolves to (address, PLT/GOT slots, class facts)
  sites     name -> the places in other inputs that refer to it (the reverse index), packed int64
            (file offset, P, type | writable << 32 | loaded << 33, addend)
  bounded   the sections a __start_/__stop_ global bounds (the one question a relink asks of all names)
  layout    output sections, TLS block, .rela.dyn/.eh_frame_hdr/.symtab/build-id places
  output    the output's identity when the state was written
"""
from array import array

from linkwrap.ld import elf
from linkwrap.ld.incremental import state as st

# flag bits of a global's record
DSO, COPIED, LINKER, ABS, DEFINED, IFUNC, INPLT = 1, 2, 4, 8, 16, 32, 64


def build(opts, inputs, res, live, lk, synth, chunks):
    alive = live.alive
    obj_index = {}
    records = []
    for item in inputs.items:
        f = item.file
        if f is None:
            continue
        path = f.name
        rec = {"kind": item.kind, "path": path, "key": st.input_key(path), "id": st.identity(path)}
        if item.kind == "object":
            obj_index[f] = len(records)
            rec["sha"] = st.file_hash(f.view)
        records.append(rec)
    symtab_pos = {}
    if not opts.strip_all:
        symtab_syn = next((s for s in synth.all if s.name == ".symtab"), None)
        if symtab_syn is not None:
            symtab_pos = {id(s): k + 1 for k, s in enumerate(symtab_syn.symbols)}
    dynidx = synth.dynsym.index if synth.dynsym is not None else {}
    got = synth.got
    slot_syms = set(got.index) | set(got.tp_index) | set(got.gd_index) | set(got.desc_index) | set(synth.plt.index)
    for obj, k in obj_index.items():
        records[k].update(_object(obj, res, live, lk, synth, chunks, alive, symtab_pos, dynidx, slot_syms))
    _dynrel_counts(records, obj_index, lk, synth)
    glob = {}
    for name, s in res.symtab.items():
        flags = ((DSO if s.dso is not None else 0) | (COPIED if s in synth.copied else 0)
                 | (LINKER if s.linker_defined else 0) | (ABS if s.is_abs else 0)
                 | (DEFINED if s.defined else 0) | (IFUNC if s.is_ifunc else 0)
                 | (INPLT if s in lk.plt_index else 0))
        glob[name] = (obj_index.get(s.file, -1), lk.real_addr(s), lk.sym_addr(s),
                      lk.got_slot(s) if s in got.index else -1,
                      -1 if not (s in got.tp_index or s in got.gd_index or s in got.desc_index) else 1,
                      flags, s.type, s.visibility, s.bind, s.size, dynidx.get(s, -1))
    sites, ext = _reverse_index(res, live, lk, obj_index)
    for name in ext:
        s = res.symtab.get(name)
        if s is not None and s.file in obj_index:
            records[obj_index[s.file]]["ext"].append(name)
    roots = _root_names(opts, res)
    for name in roots:
        s = res.symtab.get(name)
        if s is not None and s.file in obj_index:
            records[obj_index[s.file]]["ext"].append(name)
    layout = {
        "osecs": {o.name: (o.addr, o.offset, o.size, o.index, o.type, o.flags, o.align) for o in lk.osecs},
        "tls": (lk.tls_start, lk.tls_end_tp), "entry": lk.entry, "file_size": lk.file_size,
        "got_base": lk.got_base,
        "mode": (lk.mode.pic, lk.mode.dynamic, lk.mode.interp, lk.mode.base),
        "rela_dyn": (lk.offset_of(synth.rela_dyn), len(synth.rela_dyn.relative), len(synth.rela_dyn.other))
        if synth.rela_dyn in lk.osec_of else None,
        "eh_hdr": (lk.offset_of(synth.eh_frame_hdr), lk.addr_of[synth.eh_frame_hdr])
        if synth.eh_frame_hdr is not None and synth.eh_frame_hdr in lk.osec_of else None,
        "build_id": (lk.offset_of(synth.build_id), synth.build_id.style, synth.build_id.desc_len)
        if synth.build_id is not None and synth.build_id in lk.osec_of else None,
        # the build id's chunk digests (synthetic/notes.py): a relink hashes again the chunks it wrote
        "build_id_chunks": getattr(synth.build_id, "chunks", None),
        "symtab": lk.osec(".symtab").offset if ".symtab" in lk.by_name else None,
        "dynsym": lk.osec(".dynsym").offset if ".dynsym" in lk.by_name else None,
    }
    kept = {}
    for obj in res.objects:
        for sec in obj.sections:
            if sec is not None and sec.group_sig is not None and sec not in res.discarded:
                a = lk.addr_of.get(sec)
                if a is not None:
                    kept[(sec.group_sig, sec.name)] = (a, sec.size)
    caps = {(st.input_key(f.name), name): c[1] for (f, name), c in chunks.items()}
    return {"version": st.VERSION, "kind": "patchable", "kept": kept, "caps": caps, "fingerprint": st.fingerprint(opts),
            "inputs": records, "globals": glob, "sites": sites, "layout": layout,
            # the sections a __start_/__stop_ symbol bounds (gc keeps them): the one question of
            # all the globals a relink asks, asked here (a relink reads globals by name only)
            "bounded": sorted({n[8:] if n.startswith("__start_") else n[7:] for n in glob
                               if n.startswith(("__start_", "__stop_"))}),
            "gc": opts.gc_sections, "output": st.identity(opts.output)}


def _object(obj, res, live, lk, synth, chunks, alive, symtab_pos, dynidx, slot_syms):
    secs = []
    discarded = res.discarded
    for sec in obj.sections:
        if sec is None:
            secs.append(None)
            continue
        secs.append((sec.name, sec.type, sec.flags, sec.align, sec.entsize, sec.group_sig,
                     st.section_hash(sec), sec in discarded))
    syms = res.syms[obj]
    shape = st.symbol_shape(obj)
    live_idx = sorted(sec.index for sec in obj.sections if sec is not None and sec in alive)
    places = []
    for (f, name), (start, cap, members) in chunks.items():
        if f is not obj:
            continue
        o = lk.by_name.get(name)
        if o is None:
            continue
        mem = []
        for m in members:
            a = lk.addr_of.get(m)
            if a is None:
                continue
            mem.append((getattr(m, "input", m).index, a - o.addr, m.size))
        if mem:
            places.append((name, mem[0][1], cap, mem))
    merged = []
    for sec in obj.sections:
        m = synth.merged_of.get(sec) if sec is not None else None
        if m is None or m not in lk.addr_of:
            continue
        ins, outs = m.pieces[sec]
        merged.append((sec.index, lk.addr_of[m], array("q", ins).tobytes(), array("q", outs).tobytes()))
    symtab = []
    dyn = []
    for k, s in enumerate(syms):
        if s.is_local or s.file is obj:
            # a local by its index, a global by its name (the object may list its globals in
            # another order next time)
            key = k if s.is_local else s.name
            e = symtab_pos.get(id(s))
            if e is not None:
                symtab.append((key, e))
            d = dynidx.get(s)
            if d is not None:
                dyn.append((key, d))
    refs = set()
    for sec in obj.sections:
        if sec is None or sec not in alive or not sec.flags & elf.SHF_ALLOC or sec.rela is None:
            continue
        for _off, info, _a in sec.get_relocs():
            s = syms[info >> 32]
            if not s.is_local:
                refs.add((s.name, info & 0xFFFFFFFF))
    local_slots = any(s.is_local and s.file is obj for s in slot_syms)
    return {"secs": secs, "shape": shape, "gshape": global_shape(obj), "live": live_idx, "places": places,
            "merged": merged,
            "symtab": symtab, "dynsym": dyn, "refs": st.digest(repr(sorted(refs)).encode()),
            "defs": [s.name for s in syms if not s.is_local and s.file is obj and s.section is not None],
            "ext": [], "local_slots": local_slots, "n_rel": 0, "n_other": 0}


def global_shape(obj) -> bytes:
    """Its globals as a set (name, binding and type, visibility, defined or not): what a patch
    cannot change (the GOT, PLT, .dynsym and the global part of .symtab follow from them)."""
    fg = obj.first_global
    return st.digest(repr(sorted((n, i, o, x if x >= 0xFF00 else x != 0)
                                 for n, i, o, x, _v, _s in obj.raw_syms[fg:])).encode())


def _dynrel_counts(records, obj_index, lk, synth):
    """How many of .rela.dyn's entries point into each object's chunks."""
    import bisect
    spans = []
    for obj, k in obj_index.items():
        for name, start, cap, _mem in records[k]["places"]:
            o = lk.by_name[name]
            if o.flags & elf.SHF_ALLOC:
                spans.append((o.addr + start, o.addr + start + max(cap, 1), k))
    spans.sort()
    starts = [s[0] for s in spans]

    def owner(p):
        i = bisect.bisect_right(starts, p) - 1
        return spans[i][2] if i >= 0 and p < spans[i][1] else None

    for p, _v in synth.rela_dyn.relative:
        k = owner(p)
        if k is not None:
            records[k]["n_rel"] += 1
    for p, _i, _a in synth.rela_dyn.other:
        k = owner(p)
        if k is not None:
            records[k]["n_other"] += 1


def _reverse_index(res, live, lk, obj_index):
    """-> ({global name: packed sites in other objects}, {names referenced from another object})."""
    alive = live.alive
    sites = {}
    ext = set()
    try:
        import numpy as np
    except ImportError:
        np = None
    for obj in res.objects:
        syms = res.syms[obj]
        fg = obj.first_global
        for sec in obj.sections:
            if sec is None or sec.rela is None or sec not in alive or sec.type == elf.SHT_NOBITS:
                continue
            osec = lk.osec_of.get(sec)
            a = lk.addr_of.get(sec)
            if osec is None or a is None:
                continue
            fo = osec.offset + a - osec.addr
            flag = ((1 << 32) if sec.flags & elf.SHF_WRITE else 0) | ((1 << 33) if sec.flags & elf.SHF_ALLOC else 0)
            if np is not None and sec.rela[1] >= 24 * 64:
                off, size = sec.rela
                t = np.frombuffer(obj.view[off:off + size], dtype="<u8").reshape(-1, 3)
                sel = np.nonzero((t[:, 1] >> np.uint64(32)) >= fg)[0]
                rows = [(int(t[i, 0]), int(t[i, 1]), int(t[i, 2].astype("<i8"))) for i in sel]
            else:
                rows = [r for r in sec.get_relocs() if (r[1] >> 32) >= fg]
            for r_off, info, add in rows:
                s = syms[info >> 32]
                if s.is_local or s.file is None or s.file is obj or s.section is None:
                    continue
                ext.add(s.name)
                arr = sites.get(s.name)
                if arr is None:
                    arr = sites[s.name] = array("q")
                arr.extend((fo + r_off, a + r_off, (info & 0xFFFFFFFF) | flag, add))
    return {n: a.tobytes() for n, a in sites.items()}, ext


def _root_names(opts, res):
    """Globals gc keeps whatever references them (the entry, exports, -u, -init/-fini)."""
    names = {opts.entry, opts.init, opts.fini, *opts.undefined, *(d[0] for d in opts.defsym)}
    for name in res.symtab:
        if opts.export_dynamic or name in res.dso_names or name.startswith(("__start_", "__stop_")):
            names.add(name)
    return names
