"""Relocation tables as arrays: an object's loaded sections' relocations, read once from the mapped file.

Input: an ObjectFile and some of its sections (InputSections with a .rela table). Output: a Table
of numpy columns over all their relocations, in section order (r_offset, symbol index, type,
addend, and the section each belongs to), checked as InputSection.get_relocs checks them. gc
takes its edges from it and scan its needs, instead of decoding ~280k relocations into tuples
per section (Rust debug link: ~46k sections of ~6 relocations each; a numpy call per section
would cost more than the loop, ../shared/reference/python-linker.md §4).

Used only where numpy pays for its import (classify.worth_it: enough relocations);
LINKWRAP_LD_RELOCS=python keeps every pass on the tuples (tests compare the two).
"""
from linkwrap.ld import elf


class Table:
    """One object's relocations of `secs`: row k belongs to secs[seg[k]]; first[j]:first[j + 1] are
    secs[j]'s rows, in the file's order."""
    __slots__ = ("secs", "first", "seg", "r_off", "sym", "typ", "addend")

    def __init__(self, secs, first, seg, r_off, sym, typ, addend):
        self.secs, self.first, self.seg = secs, first, seg
        self.r_off, self.sym, self.typ, self.addend = r_off, sym, typ, addend


def _widths(np):
    # the bytes a relocation type writes, as get_relocs' check counts them (an unknown type: 1)
    from linkwrap.ld.x86_64 import RECIPES
    w = np.ones(256, dtype=np.int64)
    for t, r in RECIPES.items():
        if t < 256:
            w[t] = r.size
    return w


_WIDTHS = []


def read(np, obj, secs, values=True):
    """-> a Table of secs' relocations (InputSections of obj with .rela). A malformed table raises
    what get_relocs raises for it. values=False: without r_offset and r_addend (None), which gc and
    scan do not need and gc's tables keep to scan: the link's peak memory comes between them."""
    view = obj.view
    n = len(secs)
    counts = np.fromiter((s.rela[1] // 24 for s in secs), dtype=np.int64, count=n)
    offs = np.fromiter((s.rela[0] for s in secs), dtype=np.int64, count=n)
    first = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=first[1:])
    total = int(first[-1])
    seg = np.repeat(np.arange(n, dtype=np.int64), counts)
    if total and not (offs & 7).any():
        # every table 8-aligned in the file: one array over it and the rows gathered, not a call per section
        words = np.frombuffer(view, dtype="<u8", count=len(view) // 8)
        at = np.repeat(offs // 8 - 3 * first[:-1], counts) + 3 * np.arange(total, dtype=np.int64)
        rel = np.empty((total, 3), dtype=np.uint64)
        rel[:, 0] = words[at]
        rel[:, 1] = words[at + 1]
        rel[:, 2] = words[at + 2]
    elif total:
        rel = np.concatenate([np.frombuffer(view, dtype="<u8", count=3 * int(c), offset=int(o))
                              for o, c in zip(offs.tolist(), counts.tolist())]).reshape(-1, 3)
    else:
        rel = np.zeros((0, 3), dtype=np.uint64)
    r_off = rel[:, 0].astype(np.int64)
    info = rel[:, 1]
    sym = (info >> np.uint64(32)).astype(np.int64)
    typ = (info & np.uint64(0xFFFFFFFF)).astype(np.int64)
    addend = rel[:, 2].view(np.int64)
    # get_relocs' checks: the symbol index, a symbol of a dropped section, the offset inside the section
    if not _WIDTHS:
        _WIDTHS.append(_widths(np))
    width = _WIDTHS[0][np.minimum(typ, 255)]
    sizes = np.fromiter((s.size for s in secs), dtype=np.int64, count=n)
    bad = (sym >= len(obj.raw_syms)) | (r_off < 0) | (r_off + width > sizes[seg])
    dropped = obj.dropped_syms
    if dropped:
        alloc = np.fromiter((bool(s.flags & elf.SHF_ALLOC) for s in secs), dtype=bool, count=n)
        bad |= np.isin(sym, np.fromiter(dropped, dtype=np.int64, count=len(dropped))) & alloc[seg]
    if bad.any():
        for j in np.unique(seg[bad]).tolist():
            secs[j].get_relocs()        # names the first malformation, as the tuples' path does
        from linkwrap.ld.diag import BadInput
        raise BadInput(f"{obj.name}: malformed relocation table")   # the checks above are get_relocs'
    if not values:
        r_off = addend = None
    return Table(secs, first, seg, r_off, sym, typ, addend)


def from_rows(np, sec, rows):
    """A Table of one section's decoded relocations (gc's .eh_frame copy keeps its own list)."""
    n = len(rows)
    if not n:
        e = np.zeros(0, dtype=np.int64)
        return Table([sec], np.array([0, 0], dtype=np.int64), e, e, e, e, e)
    # a column at a time: numpy reads a flat tuple of ints far faster than nested ones
    r_off, info, addend = zip(*rows)
    info = np.array(info, dtype=np.uint64)
    return Table([sec], np.array([0, n], dtype=np.int64), np.zeros(n, dtype=np.int64),
                 np.array(r_off, dtype=np.int64), (info >> np.uint64(32)).astype(np.int64),
                 (info & np.uint64(0xFFFFFFFF)).astype(np.int64), np.array(addend, dtype=np.int64))


def local_symbols(np, obj):
    """-> (st_shndx, st_value, type) of obj's locals (the symbols before sh_info) as arrays, read from
    its symbol table; None where the table has extended section indexes. Lets a pass resolve the
    locals a relocation names (most of them: section symbols, static functions) without their
    Symbols: parse checked every entry."""
    if obj.symtab_span is None or not obj.first_global:
        return None
    off, n = obj.symtab_span
    a = np.frombuffer(obj.view, dtype=_sym_dtype(np), count=obj.first_global, offset=off)
    return a["shndx"].astype(np.int64), a["value"], a["info"] & 0xF


_SYM_DTYPE = []


def _sym_dtype(np):
    if not _SYM_DTYPE:
        _SYM_DTYPE.append(np.dtype([("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"),
                                    ("value", "<u8"), ("size", "<u8")]))
    return _SYM_DTYPE[0]


def section_addresses(np, obj, addr_of):
    """-> obj's sections' addresses by section index, -1 for a section without one (none, merged,
    discarded)."""
    get = addr_of.get
    return np.array([-1 if a is None else a for a in map(get, obj.sections)], dtype=np.int64)


def sections_kept(np, obj):
    """-> by section index, whether parse kept the section (an InputSection, not None)."""
    from itertools import repeat
    from operator import is_not
    return np.fromiter(map(is_not, obj.sections, repeat(None)), dtype=bool, count=len(obj.sections))
