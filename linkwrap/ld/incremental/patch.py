"""Write a relink's patches into a copy of the output and rename it over the output.

The copy is a new inode (a hard link to the old output -- Cargo's target/debug/<bin>, the state's
base -- and a running program keep their bytes): FICLONE where the filesystem shares blocks
(btrfs, xfs), else copy_file_range (in the kernel), then the patches through a shared mapping,
then rename. A Fallback raised while patching removes the copy: nothing was changed.
"""
import bisect
import mmap
import os
import struct
from array import array

from linkwrap.ld import classify, elf, x86_64
from linkwrap.ld.incremental import full, record as rec, state as st, symtab as stab
from linkwrap.ld.incremental.facade import ELSEWHERE, Fallback, KeptCopies, PatchLayout

FICLONE = 0x40049409
_RELA = struct.Struct("<QQq")


def clone(src, dst_fd):
    """Copy src into the open, empty dst_fd: shared blocks if the filesystem can, else in the kernel."""
    import fcntl
    with open(src, "rb") as f:
        try:
            fcntl.ioctl(dst_fd, FICLONE, f.fileno())
            return "reflink"
        except OSError:
            pass
        size = os.fstat(f.fileno()).st_size
        off = 0
        while off < size:
            n = os.copy_file_range(f.fileno(), dst_fd, size - off, off, off)
            if n == 0:
                break
            off += n
        return "copy"


def _create_tmp(output, state, src):
    """-> (fd, path, how) of the copy to patch: in the state's directory (ours, 0700, on the
    output's filesystem), so a relink killed before its rename leaves its debris there, and the
    next one removes it. The spare when it can be brought up to date, else a new copy of src."""
    d = st._safe_dir(st.state_dir(output), False)
    if d is None:
        raise Fallback("no incremental state beside the output")
    for name in os.listdir(d):
        if name.startswith("out.") and name.endswith(".tmp"):
            try:
                os.unlink(os.path.join(d, name))
            except OSError:
                pass
    tmp = os.path.join(d, f"out.{os.getpid()}.tmp")
    fd = _take_spare(d, state.get("spare"), src, tmp)
    if fd is not None:
        return fd, tmp, "spare"
    umask = os.umask(0)
    os.umask(umask)
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(tmp, flags, 0o777 & ~umask)
    try:
        how = clone(src, fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    return fd, tmp, how


def _take_spare(d, spare, src, tmp):
    """The output before the last relink, kept as <state dir>/spare with the ranges that relink
    wrote: brought up to date by copying only those ranges from src (a few hundred KB, not the
    45-60 MB a copy of the output is where the filesystem cannot reflink). Taken by renaming it to
    tmp first (killed after that, there is no spare, and the next relink copies). Used only when
    it is the very file the state names, its only name is ours (nobody hard-linked it: Cargo's
    target/debug/<bin> has moved on to the newer output by the next build) and it is not being
    run (a running program's file cannot be opened for writing: ETXTBSY); else -> None."""
    if not spare:
        return None
    ident, dirty = spare
    try:
        os.rename(os.path.join(d, "spare"), tmp)
    except OSError:
        return None
    fd = None
    try:
        fd = os.open(tmp, os.O_RDWR | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        fst = os.fstat(fd)
        if (fst.st_dev, fst.st_ino, fst.st_size, fst.st_mtime_ns) != tuple(ident) or fst.st_nlink != 1 \
                or fst.st_uid != os.getuid():
            raise OSError("not the spare the state names")
        with open(src, "rb") as f:
            # a relink that added or removed symbols changed the file's size (its tail was written)
            os.ftruncate(fd, os.fstat(f.fileno()).st_size)
            for lo, hi in dirty:
                done = 0
                while done < hi - lo:
                    n = os.copy_file_range(f.fileno(), fd, hi - lo - done, lo + done, lo + done)
                    if n <= 0:
                        raise OSError("copy_file_range copied nothing")
                    done += n
        return fd
    except OSError:
        if fd is not None:
            os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return None


def _merged(ranges, size):
    """The written (start, end) ranges sorted and joined, within the file."""
    out = []
    for lo, hi in sorted(ranges):
        lo, hi = max(lo, 0), min(hi, size)
        if lo >= hi:
            continue
        if out and lo <= out[-1][1]:
            if hi > out[-1][1]:
                out[-1][1] = hi
        else:
            out.append([lo, hi])
    return [tuple(r) for r in out]


def apply(opts, state, src, plans, steps=None):
    from linkwrap.ld import write
    from linkwrap.ld.scan import Mode
    lay = state["layout"]
    pic, dynamic, interp, base = lay["mode"]
    mode = Mode(pic=pic, dynamic=dynamic, interp=interp, base=base)
    fd, tmp, how = _create_tmp(opts.output, state, src)
    _mark(steps, f"copy the output ({how})")
    buf = None
    d = os.path.dirname(tmp)
    keep = os.path.join(d, f"spare.{os.getpid()}.tmp")
    try:
        st.pause("copied")
        size = os.fstat(fd).st_size
        if size != lay["file_size"]:
            raise Fallback("the output on disk is not the one the incremental state describes")
        buf = write._map_type()(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        dirty = []          # (start, end) file offsets written: the build id hashes those chunks again
        for p in plans:
            _patch_one(opts, state, mode, buf, p, dirty, steps)
        blocks = [p for p in plans if p.block and lay["symtab"] is not None]
        if blocks:
            buf, size = stab.write_blocks(opts, state, fd, buf, blocks, dirty)
            _mark(steps, ".symtab's blocks of locals, .strtab and the section headers again")
        _build_id(lay, buf, dirty)
        _mark(steps, "the build id")
        st.pause("patched")
        buf.close()
        buf = None
        os.close(fd)
        fd = None
        # src becomes the spare the next relink patches instead of copying the output: its
        # name is made before the rename takes the output's away
        try:
            os.unlink(keep)
        except FileNotFoundError:
            pass
        spare = None
        try:
            ident = st.identity(src)
            if tuple(ident) == tuple(state["output"]):
                os.link(src, keep, follow_symlinks=False)
                spare = (ident, _merged(dirty, size))
        except OSError:
            pass
        os.replace(tmp, opts.output)
        tmp = None
        state["spare"] = None
        if spare is not None:
            try:
                os.replace(keep, os.path.join(d, "spare"))
                state["spare"] = spare
            except OSError:
                pass
        _mark(steps, "unmap, rename")
    finally:
        if buf is not None:
            buf.close()
        if fd is not None:
            os.close(fd)
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return how


def _mark(steps, label):
    if steps is not None:
        steps.mark(label)


def _patch_one(opts, state, mode, buf, p, dirty, steps=None):
    from linkwrap.ld import relocate
    from linkwrap.ld.diag import Diagnostics
    lay = state["layout"]
    osecs = lay["osecs"]
    r = state["inputs"][p.k]
    glob = state["globals"]
    lk = p.lk = PatchLayout(state, mode, p.addr_of, p.merged, None)
    kept = KeptCopies(state.get("kept", {}), p.addr_of)
    for s in p.syms:
        if not s.is_local and s.file is ELSEWHERE or s.dso is not None:
            g = glob.get(s.name)
            if g is not None and g[5] & rec.COPIED:
                lk.copied.add(s)
    # the chunks: zeros, the slack's fill after what is used, then the members' bytes
    for name, start, cap, placed, used in p.places:
        addr, off, _size, _idx, otype, oflags, _align = osecs[name]
        if otype == elf.SHT_NOBITS:
            continue
        fo = off + start
        dirty.append((fo, fo + cap))          # the members and their relocations are inside
        buf[fo:fo + used] = bytes(used)
        if cap > used:
            buf[fo + used:fo + cap] = full.fill(name, oflags, cap - used)
        for m, moff in placed:
            if m.type == elf.SHT_NOBITS:
                continue
            data = m.bytes()
            buf[off + moff:off + moff + len(data)] = data
    _mark(steps, "write the chunks")
    diag = Diagnostics()
    # in output order, as relocate goes: the symbolic dynamic relocations come out in the same order
    for m, name, moff in sorted(p.members, key=lambda e: (osecs[e[1]][3], e[2])):
        if m.type == elf.SHT_NOBITS or not (m.rela is not None or m.relocs):
            continue
        addr, off = osecs[name][0], osecs[name][1]
        relocate._relocate_section(buf, lk, m, off + moff, addr + moff, p.syms, p.live, diag, kept)
    _mark(steps, "relocate the chunks")
    if diag.errors:
        raise Fallback(f"a relocation of {p.obj.name} does not fit: {diag.errors[0]}")
    if len(lk.other) != r["n_other"]:
        raise Fallback(f"{p.obj.name}: its number of symbolic dynamic relocations changed")
    if len(lk.relative) != r["n_rel"]:
        raise Fallback(f"{p.obj.name}: its number of RELATIVE dynamic relocations changed")
    spans = [(osecs[name][0] + start, osecs[name][0] + start + max(cap, 1))
             for name, start, cap, _pl, _u in p.places if osecs[name][5] & elf.SHF_ALLOC]
    rel_updates = {}        # P -> new addend, for RELATIVE entries outside the chunks (GOT slots, sites)
    moved = _moved(p, lk, glob)
    for name, addr in moved.items():
        _resite(lk, buf, mode, glob[name], name, addr, state["sites"].get(name), rel_updates, dirty)
        g = glob[name]
        if g[4] >= 0:
            raise Fallback(f"thread-local {name} moved and has a TLS GOT slot")
        if g[3] >= 0:
            _put_at_addr(osecs, buf, g[3], struct.pack("<Q", addr & (2**64 - 1)), dirty)
            if mode.pic:
                rel_updates[g[3]] = addr
        glob[name] = (g[0], addr, addr) + tuple(g[3:])
        if name == opts.entry:
            struct.pack_into("<Q", buf, 24, addr)
            dirty.append((24, 32))
    _mark(steps, f"references to {len(moved)} moved globals")
    if spans or rel_updates:
        _rela_relative(lay, buf, spans, sorted(lk.relative), rel_updates, dirty)
    if lk.other:
        _rela_other(lay, buf, spans, lk.other, dirty)
    _symtab(state, r, buf, p, lk, dirty)
    _dynsym(lay, r, buf, p, lk, dirty)
    if p.eh is not None and p.eh in p.addr_of:
        _eh_frame_hdr(lay, osecs, buf, p, dirty)
    _mark(steps, ".rela.dyn, .symtab, .dynsym, .eh_frame_hdr")
    _resite_own(state, p)
    _mark(steps, "its own references in the reverse index")


def _moved(p, lk, glob):
    """-> {name: new address} of the object's globals whose address changed."""
    out = {}
    for s in p.syms:
        if s.is_local or s.file is ELSEWHERE or s.section is None or s.file is None:
            continue
        a = lk.real_addr(s)
        g = glob[s.name]
        if g[0] == p.k and a != g[1]:
            out[s.name] = a
    return out


def _put_at_addr(osecs, buf, addr, data, dirty):
    for a, off, size, _i, otype, flags, _al in osecs.values():
        if flags & elf.SHF_ALLOC and a <= addr < a + size and otype != elf.SHT_NOBITS:
            buf[off + addr - a:off + addr - a + len(data)] = data
            dirty.append((off + addr - a, off + addr - a + len(data)))
            return
    raise Fallback("a patched address lies outside the output's sections")


def _resite(lk, buf, mode, g, name, S, sites, rel_updates, dirty):
    """Apply again, with the symbol's new address S, the references to it in other inputs."""
    if not sites:
        return
    if g[5] & rec.IFUNC:
        raise Fallback(f"IFUNC {name} moved")
    out = classify.output_kind(mode)
    cls = classify.ABS if g[5] & rec.ABS else classify.LOCAL
    a = array("q")
    a.frombytes(sites)
    recipes = x86_64.RECIPES
    for i in range(0, len(a), 4):
        loc, P, t, A = a[i], a[i + 1], a[i + 2], a[i + 3]
        dirty.append((loc - 2, loc + 8))      # the field, and the opcode a relaxation rewrites
        rtype = t & 0xFFFFFFFF
        writable, alloc = t >> 32 & 1, t >> 33 & 1
        r = recipes.get(rtype)
        if r is None:
            raise Fallback(f"a reference to {name} of a kind the relink does not patch")
        act = classify.action(r.kind, rtype, cls, out, writable) if alloc else classify.DIRECT
        if act is classify.GOT and r.kind == "got" and rtype != elf.R_X86_64_GOTPCREL:
            op = buf[loc - 2]
            if op == 0x8D or bytes(buf[loc - 2:loc]) == b"\x67\xe8":
                v = S + A - P
                if not -2**31 <= v < 2**31:
                    raise Fallback(f"a relaxed reference to {name} no longer reaches it")
                elf.I32.pack_into(buf, loc, v)
                continue
            if op == 0xE9:
                elf.I32.pack_into(buf, loc - 1, S + A - P + 1)
                continue
            continue     # through the GOT slot, which is patched
        if act is classify.BASEREL:
            v = (S + A) & (2**64 - 1)
            elf.U64.pack_into(buf, loc, v)
            rel_updates[P] = v
            continue
        if act is not classify.DIRECT and act is not classify.PLT:
            raise Fallback(f"a reference to {name} ({act}) the relink does not patch")
        from linkwrap.ld.relocate import _TAIL
        v = r.calc(S, A, P, None, lk)
        check, lim, pack, size = _TAIL[rtype]
        if check and not lim[0] <= v < lim[1]:
            raise Fallback(f"a reference to {name} no longer fits its field")
        if size == 8:
            v &= 2**64 - 1
        elif size == 0:
            continue
        pack(buf, loc, v)


def _rela_relative(lay, buf, spans, new, updates, dirty):
    """RELATIVE entries: those in the object's chunks replaced (sorted, the count unchanged),
    others' addends updated where a GOT slot or a pointer to a moved symbol is."""
    rd = lay["rela_dyn"]
    if rd is None:
        if new or updates:
            raise Fallback("RELATIVE relocations without .rela.dyn")
        return
    off, n, _n_other = rd
    # the r_offsets as one array (sorted: RELATIVE entries are in address order), the entries
    # rewritten one by one where they change: .rela.dyn of a PIE has 10^5 of them
    tab = array("q")
    tab.frombytes(buf[off:off + 24 * n])
    keys = tab[0::3]
    for lo, hi in sorted(spans):
        i0, i1 = bisect.bisect_left(keys, lo), bisect.bisect_left(keys, hi)
        mine = [e for e in new if lo <= e[0] < hi]
        if len(mine) != i1 - i0:
            raise Fallback("RELATIVE relocations moved between output sections")
        for i, (P, v) in zip(range(i0, i1), mine):
            e = (P, elf.R_X86_64_RELATIVE, v - (1 << 64) if v >= 1 << 63 else v)
            if tuple(tab[3 * i:3 * i + 3]) != e:
                _RELA.pack_into(buf, off + 24 * i, *e)
                dirty.append((off + 24 * i, off + 24 * i + 24))
    for P, v in updates.items():
        i = bisect.bisect_left(keys, P)
        if i >= n or keys[i] != P:
            raise Fallback("a RELATIVE relocation the state expects is not there")
        # the entry as it is now (a span above may have rewritten it): only its addend changes
        struct.pack_into("<q", buf, off + 24 * i + 16, v - (1 << 64) if v >= 1 << 63 else v)
        dirty.append((off + 24 * i + 16, off + 24 * i + 24))


def _rela_other(lay, buf, spans, new, dirty):
    """The object's symbolic entries (after the RELATIVE ones) replaced where they were, in order."""
    off, n, n_other = lay["rela_dyn"]
    at = []
    for i in range(n, n + n_other):
        P = _RELA.unpack_from(buf, off + 24 * i)[0]
        if any(lo <= P < hi for lo, hi in spans):
            at.append(i)
    if len(at) != len(new):
        raise Fallback("symbolic dynamic relocations moved between inputs")
    for i, (P, info, A) in zip(at, new):
        _RELA.pack_into(buf, off + 24 * i, P, info, A - (1 << 64) if A >= 1 << 63 else A)
        dirty.append((off + 24 * i, off + 24 * i + 24))


def _symtab(state, r, buf, p, lk, dirty):
    at = state["layout"]["symtab"]
    if at is None:
        return
    tls_start = lk.tls_start
    by_name = {s.name: s for s in p.syms if not s.is_local}
    moves, epoch = state.get("symtab_moves", []), r.get("symtab_epoch", 0)
    for k, e in r["symtab"]:
        if isinstance(k, int) and p.block:
            continue        # its block of locals is written anew (_symtab_blocks)
        e = stab.now(e, moves, epoch)
        s = p.syms[k] if isinstance(k, int) else by_name[k]
        if s.section is None or s.type == elf.STT_FILE:
            continue
        v = lk.real_addr(s)
        if s.type == elf.STT_TLS:
            v -= tls_start
        struct.pack_into("<QQ", buf, at + 24 * e + 8, v & (2**64 - 1), s.size)
        dirty.append((at + 24 * e + 8, at + 24 * e + 24))


def _dynsym(lay, r, buf, p, lk, dirty):
    at = lay["dynsym"]
    if at is None:
        return
    by_name = {s.name: s for s in p.syms if not s.is_local}
    for k, d in r["dynsym"]:
        s = by_name[k]
        if s.section is None:
            continue
        v = lk.real_addr(s)
        if s.type == elf.STT_TLS:
            v -= lk.tls_start
        struct.pack_into("<QQ", buf, at + 24 * d + 8, v & (2**64 - 1), s.size)
        dirty.append((at + 24 * d + 8, at + 24 * d + 24))


def _eh_frame_hdr(lay, osecs, buf, p, dirty):
    """The object's rows of .eh_frame_hdr's (initial location, FDE) table, sorted as the full
    link sorts the whole table. Its FDEs stay in its own .eh_frame chunk and its functions in its
    own chunks, so its rows usually keep their places: they are rewritten there when the order
    around each still holds (a few ms for 100 000 rows), else the table is sorted again."""
    from linkwrap.ld.eh_frame import _fde_table, _known_fdes
    hdr = lay["eh_hdr"]
    if hdr is None:
        return
    hoff, haddr = hdr
    eaddr, eoff = osecs[".eh_frame"][0], osecs[".eh_frame"][1]
    fa = p.addr_of[p.eh]
    foff = eoff + fa - eaddr
    if p.eh.fdes is not None:
        new = _known_fdes(buf, p.eh, foff, fa)
    else:
        new = _fde_table(buf, foff, fa, p.eh.size)
    count = struct.unpack_from("<I", buf, hoff + 8)[0]
    if buf[hoff + 3] == 0xFF or count == 0:
        return
    cap = next((c for name, start, c, _pl, _u in p.places if name == ".eh_frame"), p.eh.size)
    tab = array("i")
    tab.frombytes(buf[hoff + 12:hoff + 12 + 8 * count])
    lo, hi = fa - haddr, fa + max(cap, p.eh.size) - haddr
    mine = [i for i, f in enumerate(tab[1::2]) if lo <= f < hi]
    rows = sorted(((pc - haddr + 2**31) % 2**32 - 2**31, f - haddr) for pc, f in new)
    if len(mine) != len(new):
        # FDEs added or removed (a function): the whole table sorted again, within the spare rows
        # the full link left it (full.hdr_capacity)
        cap = (osecs[".eh_frame_hdr"][2] - 12) // 8
        n = count - len(mine) + len(new)
        if n > cap:
            raise Fallback(f".eh_frame_hdr's table is full ({count} of {cap} rows; {n} needed)")
        mine_set = set(mine)
        entries = sorted([(tab[2 * i], tab[2 * i + 1]) for i in range(count) if i not in mine_set] + rows)
        struct.pack_into("<I", buf, hoff + 8, n)
        struct.pack_into(f"<{2 * n}i", buf, hoff + 12, *[v for e in entries for v in e])
        if n < count:
            buf[hoff + 12 + 8 * n:hoff + 12 + 8 * count] = bytes(8 * (count - n))
        dirty.append((hoff + 8, hoff + 12 + 8 * max(n, count)))
        return
    for i, (pc, f) in zip(mine, rows):
        tab[2 * i], tab[2 * i + 1] = pc, f
    # the whole table is sorted again iff it was and each rewritten row sits in order between its
    # neighbours: the rows not rewritten kept their order among themselves
    pairs = lambda i: (tab[2 * i], tab[2 * i + 1])     # noqa: E731
    if all((i == 0 or pairs(i - 1) <= pairs(i)) and (i == count - 1 or pairs(i) <= pairs(i + 1)) for i in mine):
        for i in mine:
            struct.pack_into("<ii", buf, hoff + 12 + 8 * i, tab[2 * i], tab[2 * i + 1])
            dirty.append((hoff + 12 + 8 * i, hoff + 20 + 8 * i))
        return
    entries = sorted(zip(tab[0::2], tab[1::2]))
    struct.pack_into(f"<{2 * count}i", buf, hoff + 12, *[v for e in entries for v in e])
    dirty.append((hoff + 12, hoff + 12 + 8 * count))


def _build_id(lay, buf, dirty):
    """The build id again, from the chunk digests (synthetic/notes.py): only the chunks this relink
    wrote are hashed again."""
    b = lay["build_id"]
    if b is None:
        return
    off, style, n = b
    if style not in ("sha1", "md5"):
        return           # uuid and 0x...: not a digest of the contents (uuid: a new one is not asked)
    from linkwrap.ld.synthetic.notes import CHUNK, chunk_digests, tree_digest
    import hashlib
    buf[off + 16:off + 16 + n] = bytes(n)
    dirty.append((off, off + 16 + n))
    chunks = lay.get("build_id_chunks")
    n_chunks = -(-len(buf) // CHUNK)
    if chunks is not None and len(chunks) != n_chunks:
        # the file grew or shrank (.symtab's blocks): its tail is among the written ranges
        chunks = list(chunks[:n_chunks]) + [None] * (n_chunks - len(chunks))
        dirty.append(((min(len(chunks), n_chunks) - 1) * CHUNK, len(buf)))
    if chunks is None:
        chunks = chunk_digests(buf, style)
    else:
        h = hashlib.sha1 if style == "sha1" else hashlib.md5
        again = set()
        for lo, hi in dirty:
            again.update(range(max(lo, 0) // CHUNK, (max(hi, lo + 1) - 1) // CHUNK + 1))
        view = memoryview(buf)
        try:
            for i in again:
                if i * CHUNK < len(buf):
                    chunks[i] = h(view[i * CHUNK:(i + 1) * CHUNK]).digest()
        finally:
            view.release()
    lay["build_id_chunks"] = chunks
    buf[off + 16:off + 16 + n] = tree_digest(chunks, style)


def _resite_own(state, p):
    """The reverse index entries of the object's own references to other inputs' symbols: its
    sections moved inside their chunks, so its old sites are dropped and its new ones added."""
    osecs = state["layout"]["osecs"]
    spans = sorted((osecs[name][1] + start, osecs[name][1] + start + max(cap, 1))
                   for name, start, cap, _pl, _u in p.places)
    sites = state["sites"]
    fresh = {}
    for m, name, moff in p.members:
        if m.type == elf.SHT_NOBITS or m.rela is None and not m.relocs:
            continue
        addr, off = osecs[name][0], osecs[name][1]
        fo = off + moff
        flag = ((1 << 32) if m.flags & elf.SHF_WRITE else 0) | ((1 << 33) if m.flags & elf.SHF_ALLOC else 0)
        for r_off, info, add in m.get_relocs():
            s = p.syms[info >> 32]
            if s.is_local or s.file is not ELSEWHERE:
                continue
            fresh.setdefault(s.name, array("q")).extend((fo + r_off, addr + moff + r_off,
                                                         (info & 0xFFFFFFFF) | flag, add))
    starts = [s[0] for s in spans]
    # its symbol table is the one the state was made with: the names it refers to are the same
    names = set(fresh) | {s.name for s in p.syms if not s.is_local and s.file is ELSEWHERE}
    for name in names:
        a = array("q")
        a.frombytes(sites.get(name, b""))
        keep = array("q")
        for i in range(0, len(a), 4):
            j = bisect.bisect_right(starts, a[i]) - 1
            if not (j >= 0 and a[i] < spans[j][1]):
                keep.extend(a[i:i + 4])
        keep.extend(fresh.get(name, ()))
        if keep:
            sites[name] = keep.tobytes()
        else:
            sites.pop(name, None)
