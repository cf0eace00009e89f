"""The GOT (.got: addresses, TP offsets, TLS module/offset pairs), .got.plt and the PLT.

Each slot's contents are the classifier's answer (classify.action "gotslot"/"tpslot"): a value
known here, a RELATIVE relocation, or a symbolic dynamic relocation."""
import struct

from linkwrap.ld import classify, elf
from linkwrap.ld import x86_64
from linkwrap.ld.classify import preemptible
from linkwrap.ld.synthetic.base import _put, signed64, Synthetic


class Got(Synthetic):
    """.got: address slots, thread-pointer-offset slots (initial-exec), and in a shared object
    (module, offset) pairs for general-dynamic TLS and one module pair for local-dynamic."""
    flags = elf.SHF_ALLOC | elf.SHF_WRITE

    def __init__(self, entries):
        super().__init__(".got")
        self.entries = entries
        self.index = {}           # Symbol -> slot holding its address
        self.tp_index = {}        # Symbol -> slot holding its TP offset
        self.gd_index = {}        # Symbol -> first slot of its (DTPMOD64, DTPOFF64) pair
        self.ld_index = None      # first slot of the local-dynamic (module, 0) pair
        self.desc_index = {}      # Symbol -> first slot of its TLS descriptor (function, argument)
        self.first = []           # slot number of each entry
        n = 0
        for kind, s in entries:
            self.first.append(n)
            if kind == "addr":
                self.index[s] = n
            elif kind == "tp":
                self.tp_index[s] = n
            elif kind == "gd":
                self.gd_index[s] = n
            elif kind == "desc":
                self.desc_index[s] = n
            else:
                self.ld_index = n
            n += 2 if kind in ("gd", "ld", "desc") else 1
        self.n_slots = n
        self.values = []          # slot contents, filled by finalize

    def size(self):
        return 8 * self.n_slots

    def _actions(self, mode, copied):
        """(kind, symbol, slot, preemptible, the classifier's action for the slot) per entry."""
        out = classify.output_kind(mode)
        for (kind, s), slot in zip(self.entries, self.first):
            if kind == "ld":
                yield kind, s, slot, False, classify.DYNREL
                continue
            pre = not s.is_local and preemptible(s, mode, copied)
            cls = classify.sym_class(s, pre)
            yield kind, s, slot, pre, classify.action("gotslot" if kind == "addr" else "tpslot", 0, cls, out)

    def n_dynrel(self, mode, copied):
        """How many dynamic relocations finalize will add (for .rela.dyn's size)."""
        n = 0
        for kind, s, slot, pre, act in self._actions(mode, copied):
            if kind == "gd":
                n += 2 if pre else 1
            elif kind == "desc":
                n += 1
            elif act is classify.DYNREL or act is classify.BASEREL:
                n += 1
        return n

    def finalize(self, lk):
        rela = lk.synth.rela_dyn
        dynidx = lk.synth.dynsym.index if lk.synth.dynsym is not None else {}
        vals = self.values = [0] * self.n_slots
        base = lk.addr_of[self]
        for kind, s, i, pre, act in self._actions(lk.mode, lk.synth.copied):
            slot = base + 8 * i
            if kind == "ld":
                rela.other.append((slot, elf.R_X86_64_DTPMOD64, 0))    # this module; offset 0
            elif kind == "gd":
                if pre:
                    rela.other.append((slot, (dynidx[s] << 32) | elf.R_X86_64_DTPMOD64, 0))
                    rela.other.append((slot + 8, (dynidx[s] << 32) | elf.R_X86_64_DTPOFF64, 0))
                else:      # this module's variable: its offset in the block is known here
                    rela.other.append((slot, elf.R_X86_64_DTPMOD64, 0))
                    vals[i + 1] = lk.dtp_offset(lk.sym_addr(s))
            elif kind == "desc":
                # the loader writes the descriptor (eagerly: it is in .rela.dyn, as lld puts it)
                if pre:
                    rela.other.append((slot, (dynidx[s] << 32) | elf.R_X86_64_TLSDESC, 0))
                else:
                    rela.other.append((slot, elf.R_X86_64_TLSDESC, lk.dtp_offset(lk.sym_addr(s))))
            elif kind == "addr":
                if act is classify.DYNREL:
                    rela.other.append((slot, (dynidx[s] << 32) | elf.R_X86_64_GLOB_DAT, 0))
                else:
                    a = lk.sym_addr(s)
                    if act is classify.BASEREL:
                        rela.relative.append((slot, a))
                    vals[i] = a
            elif act is classify.DYNREL:
                if pre:
                    rela.other.append((slot, (dynidx[s] << 32) | elf.R_X86_64_TPOFF64, 0))
                else:      # a shared object's own variable: the loader knows where its block is
                    rela.other.append((slot, elf.R_X86_64_TPOFF64, lk.dtp_offset(lk.sym_addr(s))))
            else:
                vals[i] = lk.tp_offset(lk.sym_addr(s))

    def write_to(self, buf, lk):
        return _put(buf, lk.offset_of(self), struct.pack(f"<{len(self.values)}q", *map(signed64, self.values)))


class GotPlt(Synthetic):
    flags = elf.SHF_ALLOC | elf.SHF_WRITE

    def __init__(self, plt_syms, needed):
        super().__init__(".got.plt")
        self.n = len(plt_syms)
        self.needed = needed

    def size(self):
        return 8 * (3 + self.n)

    def is_needed(self):
        return self.needed or self.n > 0

    def slot(self, lk, i):
        return lk.addr_of[self] + 8 * (3 + i)

    def write_to(self, buf, lk):
        vals = [lk.addr_of[lk.synth.dynamic] if lk.synth.dynamic else 0, 0, 0]
        plt = lk.synth.plt
        for i, s in enumerate(plt.symbols):
            vals.append(lk.real_addr(s) if s.is_ifunc else plt.entry_addr(lk, i) + 6)
        return _put(buf, lk.offset_of(self), struct.pack(f"<{len(vals)}Q", *vals))


class Plt(Synthetic):
    flags = elf.SHF_ALLOC | elf.SHF_EXECINSTR
    align = 16

    def __init__(self, symbols, lazy_header):
        super().__init__(".plt")
        self.symbols = symbols
        self.header = x86_64.PLT_ENTRY_SIZE if lazy_header and any(not s.is_ifunc for s in symbols) else 0
        self.index = {s: i for i, s in enumerate(symbols)}   # Symbol -> its PLT entry

    def size(self):
        return self.header + x86_64.PLT_ENTRY_SIZE * len(self.symbols)

    def entry_addr(self, lk, i):
        return lk.addr_of[self] + self.header + x86_64.PLT_ENTRY_SIZE * i

    def write_to(self, buf, lk):
        got = lk.synth.got_plt
        out = bytearray()
        addr = lk.addr_of[self]
        if self.header:
            out += x86_64.plt0(lk.addr_of[got], addr)
        for i, s in enumerate(self.symbols):
            out += x86_64.plt_entry(got.slot(lk, i), self.entry_addr(lk, i), i, addr, bool(self.header))
        return _put(buf, lk.offset_of(self), out)
