"""The interface every linker-made section has (after lld's SyntheticSection).

    size()        bytes it occupies; fixed once created (called by layout)
    is_needed()   whether it appears in the output at all
    finalize(lk)  compute contents that depend on addresses (after layout)
    write_to(buf, lk) -> int   write itself into the output image; returns bytes written,
                  which the writer checks against size() (wild's "filled == reserved")
"""

from linkwrap.ld import elf


class Synthetic:
    type = elf.SHT_PROGBITS
    flags = elf.SHF_ALLOC
    align = 8
    entsize = 0
    file = None
    link = None       # another Synthetic whose output section index goes in sh_link
    info = 0

    def __init__(self, name):
        self.name = name

    def size(self) -> int:
        raise NotImplementedError

    def is_needed(self) -> bool:
        return self.size() > 0

    def finalize(self, lk) -> None:
        pass

    def write_to(self, buf, lk) -> int:
        return 0

    def __repr__(self):
        return f"<synthetic {self.name}>"


def _put(buf, off, data):
    buf[off:off + len(data)] = data
    return len(data)


def signed64(v):
    """A 64-bit field's value as the signed 64 bits ELF stores: address arithmetic wraps, as in GNU ld
    (a mutated symbol value near 2**64 plus an addend is past what struct packs)."""
    return ((v + (1 << 63)) & 0xFFFFFFFFFFFFFFFF) - (1 << 63)
