"""x86-64 relocation recipes: one table row per relocation type.

Input: nothing. Output: RECIPES, a dict from relocation type to Recipe, and the
TLS relaxation rewrites. A recipe says how wide the field is, how to check the
result (signed, unsigned or not at all), which scan `kind` it belongs to (what
the type needs from the linker: a GOT slot, a PLT entry, a dynamic relocation
...) and the formula, named by the psABI letters:

  S  symbol address (its PLT entry when calls must go through one)
  A  addend          P  address of the field      G  the symbol's GOT slot
  GOT  address of .got.plt (_GLOBAL_OFFSET_TABLE_)   TP  thread-pointer offset
  DTP  offset inside this module's TLS block         Z  symbol size
"""
from typing import NamedTuple

from linkwrap.ld import elf


class Recipe(NamedTuple):
    name: str
    size: int          # bytes written
    check: str         # 's' signed, 'u' unsigned, '' no overflow check
    kind: str          # scan category, see scan.py
    calc: object       # f(S, A, P, sym, lk) -> value


# The formulas. lk is the Layout: got_slot(sym), gottp_slot(sym), got_base, tp_offset(addr), dtp_offset(addr).
def _s_a(S, A, P, sym, lk): return S + A                          # S + A
def _s_a_p(S, A, P, sym, lk): return S + A - P                    # S + A - P
def _g_a_p(S, A, P, sym, lk): return lk.got_slot(sym) + A - P     # G + GOT + A - P
def _got_a_p(S, A, P, sym, lk): return lk.got_base + A - P        # GOT + A - P
def _s_a_got(S, A, P, sym, lk): return S + A - lk.got_base        # S + A - GOT
def _tp(S, A, P, sym, lk): return lk.tp_offset(S) + A             # S + A - TP
def _dtp(S, A, P, sym, lk): return lk.dtp_offset(S) + A           # S + A - DTP
def _gottp(S, A, P, sym, lk): return lk.gottp_slot(sym) + A - P   # G(tp) + A - P
def _z_a(S, A, P, sym, lk): return sym.size + A                   # Z + A
def _g_a(S, A, P, sym, lk): return lk.got_slot(sym) - lk.got_base + A   # G + A (GOT-relative slot)
def _g_got_a_p(S, A, P, sym, lk): return lk.got_slot(sym) + A - P  # G + GOT + A - P, 64-bit
def _l_got_a(S, A, P, sym, lk): return S + A - lk.got_base         # L - GOT + A (S is the PLT entry)
def _zero(S, A, P, sym, lk): return 0


RECIPES = {
    elf.R_X86_64_NONE: Recipe("R_X86_64_NONE", 0, "", "none", _zero),
    elf.R_X86_64_64: Recipe("R_X86_64_64", 8, "", "abs64", _s_a),
    elf.R_X86_64_PC32: Recipe("R_X86_64_PC32", 4, "s", "pc", _s_a_p),
    elf.R_X86_64_PLT32: Recipe("R_X86_64_PLT32", 4, "s", "pc", _s_a_p),
    elf.R_X86_64_GOTPCREL: Recipe("R_X86_64_GOTPCREL", 4, "s", "got", _g_a_p),
    elf.R_X86_64_GOTPCRELX: Recipe("R_X86_64_GOTPCRELX", 4, "s", "got", _g_a_p),
    elf.R_X86_64_REX_GOTPCRELX: Recipe("R_X86_64_REX_GOTPCRELX", 4, "s", "got", _g_a_p),
    elf.R_X86_64_32: Recipe("R_X86_64_32", 4, "u", "abs32", _s_a),
    elf.R_X86_64_32S: Recipe("R_X86_64_32S", 4, "s", "abs32", _s_a),
    elf.R_X86_64_16: Recipe("R_X86_64_16", 2, "u", "abs32", _s_a),
    elf.R_X86_64_8: Recipe("R_X86_64_8", 1, "u", "abs32", _s_a),
    elf.R_X86_64_PC16: Recipe("R_X86_64_PC16", 2, "s", "pc", _s_a_p),
    elf.R_X86_64_PC8: Recipe("R_X86_64_PC8", 1, "s", "pc", _s_a_p),
    elf.R_X86_64_PC64: Recipe("R_X86_64_PC64", 8, "", "pc", _s_a_p),
    elf.R_X86_64_GOTPC32: Recipe("R_X86_64_GOTPC32", 4, "s", "gotbase", _got_a_p),
    elf.R_X86_64_GOTOFF64: Recipe("R_X86_64_GOTOFF64", 8, "", "gotbase", _s_a_got),
    elf.R_X86_64_SIZE32: Recipe("R_X86_64_SIZE32", 4, "u", "size", _z_a),
    elf.R_X86_64_SIZE64: Recipe("R_X86_64_SIZE64", 8, "", "size", _z_a),
    elf.R_X86_64_TPOFF32: Recipe("R_X86_64_TPOFF32", 4, "s", "tpoff", _tp),
    elf.R_X86_64_TPOFF64: Recipe("R_X86_64_TPOFF64", 8, "", "tpoff", _tp),
    elf.R_X86_64_GOTTPOFF: Recipe("R_X86_64_GOTTPOFF", 4, "s", "gottp", _gottp),
    elf.R_X86_64_DTPOFF32: Recipe("R_X86_64_DTPOFF32", 4, "s", "dtpoff", _dtp),
    elf.R_X86_64_DTPOFF64: Recipe("R_X86_64_DTPOFF64", 8, "", "dtpoff", _dtp),
    # TLSGD/TLSLD are rewritten (relaxed) together with the call that follows them.
    elf.R_X86_64_TLSGD: Recipe("R_X86_64_TLSGD", 4, "s", "tlsgd", None),
    elf.R_X86_64_TLSLD: Recipe("R_X86_64_TLSLD", 4, "s", "tlsld", None),
    # TLS descriptors (gcc -mtls-dialect=gnu2): relaxed to local-exec or initial-exec
    elf.R_X86_64_GOTPC32_TLSDESC: Recipe("R_X86_64_GOTPC32_TLSDESC", 4, "s", "tlsdesc", None),
    elf.R_X86_64_TLSDESC_CALL: Recipe("R_X86_64_TLSDESC_CALL", 0, "", "tlsdesc_call", None),
    # the large code model (-mcmodel=large -fPIC): 64-bit GOT- and PLT-relative forms
    elf.R_X86_64_GOT64: Recipe("R_X86_64_GOT64", 8, "", "got64", _g_a),
    elf.R_X86_64_GOTPLT64: Recipe("R_X86_64_GOTPLT64", 8, "", "got64", _g_a),
    elf.R_X86_64_GOTPCREL64: Recipe("R_X86_64_GOTPCREL64", 8, "", "got64", _g_got_a_p),
    elf.R_X86_64_GOTPC64: Recipe("R_X86_64_GOTPC64", 8, "", "gotbase", _got_a_p),
    elf.R_X86_64_PLTOFF64: Recipe("R_X86_64_PLTOFF64", 8, "", "pltoff", _l_got_a),
}

# --- What a relocation needs: one classifier for scan, synthetic and relocate -----------------
# After mold's per-output-kind action tables and lld's RelExpr: the recipe's kind, the class
# of the symbol and the kind of output decide one action. Scan turns actions into needs (GOT
# slots, PLT entries, copies, dynamic symbols, errors), relocate applies them, and the GOT
# slots' contents ask the same question ("gotslot", "tpslot").

# output kinds
STATIC, PIE, EXEC, SHARED = 0, 1, 2, 3   # static non-PIE / PIE (also static-pie) / non-PIE dynamic / -shared


def output_kind(mode):
    if mode.shared:
        return SHARED
    if mode.pic:
        return PIE
    return EXEC if mode.interp else STATIC


# symbol classes
LOCAL = "local"      # bound here; its address moves with the load address when the output is PIC
ABS = "abs"          # bound here to a fixed value: SHN_ABS, or an undefined weak that stays 0
DATA = "data"        # preemptible: a shared library's data object (an executable may copy it)
FUNC = "func"        # preemptible: any other shared-library symbol
PREEMPT = "pre"      # preemptible, from no library: an undefined symbol of a dynamic output, or
                     # a shared object's own exported definition that another module may interpose


def sym_class(s, pre):
    """pre: the symbol is preemptible (scan.preemptible)."""
    if pre:
        if s.dso is None:
            return PREEMPT
        return DATA if s.type == elf.STT_OBJECT else FUNC
    if s.is_abs or (not s.defined and not s.is_local):
        return ABS
    return LOCAL


# actions
NONE = "none"              # nothing to write
DIRECT = "direct"          # the recipe's formula with link-time values
BASEREL = "baserel"        # DIRECT, and an R_X86_64_RELATIVE so the loader adds the load address
DYNREL = "dynrel"          # left to the loader: a symbolic dynamic relocation, the field 0
COPYREL = "copyrel"        # the library's data is copied into .bss, then DIRECT
PLT = "plt"                # through the symbol's PLT entry
CANONICAL_PLT = "canon"    # a PLT entry that is the function's address in the whole process
GOT = "got"                # a GOT slot with the address (relaxed to direct access when bound here)
GOTTP = "gottp"            # a GOT slot with the thread-pointer offset (initial-exec)
GD_TO_LE, GD_TO_IE, LD_TO_LE = "gd>le", "gd>ie", "ld>le"    # TLS rewrites in an executable
TLSGD, TLSLD = "tlsgd", "tlsld"          # kept general/local dynamic: a (module, offset) GOT pair
TLSDESC = "tlsdesc"        # kept TLS descriptor (shared object): a GOT pair the loader fills (R_X86_64_TLSDESC)
TLS_TPOFF = "tpoff"        # x@dtpoff after LD->LE: a thread-pointer offset
DESC_TO_LE, DESC_TO_IE, DESC_CALL_NOP = "desc>le", "desc>ie", "desc-call"
ERR_PIC = "err-pic"        # cannot be used in PIC output: recompile with -fPIC
ERR_TEXT = "err-text"      # would need a dynamic relocation in a read-only section
ERR_PREEMPT = "err-pre"    # needs the symbol's value at link time, but the loader binds it

_X = (None,) * 4       # a symbol class this output kind never has
# kind -> symbol class -> action per output kind (STATIC, PIE, EXEC, SHARED); callable: decided by
# the details (relocation type, writable section)
_TABLE = {
    "pc": {
        LOCAL: (DIRECT,) * 4, ABS: (DIRECT,) * 4,
        DATA: (None, COPYREL, COPYREL, ERR_PIC),
        FUNC: (None, PLT, CANONICAL_PLT, ERR_PIC),
        PREEMPT: (DIRECT, DIRECT, DIRECT, ERR_PIC),
    },
    "abs64": {
        LOCAL: (DIRECT, BASEREL, DIRECT, BASEREL), ABS: (DIRECT,) * 4,
        DATA: (None, DYNREL, COPYREL, DYNREL),
        FUNC: (None, DYNREL, CANONICAL_PLT, DYNREL),
        PREEMPT: (DYNREL,) * 4,
    },
    "abs32": {
        LOCAL: (DIRECT, ERR_PIC, DIRECT, ERR_PIC), ABS: (DIRECT,) * 4,
        DATA: (None, ERR_PIC, COPYREL, ERR_PIC),
        FUNC: (None, ERR_PIC, CANONICAL_PLT, ERR_PIC),
        PREEMPT: (PLT, PLT, PLT, ERR_PIC),
    },
    "tpoff": {LOCAL: (DIRECT, DIRECT, DIRECT, ERR_PIC), ABS: (DIRECT, DIRECT, DIRECT, ERR_PIC),
              DATA: (ERR_PREEMPT,) * 4, FUNC: (ERR_PREEMPT,) * 4, PREEMPT: (ERR_PREEMPT,) * 4},
    "tlsgd": {LOCAL: (GD_TO_LE, GD_TO_LE, GD_TO_LE, TLSGD), ABS: (GD_TO_LE, GD_TO_LE, GD_TO_LE, TLSGD),
              DATA: (GD_TO_IE, GD_TO_IE, GD_TO_IE, TLSGD), FUNC: (GD_TO_IE, GD_TO_IE, GD_TO_IE, TLSGD),
              PREEMPT: (GD_TO_IE, GD_TO_IE, GD_TO_IE, TLSGD)},
    "tlsdesc": {LOCAL: (DESC_TO_LE, DESC_TO_LE, DESC_TO_LE, TLSDESC),
                ABS: (DESC_TO_LE, DESC_TO_LE, DESC_TO_LE, TLSDESC),
                DATA: (DESC_TO_IE, DESC_TO_IE, DESC_TO_IE, TLSDESC),
                FUNC: (DESC_TO_IE, DESC_TO_IE, DESC_TO_IE, TLSDESC),
                PREEMPT: (DESC_TO_IE, DESC_TO_IE, DESC_TO_IE, TLSDESC)},
    # the contents of a GOT slot holding an address / a thread-pointer offset
    "gotslot": {LOCAL: (DIRECT, BASEREL, DIRECT, BASEREL), ABS: (DIRECT,) * 4,
                DATA: (DYNREL,) * 4, FUNC: (DYNREL,) * 4, PREEMPT: (DYNREL,) * 4},
    "tpslot": {LOCAL: (DIRECT, DIRECT, DIRECT, DYNREL), ABS: (DIRECT, DIRECT, DIRECT, DYNREL),
               DATA: (DYNREL,) * 4, FUNC: (DYNREL,) * 4, PREEMPT: (DYNREL,) * 4},
}
_SAME = {"none": NONE, "size": DIRECT, "gotbase": DIRECT, "got": GOT, "got64": GOT, "gottp": GOTTP}
_BY_OUTPUT = {"tlsld": (LD_TO_LE, LD_TO_LE, LD_TO_LE, TLSLD),
              "dtpoff": (TLS_TPOFF, TLS_TPOFF, TLS_TPOFF, DIRECT),
              "tlsdesc_call": (DESC_CALL_NOP, DESC_CALL_NOP, DESC_CALL_NOP, NONE)}   # the call stays


def action(kind, rtype, cls, out, writable=True):
    """The action for a relocation of recipe kind `kind` (type rtype) in an allocated section
    against a symbol of class cls, in an output of kind out. Not for non-alloc sections
    (.debug_*), whose relocations are always DIRECT."""
    a = _SAME.get(kind)
    if a is not None:
        if kind == "gotbase" and rtype == elf.R_X86_64_GOTOFF64 and cls in (DATA, FUNC, PREEMPT):
            return ERR_PREEMPT       # S - GOT needs S at link time
        return a
    row = _BY_OUTPUT.get(kind)
    if row is not None:
        return row[out]
    if kind == "pltoff":
        return PLT if cls in (DATA, FUNC, PREEMPT) else DIRECT
    a = _TABLE[kind][cls][out]
    if kind == "pc" and rtype == elf.R_X86_64_PLT32 and cls in (DATA, FUNC, PREEMPT):
        return PLT                   # a call: through the PLT whatever the symbol is
    if kind == "abs64" and not writable:
        if a == DYNREL and (out != EXEC or cls == PREEMPT) or a == BASEREL:
            return ERR_TEXT
        if out == EXEC and cls == DATA:
            return COPYREL           # a read-only pointer to a library's data: bound to a copy
    elif kind == "abs64" and out == EXEC and cls in (DATA, FUNC):
        return DYNREL                # a writable pointer: the loader fills it
    return a


# --- TLS relaxation (Drepper, "ELF Handling For Thread-Local Storage", x86-64) ---------------
# An executable's own TLS lives at a fixed offset from the thread pointer, so the
# general- and local-dynamic sequences (which call __tls_get_addr) become
# local-exec, and general-dynamic for a shared library's variable becomes
# initial-exec. Both sequences are 16 bytes long; the call's relocation is skipped.

# data16 lea x@tlsgd(%rip),%rdi  (the relocation is at the disp32, 4 bytes in)
GD_LEA = b"\x66\x48\x8d\x3d"
# mov %fs:0,%rax ; lea x@tpoff(%rax),%rax
LE_FROM_GD = b"\x64\x48\x8b\x04\x25\x00\x00\x00\x00\x48\x8d\x80"
# mov %fs:0,%rax ; add x@gottpoff(%rip),%rax
IE_FROM_GD = b"\x64\x48\x8b\x04\x25\x00\x00\x00\x00\x48\x03\x05"
# lea x@tlsld(%rip),%rdi (the relocation is at the disp32, 3 bytes in)
LD_LEA = b"\x48\x8d\x3d"
# data16 data16 data16 mov %fs:0,%rax
LE_FROM_LD = b"\x66\x66\x66\x64\x48\x8b\x04\x25\x00\x00\x00\x00"


def gd_call_form(buf, loc):
    """The call after `data16 lea x@tlsgd`: 'plt' (data16 data16 rex64 call rel32) or 'got' (call *GOTPCREL)."""
    if buf[loc - 4:loc] != GD_LEA:
        return None
    tail = bytes(buf[loc + 4:loc + 8])
    if tail == b"\x66\x66\x48\xe8":
        return "plt"
    if tail == b"\x66\x48\xff\x15":
        return "got"
    return None


def ld_call_form(buf, loc):
    """The call after `lea x@tlsld`: 'plt' (call rel32, 12 bytes in all) or 'got' (call *GOTPCREL, 13)."""
    if buf[loc - 3:loc] != LD_LEA:
        return None
    b = buf[loc + 4]
    if b == 0xE8:
        return "plt"
    if b == 0xFF and buf[loc + 5] == 0x15:
        return "got"
    return None


def relax_gd_to_le(buf, loc, tpoff):
    buf[loc - 4:loc + 8] = LE_FROM_GD
    elf.I32.pack_into(buf, loc + 8, tpoff)


def relax_gd_to_ie(buf, loc, P, gottp_slot):
    buf[loc - 4:loc + 8] = IE_FROM_GD
    # the add's disp32 sits at P + 8 and the next instruction at P + 12
    elf.I32.pack_into(buf, loc + 8, gottp_slot - (P + 12))


def relax_ld_to_le(buf, loc, form):
    if form == "plt":
        buf[loc - 3:loc + 9] = LE_FROM_LD
    else:
        buf[loc - 3:loc + 10] = LE_FROM_LD + b"\x90"


def relax_tlsdesc(buf, loc, reg_value, ie):
    """lea x@tlsdesc(%rip),%reg -> mov $x@tpoff,%reg (local-exec) or mov x@gottpoff(%rip),%reg (IE).

    reg_value: the TP offset (LE) or the GOT slot's PC-relative displacement (IE). False when the
    bytes are not the sequence the psABI prescribes (the caller reports it)."""
    rex, op, modrm = buf[loc - 3], buf[loc - 2], buf[loc - 1]
    if rex not in (0x48, 0x4C) or op != 0x8D or modrm & 0xC7 != 0x05:
        return False
    if ie:
        buf[loc - 2] = 0x8B
    else:
        reg = (modrm >> 3) & 7
        buf[loc - 3:loc] = bytes([0x48 | ((rex >> 2) & 1), 0xC7, 0xC0 | reg])
    elf.I32.pack_into(buf, loc, reg_value)
    return True


def relax_tlsdesc_call(buf, loc):
    """call *x@tlscall(%rax) -> xchg %ax,%ax (a two-byte nop): %rax already holds the TP offset."""
    if bytes(buf[loc:loc + 2]) != b"\xff\x10":
        return False
    buf[loc:loc + 2] = b"\x66\x90"
    return True


def relax_gotpcrelx(buf, loc, pcrel):
    """GOT-indirect access to a symbol bound at link time -> direct access (psABI B.2).

    mov foo@GOTPCREL(%rip),%reg -> lea foo(%rip),%reg
    call *foo@GOTPCREL(%rip)    -> addr32 call foo
    jmp *foo@GOTPCREL(%rip)     -> jmp foo; nop
    Returns False (keep the GOT slot) for any other instruction. Static PIE
    startup code depends on this: it runs before its GOT is relocated.
    """
    if not -2**31 <= pcrel < 2**31:
        return False
    op = buf[loc - 2]
    if op == 0x8B:
        buf[loc - 2] = 0x8D
        elf.I32.pack_into(buf, loc, pcrel)
        return True
    if op == 0xFF:
        modrm = buf[loc - 1]
        if modrm == 0x15:
            buf[loc - 2:loc] = b"\x67\xe8"
            elf.I32.pack_into(buf, loc, pcrel)
            return True
        if modrm == 0x25:
            buf[loc - 2] = 0xE9
            elf.I32.pack_into(buf, loc - 1, pcrel + 1)
            buf[loc + 3] = 0x90
            return True
    return False


# --- PLT entries -------------------------------------------------------------------------------
PLT_ENTRY_SIZE = 16


def plt0(got_plt, plt_addr):
    """pushq GOT+8(%rip); jmp *GOT+16(%rip); nopl 0(%rax)"""
    import struct
    return (b"\xff\x35" + struct.pack("<i", got_plt + 8 - (plt_addr + 6)) +
            b"\xff\x25" + struct.pack("<i", got_plt + 16 - (plt_addr + 12)) + b"\x0f\x1f\x40\x00")


def plt_entry(slot, entry_addr, index, plt_addr, lazy):
    """jmp *slot(%rip); pushq index; jmp PLT0 (the last two only run on lazy binding)."""
    import struct
    jmp = b"\xff\x25" + struct.pack("<i", slot - (entry_addr + 6))
    if not lazy:
        return jmp + b"\xcc" * 10
    return jmp + b"\x68" + struct.pack("<I", index) + b"\xe9" + struct.pack("<i", plt_addr - (entry_addr + 16))
