"""RELOCATE in bulk: relocations per object with numpy, non-alloc (.debug_*) and loaded sections.

Input: the non-alloc sections with relocations, with their image offsets and
addresses (relocate.apply_all has copied every other section into the image);
Resolution, Layout, Liveness (only read).
Output: the same bytes the per-relocation path (relocate._relocate_section)
writes, in place.

Why a second path: a Rust debug link carries millions of relocations and more
than 90 % of them are in .debug_*, all R_X86_64_32/64 against section symbols
(DTPOFF32/64 for thread-locals), a third of them into the merged .debug_str.
The per-relocation loop costs ~0.9 µs each there (symbol lookup, a bisect into
the merged pieces, pack_into). Read as arrays straight from the mmap, with each
referenced symbol resolved once per object and the merged pieces found by one
searchsorted, the same work is ~0.1 µs. Batches are per object, never per
section: a numpy call costs 1-2 µs and a link has tens of thousands of
sections (../shared/reference/python-linker.md §4).

What the bulk path cannot reproduce byte for byte goes through the
per-relocation path section by section, which applies it or names the error
exactly as before: a type outside _TYPES, an overflow, a symbol index or an
offset out of range, an addend beyond +-2**62, a reference before the start
of a merged section or into an empty one, a symbol address beyond 2**62.
Whether a link takes this path is classify.worth_it's answer (LINKWRAP_LD_RELOCS=python
forces the per-relocation path everywhere, =bulk the bulk path for every section: tests
compare the two), and each relocation's action is classify.action's, as in the loop.
Loaded sections: apply_loaded below.
"""
from array import array

from linkwrap.ld import classify, elf, rela, x86_64
from linkwrap.ld.classify import TLS_SEQUENCES, TOMBSTONE_ONE, choice, preemptible

# non-alloc relocation types done here: type -> (field width, overflow check, formula)
_ABS, _PC, _DTP = 0, 1, 2
_TYPES = {
    elf.R_X86_64_NONE: (0, "", _ABS),
    elf.R_X86_64_64: (8, "", _ABS),
    elf.R_X86_64_32: (4, "u", _ABS),
    elf.R_X86_64_32S: (4, "s", _ABS),
    elf.R_X86_64_PC32: (4, "s", _PC),
    elf.R_X86_64_PC64: (8, "", _PC),
    elf.R_X86_64_DTPOFF32: (4, "s", _DTP),
    elf.R_X86_64_DTPOFF64: (8, "", _DTP),
}
_FAR = 1 << 62
# how a referenced symbol resolves: an address, a merged piece chosen by the addend, nothing
# (debug info about a dropped function stays as it is), or too odd for this path
_PLAIN, _MERGED, _SKIP, _SLOW = 0, 1, 2, 3


def apply(buf, lk, pending, res, alive, diag, kept, slow, stats=None, cache=None):
    """Copy pending's sections into buf and apply their relocations; slow(...) is the per-relocation path.
    Input pages leave the RSS once their sections are in the image (_drop), one input file at a time."""
    import numpy as np
    img = np.frombuffer(buf, dtype=np.uint8)
    ctx = _Context(np, lk, alive, kept)
    if cache is not None:
        ctx.local_cache = cache     # the loaded batches' locals, resolved the same way
    by_obj = {}
    for item in pending:
        by_obj.setdefault(item[0].file, []).append(item)
    for obj, items in by_obj.items():
        syms = res.syms[obj]
        for m, start, _ in items:
            data = m.bytes()
            buf[start:start + len(data)] = data
        bad = set()
        for chunk in _chunks(items):
            bad.update(_object(np, img, ctx, obj, chunk, syms))
        for m, start, addr in items:
            if m in bad:    # the loop writes every value again: what a batch wrote stays the same
                slow(buf, lk, m, start, addr, syms, alive, diag, kept)
            if stats is not None:
                key = "slow_sections" if m in bad else "bulk_relocs"
                stats[key] = stats.get(key, 0) + (1 if m in bad else m.rela[1] // 24)
        _drop(obj.view.obj)     # an archive's other members fault their own pages in again


# relocations per numpy batch: a batch's arrays cost ~200 bytes per relocation while it lasts
_BATCH = 1 << 15


def _chunks(items):
    """One object's relocation tables in batches of at most _BATCH entries: [(section, image offset,
    address, first entry, entries)], a big .debug_info split across batches (the peak bounded)."""
    chunk, n = [], 0
    for m, start, addr in items:
        total = m.rela[1] // 24
        first = 0
        while first < total:
            take = min(total - first, _BATCH - n)
            chunk.append((m, start, addr, first, take))
            first += take
            n += take
            if n >= _BATCH:
                yield chunk
                chunk, n = [], 0
    if chunk:
        yield chunk


def _drop(mapped):
    """The pages of an input file whose sections are all in the image leave this process's RSS
    (MADV_DONTNEED on a shared file mapping: a later read faults them in again from the page cache,
    as .eh_frame's copy and the writer may). Without it the debug sections' pages stay resident
    next to their copy in the image."""
    import mmap
    if isinstance(mapped, mmap.mmap) and hasattr(mapped, "madvise"):
        try:
            mapped.madvise(mmap.MADV_DONTNEED)
        except (OSError, ValueError):
            pass


def _locals_resolved(np, ctx, obj, seen, S, has_sec):
    """The symbols `seen` names, less the locals defined in a section with an address (no IFUNC), whose
    address goes into S (has_sec set) from the symbol table's arrays: -> [the indexes left]."""
    cache = ctx.local_cache
    addr = cache.get(obj, False)
    if addr is False:
        addr = cache[obj] = None
        loc = rela.local_symbols(np, obj)
        if loc is not None:
            shndx, value, stype = loc
            secs = rela.section_addresses(np, obj, ctx.lk.addr_of)
            ok = (shndx > 0) & (shndx < min(len(secs), elf.SHN_ABS)) & (stype != elf.STT_GNU_IFUNC) & (value < _FAR)
            a = secs[np.where(ok, shndx, 0)]
            S_ = a + np.where(ok, value, 0).astype(np.int64)
            ok &= (a >= 0) & (S_ < _FAR)
            addr = cache[obj] = np.where(ok, S_, -1)
    ks = np.flatnonzero(seen)
    if addr is None:
        return ks.tolist()
    local = ks[ks < len(addr)]
    a = addr[local]
    found = a >= 0
    S[local[found]] = a[found]
    if has_sec is not None:
        has_sec[local[found]] = True
    return np.concatenate([local[~found], ks[ks >= len(addr)]]).tolist()


class _Context:
    """What every object's batch shares: the type tables and the merged pieces as arrays."""

    def __init__(self, np, lk, alive, kept):
        self.np = np
        self.lk = lk
        self.alive = alive
        self.kept = kept
        self.merged_of = lk.synth.merged_of or {}
        self.addr_get = lk.addr_of.get
        width = np.full(64, 1, dtype=np.uint64)      # unknown types: GNU ld's 1-byte bound check
        known = np.zeros(64, dtype=bool)
        form = np.zeros(64, dtype=np.int8)
        for t, (w, _, f) in _TYPES.items():
            width[t], known[t], form[t] = w, True, f
        self.width, self.known, self.form = width, known, form
        self.pieces = None          # merged input section -> (key base, first piece, last piece)
        self.local_cache = {}       # ObjectFile -> its locals' addresses (_locals_resolved)

    def merged_tables(self):
        """Every merged input section's pieces on one axis: key = its base + offset in it."""
        if self.pieces is None:
            np = self.np
            ins, outs, lens, bases, addrs = array("q"), array("q"), [], [], []
            self.pieces = {}
            base = first = 0
            addr_of = self.lk.addr_of
            for sec, m in self.merged_of.items():
                i, o = m.pieces[sec]
                n = len(i)
                self.pieces[sec] = (base, first, first + n - 1)
                ins.extend(i)
                outs.extend(o)
                lens.append(n)
                bases.append(base)
                addrs.append(addr_of[m])
                base += max(sec.size, 1) + 1
                first += n
            lens = np.array(lens, dtype=np.int64)
            self.piece_key = np.frombuffer(ins, dtype=np.int64) + np.repeat(np.array(bases, dtype=np.int64), lens)
            self.piece_addr = np.frombuffer(outs, dtype=np.int64) + np.repeat(np.array(addrs, dtype=np.int64), lens)
        return self.pieces

    def resolve(self, s):
        """-> (class, S, merged key base, first piece, last piece), the order of relocate's tests."""
        lk = self.lk
        tsec = s.section
        a = None if tsec is None else self.addr_get(tsec)
        if a is not None:
            S = a + s.value
            if s.type == elf.STT_GNU_IFUNC:
                S = lk.sym_addr(s)
            return _PLAIN, S, 0, 0, 0
        if tsec in self.merged_of:
            if s.type == elf.STT_SECTION:
                base, first, last = self.merged_tables()[tsec]
                if last < first:
                    return _SLOW, 0, 0, 0, 0
                return _MERGED, 0, base + s.value, first, last
            return _PLAIN, lk.merged_addr(tsec, s.value), 0, 0, 0
        if tsec is not None and tsec not in self.alive:
            k = self.kept.get(tsec) if tsec.group_sig is not None else None
            a = None if k is None else self.addr_get(k)
            if a is None:
                return _SKIP, 0, 0, 0, 0
            return _PLAIN, a + s.value, 0, 0, 0
        return _PLAIN, lk.sym_addr(s), 0, 0, 0


def _object(np, img, ctx, obj, items, syms):
    """A batch of one object's non-alloc relocations, all at once; -> the sections for the loop."""
    view = obj.view
    parts = []
    for m, start, addr, first, n in items:
        parts.append(np.frombuffer(view, dtype="<u8", count=3 * n, offset=m.rela[0] + 24 * first))
    if not parts:
        return []
    nsec = len(parts)
    counts = np.array([it[4] for it in items], dtype=np.int64)
    seg = np.repeat(np.arange(nsec), counts)
    rel = (np.concatenate(parts) if nsec > 1 else parts[0]).reshape(-1, 3)
    r_off = rel[:, 0]
    info = rel[:, 1]
    A = rel[:, 2].view(np.int64)
    sym = (info >> np.uint64(32)).astype(np.int64)
    typ = (info & np.uint64(0xFFFFFFFF)).astype(np.int64)
    small = typ < 64
    typc = np.where(small, typ, 0)
    sizes = np.array([it[0].size for it in items], dtype=np.uint64)[seg]
    width = ctx.width[typc]
    bad_rel = ~small | ~ctx.known[typc] | (sym >= len(syms)) | (r_off > sizes) | (r_off + width > sizes) \
        | (A >= _FAR) | (A <= -_FAR)
    bad = np.zeros(nsec, dtype=bool)
    if bad_rel.any():
        bad[seg[bad_rel]] = True
    use = ~bad[seg]
    # each referenced symbol resolved once, into tables indexed by symbol (a scatter, not a sort)
    inv = np.where(use, sym, 0)
    nsym = len(syms)
    seen = np.zeros(nsym, dtype=bool)
    seen[inv] = True
    cls = np.zeros(nsym, dtype=np.int8)
    S = np.zeros(nsym, dtype=np.int64)
    mbase = np.zeros(nsym, dtype=np.int64)
    mfirst = np.zeros(nsym, dtype=np.int64)
    mlast = np.zeros(nsym, dtype=np.int64)
    resolve = ctx.resolve
    addr_get = ctx.addr_get
    ifunc = elf.STT_GNU_IFUNC
    fast_k, fast_S, rows, other = [], [], [], []
    for k in _locals_resolved(np, ctx, obj, seen, S, None):
        s = syms[k]
        tsec = s.section
        if tsec is not None and s.type != ifunc:
            # resolve()'s first answer, inline: most symbols are in a section with an address
            a = addr_get(tsec)
            if a is not None and a + s.value < _FAR:
                fast_k.append(k)
                fast_S.append(a + s.value)
                continue
        c, s_val, b, f, la = resolve(s)
        if c == _PLAIN and not 0 <= s_val < _FAR:
            c = _SLOW
        other.append(k)
        rows.append((c, s_val if c == _PLAIN else 0, b, f, la))
    if fast_k:
        S[fast_k] = fast_S
    if other:
        cls[other], S[other], mbase[other], mfirst[other], mlast[other] = zip(*rows)
    rcls = cls[inv]
    merged = rcls == _MERGED
    Sr = S[inv]
    Ar = A
    if merged.any():
        key = mbase[inv[merged]] + A[merged]
        lo = mfirst[inv[merged]]
        hi = mlast[inv[merged]]
        below = key < ctx.piece_key[lo]     # before the section's first piece: offset_in's own rule
        if lo.min() == lo.max():
            # one merged section (an object's own .debug_str, the usual batch): searched in its pieces
            # alone, which stay in the cache, not in the link's 350k (the same answer once bounded)
            one, last = int(lo[0]), int(hi[0])
            k = np.searchsorted(ctx.piece_key[one:last + 1], key, side="right") - 1 + one
        else:
            k = np.searchsorted(ctx.piece_key, key, side="right") - 1
        k = np.minimum(np.maximum(k, lo), hi)
        Sr = Sr.copy()
        Sr[merged] = ctx.piece_addr[k] + (key - ctx.piece_key[k])
        Ar = np.where(merged, 0, A)
        slow_m = np.zeros(len(rel), dtype=bool)
        slow_m[merged] = below
        bad_rel = rcls == _SLOW
        bad_rel |= slow_m
    else:
        bad_rel = rcls == _SLOW
    form = ctx.form[typc]
    v = Sr + Ar
    pc = form == _PC
    if pc.any():
        addrs = np.array([it[2] for it in items], dtype=np.int64)[seg]
        v = np.where(pc, v - (addrs + r_off.astype(np.int64)), v)
    dtp = form == _DTP
    if dtp.any():
        v = np.where(dtp, v - ctx.lk.tls_start, v)
    u32 = (typ == elf.R_X86_64_32)
    s32 = small & (width == 4) & ~u32
    bad_rel |= u32 & ((v < 0) | (v >= 1 << 32))
    bad_rel |= s32 & ((v < -(1 << 31)) | (v >= 1 << 31))
    bad_rel &= use
    if bad_rel.any():
        bad[seg[bad_rel]] = True
        use = ~bad[seg]
    go = use & (rcls != _SKIP) & (width > 0)
    # .debug_ranges: a dropped function's entry becomes (1, 1), not the list's (0, 0) end
    one = np.array([it[0].name in TOMBSTONE_ONE for it in items], dtype=bool)
    if one.any():
        one = use & (rcls == _SKIP) & one[seg] & (width > 0) & (form == _ABS)
        v = np.where(one, 1, v)
        go |= one
    starts = np.array([it[1] for it in items], dtype=np.int64)[seg]
    loc = starts + r_off.astype(np.int64)
    for w in (8, 4):
        sel = go & (width == w)
        if not sel.any():
            continue
        at = loc[sel]
        vals = v[sel] if w == 8 else (v[sel] & 0xFFFFFFFF).astype("<u4")
        img[at[:, None] + np.arange(w)] = vals.astype("<i8" if w == 8 else "<u4").view(np.uint8).reshape(-1, w)
    return [items[k][0] for k in np.flatnonzero(bad).tolist()]


# --- loaded sections -------------------------------------------------------------------------
# The relocations of SHF_ALLOC sections (~283k in the Rust debug link, over ~46k small sections:
# batched per object, never per section). Done here: the types whose value is S + A, S + A - P or
# G + A - P with the action DIRECT (or a copy's / a PLT entry's address as S), BASEREL (the value,
# and its RELATIVE appended: .rela.dyn sorts them), GOT for plain GOTPCREL. Everything else -- the
# GOTPCRELX relaxations, symbolic dynamic relocations (their order is the output's), a reference
# into a discarded group, an overflow -- goes back to the loop one relocation at a time, and a section
# holding a TLS sequence (its call's relocation is skipped) goes back whole.
_LABS, _LPC, _LGOT = 0, 1, 2
_LOADED = {
    elf.R_X86_64_64: (8, "", _LABS),
    elf.R_X86_64_32: (4, "u", _LABS),
    elf.R_X86_64_32S: (4, "s", _LABS),
    elf.R_X86_64_PC32: (4, "s", _LPC),
    elf.R_X86_64_PLT32: (4, "s", _LPC),
    elf.R_X86_64_PC64: (8, "", _LPC),
    elf.R_X86_64_GOTPCREL: (4, "s", _LGOT),
}
# what a relocation's action asks of the batch
_A_SLOW, _A_VALUE, _A_BASEREL, _A_GOT = 0, 1, 2, 3
# below this many loaded relocations an object's batch costs more than the loop
_MIN_OBJECT = 64


def apply_loaded(buf, lk, pending, res, alive, memo, stats=None, cache=None):
    """pending: [(loaded section, image offset, address)], copied into buf already. Applies what it can;
    -> {section: None (all of it to the loop) or [the (r_offset, r_info, r_addend) left to the loop]};
    a section not in it is done."""
    import numpy as np
    from linkwrap.ld import rela
    from linkwrap.ld.objects import InputSection
    img = np.frombuffer(buf, dtype=np.uint8)
    ctx = _Loaded(np, lk, alive, memo)
    if cache is not None:
        ctx.local_cache = cache     # shared with apply(): an object's locals resolved once
    left = {}
    by_obj = {}
    for m, start, addr in pending:
        # gc's .eh_frame copy (an EhFrame) has its own relocation list, an InputSection its table
        n = m.rela[1] // 24 if m.__class__ is InputSection else len(m.get_relocs())
        by_obj.setdefault(m.file, []).append((m, start, addr, n))
    done = 0
    least = 1 if choice() == "bulk" else _MIN_OBJECT     # forced (tests): every object's batch
    for obj, items in by_obj.items():
        if sum(it[3] for it in items) < least:
            for it in items:
                left[it[0]] = None
            continue
        syms = res.syms[obj]
        # gc's .eh_frame copies in batches of their own (their rows come from their lists)
        tables = [it for it in items if it[0].__class__ is InputSection]
        frames = [it for it in items if it[0].__class__ is not InputSection]
        for chunk in _whole_sections(tables):
            t = rela.read(np, obj, [it[0] for it in chunk])
            done += _loaded_batch(np, img, ctx, obj, chunk, syms, left, t)
        for it in frames:
            t = rela.from_rows(np, it[0], it[0].get_relocs())
            done += _loaded_batch(np, img, ctx, obj, [(*it[:3], 0, it[3])], syms, left, t)
    if stats is not None:
        stats["bulk_relocs"] = stats.get("bulk_relocs", 0) + done
    return left


class _Loaded:
    """What every object's loaded batch shares: the type tables, the link's class and action memo."""
    CLASSES = classify.CLASSES      # the order cls[...] >= 2 (preemptible) counts on

    def __init__(self, np, lk, alive, memo):
        self.np = np
        self.lk = lk
        self.alive = alive
        self.classes, self.acts = memo
        self.mode = lk.mode
        self.out = classify.output_kind(lk.mode)
        self.addr_get = lk.addr_of.get
        self.merged_of = lk.synth.merged_of or {}
        self.copied = lk.synth.copied
        width = np.zeros(64, dtype=np.int64)
        check = np.zeros(64, dtype=np.int8)      # 1 signed, 2 unsigned (32 bits)
        form = np.zeros(64, dtype=np.int8)
        fast = np.zeros(64, dtype=bool)
        for t, (w, c, f) in _LOADED.items():
            width[t], check[t], form[t], fast[t] = w, {"s": 1, "u": 2}.get(c, 0), f, True
        seq = np.zeros(64, dtype=bool)
        seq[list(TLS_SEQUENCES)] = True
        self.width, self.check, self.form, self.fast, self.seq = width, check, form, fast, seq
        self.code = {}                  # (type, class index, writable) -> _A_*
        self.local_cache = {}           # ObjectFile -> its locals' addresses (_locals_resolved)
        # an executable's symbol defined in a section is never preemptible: class LOCAL, S its address
        self.bound = not lk.mode.shared
        self.pieces = _Context(np, lk, alive, None)     # the merged pieces' tables, built when asked

    def symbol(self, s):
        """-> (how, S, class index, has a section, merged key base, first piece, last piece)."""
        cls = self.classes.get(s)
        if cls is None:
            cls = self.classes[s] = classify.sym_class(s, not s.is_local and preemptible(s, self.mode, self.copied))
        ci = self.CLASSES.index(cls)
        lk = self.lk
        tsec = s.section
        a = None if tsec is None else self.addr_get(tsec)
        if a is not None:
            S = a + s.value
            if s.type == elf.STT_GNU_IFUNC:
                S = lk.sym_addr(s)
        elif tsec in self.merged_of:
            if s.type == elf.STT_SECTION:
                base, first, last = self.pieces.merged_tables()[tsec]
                if last < first:
                    return _SLOW, 0, ci, True, 0, 0, 0
                return _MERGED, 0, ci, True, base + s.value, first, last
            S = lk.merged_addr(tsec, s.value)
        elif tsec is not None and tsec not in self.alive:
            if s.is_local and tsec.group_sig is not None:
                return _SLOW, 0, ci, True, 0, 0, 0      # the loop names the discarded COMDAT section
            S = 0
        else:
            S = lk.sym_addr(s)
        if not -_FAR < S < _FAR:
            return _SLOW, 0, ci, True, 0, 0, 0
        return _PLAIN, S, ci, tsec is not None, 0, 0, 0

    def action_code(self, rtype, ci, writable):
        key = (rtype, ci, writable)
        c = self.code.get(key)
        if c is None:
            cls = self.CLASSES[ci]
            k = (rtype, cls, writable)
            act = self.acts.get(k)
            if act is None:
                act = self.acts[k] = classify.action(x86_64.RECIPES[rtype].kind, rtype, cls, self.out, writable)
            if act in (classify.DIRECT, classify.COPYREL, classify.CANONICAL_PLT, classify.PLT):
                c = _A_VALUE
            elif act is classify.BASEREL and rtype == elf.R_X86_64_64:
                c = _A_BASEREL
            elif act is classify.GOT and rtype == elf.R_X86_64_GOTPCREL:
                c = _A_GOT
            else:
                c = _A_SLOW
            self.code[key] = c
        return c


def _whole_sections(items):
    """Batches of about _BATCH relocations that never split a section (a section goes to the loop whole
    or not at all), in _chunks' form."""
    chunk, n = [], 0
    for m, start, addr, total in items:
        chunk.append((m, start, addr, 0, total))
        n += total
        if n >= _BATCH:
            yield chunk
            chunk, n = [], 0
    if chunk:
        yield chunk


def _loaded_batch(np, img, ctx, obj, items, syms, left, t):
    """One object's batch of loaded relocations (t: their rela.Table, a section per item); the ones it
    cannot do go into `left`. -> how many it did."""
    nsec = len(items)
    seg = t.seg
    r_off = t.r_off
    A = t.addend
    sym = t.sym
    typ = t.typ
    small = typ < 64
    typc = np.where(small, typ, 0)
    nsym = len(syms)
    # a section holding a TLS sequence goes to the loop whole
    whole = np.zeros(nsec, dtype=bool)
    tls = small & ctx.seq[typc]
    if tls.any():
        whole[seg[tls]] = True
    width = ctx.width[typc]
    sizes = np.array([it[0].size for it in items], dtype=np.int64)[seg]
    ok = small & ctx.fast[typc] & ~whole[seg] & (sym < nsym) & (r_off + width <= sizes) \
        & (A < _FAR) & (A > -_FAR)
    inv = np.where(ok, sym, 0)
    seen = np.zeros(nsym, dtype=bool)
    seen[inv[ok]] = True
    how = np.zeros(nsym, dtype=np.int8)
    S = np.zeros(nsym, dtype=np.int64)
    cls = np.zeros(nsym, dtype=np.int64)
    has_sec = np.zeros(nsym, dtype=bool)
    mbase = np.zeros(nsym, dtype=np.int64)
    mfirst = np.zeros(nsym, dtype=np.int64)
    mlast = np.zeros(nsym, dtype=np.int64)
    ks = _locals_resolved(np, ctx, obj, seen, S, has_sec)
    if ks:
        # most symbols take the first test: defined in a section with an address, bound here
        addr_get = ctx.addr_get
        bound = ctx.bound
        ifunc = elf.STT_GNU_IFUNC
        fast_k, fast_S, other = [], [], []
        for k in ks:
            s = syms[k]
            tsec = s.section
            if tsec is not None and (bound or s.is_local) and not s.is_abs and s.type != ifunc:
                a = addr_get(tsec)
                if a is not None and s.value < _FAR:
                    fast_k.append(k)
                    fast_S.append(a + s.value)
                    continue
            other.append(k)
        if fast_k:
            S[fast_k] = fast_S
            has_sec[fast_k] = True
        if other:
            symbol = ctx.symbol
            rows = [symbol(syms[k]) for k in other]
            how[other], S[other], cls[other], has_sec[other], mbase[other], mfirst[other], mlast[other] = \
                zip(*rows)
        how[(S <= -_FAR) | (S >= _FAR)] = _SLOW
    rhow = how[inv]
    ok &= rhow != _SLOW
    # the action per (type, class, writable): a handful of combinations per object
    writable = np.array([it[0].flags & elf.SHF_WRITE for it in items], dtype=np.int64)[seg]
    combo = (typc * 8 + cls[inv]) * 2 + writable
    lut = np.zeros(64 * 16, dtype=np.int8)
    for c in np.unique(combo[ok]).tolist():
        lut[c] = ctx.action_code(c >> 4, (c >> 1) & 7, c & 1)
    code = lut[combo]
    code[~ok] = _A_SLOW
    # through a PLT entry from a definition here (an interposable function of a shared object): the loop
    code[(code == _A_VALUE) & has_sec[inv] & (cls[inv] >= 2)] = _A_SLOW
    Sr = S[inv]
    Ar = A
    merged = (rhow == _MERGED) & (code != _A_SLOW)
    if merged.any():
        idx = inv[merged]
        key = mbase[idx] + A[merged]
        lo = mfirst[idx]
        pk = ctx.pieces.piece_key
        below = key < pk[lo]
        k = np.searchsorted(pk, key, side="right") - 1
        k = np.minimum(np.maximum(k, lo), mlast[idx])
        Sr = Sr.copy()
        Sr[merged] = ctx.pieces.piece_addr[k] + (key - pk[k])
        Ar = np.where(merged, 0, A)
        sm = np.zeros(len(typ), dtype=bool)
        sm[merged] = below
        code[sm] = _A_SLOW
    got = code == _A_GOT
    if got.any():
        G = np.zeros(nsym, dtype=np.int64)
        got_slot = ctx.lk.got_slot
        for k in np.unique(inv[got]).tolist():
            G[k] = got_slot(syms[k])
        Sr = np.where(got, G[inv], Sr)
    addrs = np.array([it[2] for it in items], dtype=np.int64)[seg]
    P = addrs + r_off
    v = Sr + Ar
    form = ctx.form[typc]
    v = np.where(form != _LABS, v - P, v)
    chk = ctx.check[typc]
    over = ((chk == 1) & ((v < -(1 << 31)) | (v >= 1 << 31))) | ((chk == 2) & ((v < 0) | (v >= 1 << 32)))
    code[over & (width == 4)] = _A_SLOW    # the loop names the overflow
    go = code != _A_SLOW
    starts = np.array([it[1] for it in items], dtype=np.int64)[seg]
    loc = starts + r_off
    for w in (8, 4):
        sel = go & (width == w)
        if not sel.any():
            continue
        at = loc[sel]
        vals = v[sel].astype("<i8") if w == 8 else (v[sel] & 0xFFFFFFFF).astype("<u4")
        img[at[:, None] + np.arange(w)] = vals.view(np.uint8).reshape(-1, w)
    base = code == _A_BASEREL
    if base.any():
        rela = ctx.lk.synth.rela_dyn
        rela.relative.extend(zip(P[base].tolist(), v[base].view(np.uint64).tolist()))
    slow = ~go
    if slow.any():
        for j in np.flatnonzero(whole).tolist():
            left[items[j][0]] = None
        rest = slow & ~whole[seg]
        if rest.any():
            at = np.flatnonzero(rest)
            rows = zip(r_off[at].tolist(), ((sym[at] << 32) | typ[at]).tolist(), A[at].tolist())
            for j, row in zip(seg[at].tolist(), rows):
                m = items[j][0]
                lst = left.get(m)
                if lst is None:
                    if m in left:
                        continue
                    lst = left[m] = []
                lst.append(row)
    return int(go.sum())
