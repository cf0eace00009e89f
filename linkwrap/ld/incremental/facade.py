"""What relocate's code asks of a Layout, answered for one changed input from the state.

relocate._relocate_section applies a section's relocations with the linker's own classifier and
recipes; given this stand-in for the Layout (new addresses for the changed input's sections, the
state's for everything else) it computes exactly what the full link computes. What the state
cannot answer -- a GOT/TLS slot the last link did not make, a symbol it does not know -- raises
Fallback: a full incremental link follows, with that reason.
"""
from types import SimpleNamespace

from linkwrap.ld.incremental import record as rec


class Fallback(Exception):
    """A relink cannot patch this exactly: str() is the reason `explain` gives."""


class Elsewhere:
    """The defining file of a stand-in symbol (another input: it has an address in the state)."""
    name = "another input"


ELSEWHERE = Elsewhere()
DSO = SimpleNamespace(name="a shared library")


class PatchLayout:
    def __init__(self, state, mode, addr_of, merged, kept):
        lay = state["layout"]
        self.glob = state["globals"]
        self.mode = mode
        self.addr_of = addr_of
        self.tls_start, self.tls_end_tp = lay["tls"]
        self.got_base = lay["got_base"]
        self.relative = []
        self.other = []
        self.merged = merged          # InputSection -> (MergedSection's address, ins, outs)
        self.kept = kept              # (group signature, name) -> (address, size) of the kept copy
        self.copied = set()
        self.synth = SimpleNamespace(rela_dyn=SimpleNamespace(relative=self.relative, other=self.other),
                                     copied=self.copied, merged_of=merged,
                                     dynsym=SimpleNamespace(index=_DynIndex(self.glob)))

    # --- addresses of the state's symbols ---
    def _g(self, s):
        g = self.glob.get(s.name) if not s.is_local else None
        if g is None:
            raise Fallback(f"a local symbol {s.name or '(section)'} of a changed input needs a linker-made slot")
        return g

    def sym_addr(self, s):
        if s.file is not ELSEWHERE and s.section is not None:
            return self.real_addr(s)
        if s.is_local:
            return self.real_addr(s)
        return self._g(s)[2]

    def real_addr(self, s):
        sec = s.section
        if sec is not None:
            a = self.addr_of.get(sec)
            if a is not None:
                return a + s.value
            if sec in self.merged:
                return self.merged_addr(sec, s.value)
            return 0
        if s.is_abs:
            return s.value
        if s.is_local:
            return 0
        return self._g(s)[1]

    def merged_addr(self, sec, off):
        import bisect
        base, ins, outs = self.merged[sec]
        k = bisect.bisect_right(ins, off) - 1
        if k < 0:
            return base + off
        return base + outs[k] + off - ins[k]

    def got_slot(self, s):
        slot = self._g(s)[3]
        if slot < 0:
            raise Fallback(f"{s.name} needs a GOT slot the last link did not make")
        return slot

    def _tls_slot(self, s):
        raise Fallback(f"a thread-local reference to {s.name} through a GOT slot")

    gottp_slot = gd_slot = desc_slot = _tls_slot

    def ld_slot(self):
        raise Fallback("a local-dynamic TLS reference through a GOT slot")

    def tp_offset(self, addr):
        return addr - self.tls_end_tp

    def dtp_offset(self, addr):
        return addr - self.tls_start


class _DynIndex:
    """Symbol -> its .dynsym index, from the state (symbolic dynamic relocations name it)."""

    def __init__(self, glob):
        self.glob = glob

    def __getitem__(self, s):
        g = self.glob.get(s.name) if not s.is_local else None
        if g is None or g[10] < 0:
            raise Fallback(f"{s.name or 'a local symbol'} would need a .dynsym entry the last link did not make")
        return g[10]


class KeptCopies:
    """relocate's _KeptCopies for a changed input: the kept copy of a COMDAT section it dropped,
    from the state (debug info about an inline function points at the copy that was kept)."""

    def __init__(self, table, addr_of):
        self.table = table
        self.addr_of = addr_of

    def get(self, sec):
        k = self.table.get((sec.group_sig, sec.name))
        if k is None or k[1] != sec.size:
            return None
        key = ("kept", sec.group_sig, sec.name)
        self.addr_of[key] = k[0]
        return key


def stand_in(s, g, own):
    """Make the mini resolution's Symbol s (a global of the changed input) what the full link
    resolved it to: its own definition (kept), or a stand-in defined elsewhere / in a library."""
    def_input, _real, _sym, _got, _tls, flags, stype, vis, bind, size, _dyn = g
    if def_input == own and s.section is not None:
        return
    s.section = None
    s.value = 0
    s.file = ELSEWHERE if def_input >= 0 or (flags & rec.DEFINED and not flags & (rec.DSO | rec.LINKER | rec.ABS)) \
        else None
    s.dso = DSO if flags & rec.DSO else None
    s.linker_defined = bool(flags & rec.LINKER)
    s.is_abs = bool(flags & rec.ABS)
    if s.is_abs:
        s.value = _real
    s.type = stype
    s.visibility = vis
    s.bind = bind
    s.size = size

