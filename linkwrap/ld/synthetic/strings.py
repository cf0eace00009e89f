"""String sections: .strtab/.dynstr, .comment, and SHF_MERGE sections merged piece by piece."""

from linkwrap.ld import elf
from linkwrap.ld.synthetic.base import _put, Synthetic


class Comment(Synthetic):
    """'Linker: linkwrap.ld <version>' in .comment, as lld and mold identify themselves."""
    flags = elf.SHF_MERGE | elf.SHF_STRINGS
    align = 1
    entsize = 1

    def __init__(self):
        super().__init__(".comment")
        from linkwrap import __version__
        self.data = f"Linker: linkwrap.ld {__version__}".encode() + b"\0"

    def size(self):
        return len(self.data)

    def write_to(self, buf, lk):
        return _put(buf, lk.offset_of(self), self.data)


class MergedSection(Synthetic):
    """SHF_MERGE input sections of one output name, flags, entry size and alignment, with each
    distinct string (SHF_STRINGS) or constant stored once, as GNU ld merges them.

    pieces: input section -> (its piece offsets, their offsets here), sorted; an address inside
    an input section maps to the same place inside its piece's copy (offset_in)."""

    def __init__(self, name, flags, entsize, align, sections):
        super().__init__(name)
        self.flags = flags
        self.entsize = entsize
        self.align = align
        self.type = elf.SHT_PROGBITS
        self.inputs = sections
        data = bytearray()
        seen = {}
        pieces = self.pieces = {}
        self.starts = {}          # input section -> {piece offset: its offset here}: most references
        strings = flags & elf.SHF_STRINGS
        if strings and entsize == 1 and align == 1:
            from linkwrap.ld import merge
            fast = merge.strings(sections)      # the same pieces, the per-string work in C
            if fast is not None:
                self.data, self.pieces = fast
                return
        for sec in sections:
            ins, outs = [], []
            for start, piece in _split_pieces(bytes(sec.bytes()), entsize, strings):
                off = seen.get(piece)
                if off is None:
                    pad = -len(data) % align
                    data += b"\0" * pad
                    off = seen[piece] = len(data)
                    data += piece
                ins.append(start)
                outs.append(off)
            pieces[sec] = (ins, outs)
            self.starts[sec] = dict(zip(ins, outs))
        self.data = bytes(data)

    def offset_in(self, sec, off):
        starts = self.starts.get(sec)
        if starts is None:      # built on first use: .debug_str's are never asked (relocate_bulk)
            starts = self.starts[sec] = dict(zip(*self.pieces[sec]))
        hit = starts.get(off)
        if hit is not None:
            return hit
        import bisect
        ins, outs = self.pieces[sec]
        k = bisect.bisect_right(ins, off) - 1
        if k < 0:
            return off
        return outs[k] + off - ins[k]

    def size(self):
        return len(self.data)

    def is_needed(self):
        return True

    def write_to(self, buf, lk):
        return _put(buf, lk.offset_of(self), self.data)


def _split_pieces(data, entsize, strings):
    """-> [(offset, bytes)]: NUL-terminated strings (in units of entsize) or fixed-size entries."""
    out = []
    if not strings:
        return [(k, data[k:k + entsize]) for k in range(0, len(data), entsize)]
    if entsize == 1:
        pos = 0
        for part in data.split(b"\0")[:-1]:
            out.append((pos, part + b"\0"))
            pos += len(part) + 1
        if pos < len(data):
            out.append((pos, data[pos:]))     # no terminating NUL: kept whole, as it is
        return out
    pos = start = 0
    zero = b"\0" * entsize
    while pos < len(data):
        if data[pos:pos + entsize] == zero:
            out.append((start, data[start:pos + entsize]))
            start = pos + entsize
        pos += entsize
    if start < len(data):
        out.append((start, data[start:]))
    return out


def merge_sections(opts, live):
    """The MergedSections for the live SHF_MERGE sections that can be merged: sections with
    relocations of their own, or whose size is no multiple of the entry size, stay as they are."""
    from linkwrap.ld.layout import output_name
    groups = {}
    for sec in live.sections:
        f = sec.flags
        if not f & elf.SHF_MERGE or not sec.entsize or sec.size % sec.entsize or sec.rela is not None \
                or sec.type != elf.SHT_PROGBITS or f & elf.SHF_TLS:
            continue
        if not f & elf.SHF_ALLOC and (opts.strip_all or (opts.strip_debug and sec.name.startswith(".debug"))):
            continue
        key = (output_name(sec), f & ~elf.SHF_GROUP, sec.entsize, sec.align)
        groups.setdefault(key, []).append(sec)
    return [MergedSection(name, flags, entsize, align, secs) for (name, flags, entsize, align), secs in groups.items()]


class StrTab(Synthetic):
    """A string table: each name once, NUL-terminated, its offset fixed when it is added.
    As such it is .strtab (the names .symtab uses); DynStr is the loaded .dynstr."""
    type = elf.SHT_STRTAB
    flags = 0
    align = 1

    def __init__(self, name=".strtab", offsets=None):
        super().__init__(name)
        self.data = bytearray(b"\0")
        self.offsets = dict(offsets or {})

    def add(self, name: str) -> int:
        off = self.offsets.get(name)
        if off is None:
            off = self.offsets[name] = len(self.data)
            self.data += name.encode() + b"\0"
        return off

    def add_all(self, names) -> list:
        """-> each name's offset: add() for every name, in one loop (.symtab's 60k+ names in a Rust
        debug link)."""
        offsets = self.offsets
        get = offsets.get
        data = self.data
        out = []
        append = out.append
        for name in names:
            off = get(name)
            if off is None:
                off = offsets[name] = len(data)
                data += name.encode()
                data.append(0)
            append(off)
        return out

    def size(self):
        return len(self.data)

    def write_to(self, buf, lk):
        return _put(buf, lk.offset_of(self), self.data)


class DynStr(StrTab):
    flags = elf.SHF_ALLOC

    def __init__(self):
        super().__init__(".dynstr", {"": 0})

    def is_needed(self):
        return True
