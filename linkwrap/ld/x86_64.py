"""x86-64 relocation recipes: one table row per relocation type, and the machine code the linker writes.

Input: nothing. Output: RECIPES, a dict from relocation type to Recipe (after pyelftools'
relocation recipe table), the TLS and GOTPCRELX relaxation rewrites and the PLT entries. A
recipe says how wide the field is, how to check the result (signed, unsigned or not at all),
which `kind` it belongs to (classify.RULES says what each kind needs from the linker: a GOT
slot, a PLT entry, a dynamic relocation ...) and the formula, named by the psABI letters:

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
    kind: str          # what it needs: its rule in classify.RULES
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
