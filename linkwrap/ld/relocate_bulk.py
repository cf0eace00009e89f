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
Loaded sections: relocate_loaded.py, with this module's context.
"""
from array import array

from linkwrap.ld import classify, elf, rela
from linkwrap.ld.classify import TOMBSTONE_ONE

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
        copied = 0
        for m, start, _ in items:
            data = m.bytes()
            buf[start:start + len(data)] = data
            copied += len(data)
            if copied >= _DROP_EVERY:
                # a big object's debug sections (10+ MB) held twice, in its pages and the image's,
                # were the link's peak: both leave the RSS every few MiB of the copy
                copied = 0
                _drop(obj.view.obj)
                _drop(buf)
        _drop(obj.view.obj)     # the sections' bytes are in the image: only the relocation tables are read again
        _drop(buf)
        bad = set()
        for chunk in _chunks(items):
            bad.update(_object(np, img, ctx, obj, chunk, syms))
            _drop(buf)          # what this batch patched (a big .debug_info is many batches)
        for m, start, addr in items:
            if m in bad:    # the loop writes every value again: what a batch wrote stays the same
                slow(buf, lk, m, start, addr, syms, alive, diag, kept)
            if stats is not None:
                key = "slow_sections" if m in bad else "bulk_relocs"
                stats[key] = stats.get(key, 0) + (1 if m in bad else m.rela[1] // 24)
        _drop(obj.view.obj)     # an archive's other members fault their own pages in again
        _drop(buf)      # the image's written pages too: they are in the page cache, the file's (write.Image)


# the copy's input and image pages leave the RSS every this many bytes (as relocate.apply_all's copy)
_DROP_EVERY = 4 << 20


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
    next to their copy in the image. The same for the mapped image itself: its written pages are
    the output file's pages in the page cache (dirty ones are written back, never lost), read
    again by the build-id's hash. A bytearray image is not a mapping: nothing to drop."""
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
