"""RELOCATE in bulk, loaded sections: relocate_bulk.py's arrays for the sections that are loaded
(.text, .data, .rodata, .eh_frame, ...): the relocations the arrays can take are applied here; the
rest go back to relocate.py's per-relocation loop, section by section (the dict apply_loaded returns).
It shares relocate_bulk's per-object context (symbols resolved once, locals, merged pieces)."""
from linkwrap.ld import classify, elf, rela, x86_64
from linkwrap.ld.classify import TLS_SEQUENCES, choice, preemptible
from linkwrap.ld.relocate_bulk import _BATCH, _FAR, _MERGED, _PLAIN, _SLOW, _Context, _locals_resolved


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
    from linkwrap.ld.objects import InputSection, drop_pages
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
        drop_pages(obj.view)   # its relocation and symbol tables' pages: the peak is the image's, not theirs
        drop_pages(buf)        # and the image's pages it patched (a mapped file's: objects.drop_pages), else
                               # ~20 MiB of code and data stay resident into the debug sections' peak
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
    writable = np.array([classify.writable(it[0]) for it in items], dtype=np.int64)[seg]
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
