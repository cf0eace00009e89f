"""CLASSIFY: what each relocation asks of the linker -- the one answer scan, synthetic and relocate read.

Owns the facts the relocation passes share, so that each pass imports them from here, downward,
and no pass imports another (parse -> resolve -> gc -> scan -> layout -> relocate -> write):
  - preemptible(): whether the dynamic loader, not this link, picks a symbol's definition;
  - the output kinds, symbol classes and actions, and RULES: one rule per recipe kind
    (x86_64.RECIPES names each type's kind, width and formula), so that action() answers what a
    relocation needs -- a GOT slot, a PLT entry, a copy, a dynamic relocation, a TLS rewrite, an
    error -- the same way for scan (which sizes the tables) and relocate (which fills them);
  - the TLS sequences whose __tls_get_addr call goes with them, CLASSES' order for the numpy paths;
  - TOMBSTONE_ONE: what a debug reference into a dropped section becomes;
  - choice() and worth_it(): whether a link's relocations pay for numpy (gc, scan and both
    relocate paths ask it of the same count, so they take the same path).
Input: nothing (a Mode, a Symbol and sections' relocation counts when asked).
"""
import os

from linkwrap.ld import elf

# After mold's per-output-kind action tables and lld's RelExpr: the recipe's kind, the class of
# the symbol and the kind of output decide one action. Scan turns actions into needs (GOT slots,
# PLT entries, copies, dynamic symbols, errors), relocate applies them, and the GOT slots'
# contents ask the same question ("gotslot", "tpslot").

# output kinds
STATIC, PIE, EXEC, SHARED = 0, 1, 2, 3   # static non-PIE / PIE (also static-pie) / non-PIE dynamic / -shared


def output_kind(mode):
    if mode.shared:
        return SHARED
    if mode.pic:
        return PIE
    return EXEC if mode.interp else STATIC


def preemptible(s, mode, copied=frozenset()):
    """Whether the loader picks s's definition: s is defined by a shared library, or is an undefined
    weak in a dynamically linked output, or (-shared) it is undefined or an exported
    default-visibility definition another module may interpose.

    copied: the symbols synthetic placed in .bss by copy relocations (bound here after all)."""
    if s.dso is not None:
        return s not in copied
    if mode.shared:
        return not s.is_local and ((not s.defined and s.visibility == elf.STV_DEFAULT and
                                    (s.strong_ref or mode.undef_weak_dynamic)) or s in mode.interposable)
    # -z nodynamic-undefined-weak: an undefined weak is 0 here (a strong one is an error before this)
    return (mode.interp and not s.is_local and not s.defined and s.visibility == elf.STV_DEFAULT
            and (s.strong_ref or mode.undef_weak_dynamic))


# symbol classes
LOCAL = "local"      # bound here; its address moves with the load address when the output is PIC
ABS = "abs"          # bound here to a fixed value: SHN_ABS, or an undefined weak that stays 0
DATA = "data"        # preemptible: a shared library's data object (an executable may copy it)
FUNC = "func"        # preemptible: any other shared-library symbol
PREEMPT = "pre"      # preemptible, from no library: an undefined symbol of a dynamic output, or
                     # a shared object's own exported definition that another module may interpose
# the classes as small integers (the numpy paths' tables): the preemptible ones from index 2 on
CLASSES = (LOCAL, ABS, DATA, FUNC, PREEMPT)
_PREEMPTIBLE = (DATA, FUNC, PREEMPT)


def sym_class(s, pre):
    """pre: the symbol is preemptible (preemptible() above)."""
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
ACTIONS = frozenset((NONE, DIRECT, BASEREL, DYNREL, COPYREL, PLT, CANONICAL_PLT, GOT, GOTTP, GD_TO_LE, GD_TO_IE,
                     LD_TO_LE, TLSGD, TLSLD, TLSDESC, TLS_TPOFF, DESC_TO_LE, DESC_TO_IE, DESC_CALL_NOP, ERR_PIC,
                     ERR_TEXT, ERR_PREEMPT))
# the general- and local-dynamic rewrites take the __tls_get_addr call that follows with them:
# scan and relocate skip that call's relocation
CALL_DROPPED = frozenset((GD_TO_LE, GD_TO_IE, LD_TO_LE))
# the types that start such a sequence (or a descriptor's): a section holding one goes to the
# one-by-one loops, which skip the call in order
TLS_SEQUENCES = (elf.R_X86_64_TLSGD, elf.R_X86_64_TLSLD, elf.R_X86_64_GOTPC32_TLSDESC, elf.R_X86_64_TLSDESC_CALL)
# recipe kinds whose value is relative to _GLOBAL_OFFSET_TABLE_: the GOT's base must exist
GOT_BASE_KINDS = frozenset(("got64", "pltoff", "gotbase"))

# One rule per recipe kind (the kinds of x86_64.RECIPES, and the GOT slots' own "gotslot" and
# "tpslot"): an action whatever the symbol and output, a row per output kind (STATIC, PIE, EXEC,
# SHARED), or symbol class -> such a row. None: a class this output kind never has (a static link
# has no shared library). action() refines three of them by relocation type and section.


def _by_class(bound, pre):
    """A rule whose row is `bound` for a symbol bound here, `pre` for a preemptible one."""
    return {c: (pre if c in _PREEMPTIBLE else bound) for c in CLASSES}


RULES = {
    "none": NONE,
    "size": DIRECT,
    "gotbase": DIRECT,         # GOTOFF64 refined in action()
    "got": GOT,
    "got64": GOT,
    "gottp": GOTTP,
    "tlsld": (LD_TO_LE, LD_TO_LE, LD_TO_LE, TLSLD),
    "dtpoff": (TLS_TPOFF, TLS_TPOFF, TLS_TPOFF, DIRECT),
    "tlsdesc_call": (DESC_CALL_NOP, DESC_CALL_NOP, DESC_CALL_NOP, NONE),    # a shared object's call stays
    "pltoff": _by_class((DIRECT,) * 4, (PLT,) * 4),
    "pc": {                    # PLT32 refined in action()
        LOCAL: (DIRECT,) * 4, ABS: (DIRECT,) * 4,
        DATA: (None, COPYREL, COPYREL, ERR_PIC),
        FUNC: (None, PLT, CANONICAL_PLT, ERR_PIC),
        PREEMPT: (DIRECT, DIRECT, DIRECT, ERR_PIC),
    },
    "abs64": {                 # refined by the section's writability in action()
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
    "tpoff": _by_class((DIRECT, DIRECT, DIRECT, ERR_PIC), (ERR_PREEMPT,) * 4),
    "tlsgd": _by_class((GD_TO_LE, GD_TO_LE, GD_TO_LE, TLSGD), (GD_TO_IE, GD_TO_IE, GD_TO_IE, TLSGD)),
    "tlsdesc": _by_class((DESC_TO_LE, DESC_TO_LE, DESC_TO_LE, TLSDESC), (DESC_TO_IE, DESC_TO_IE, DESC_TO_IE, TLSDESC)),
    # the contents of a GOT slot holding an address / a thread-pointer offset
    "gotslot": {LOCAL: (DIRECT, BASEREL, DIRECT, BASEREL), ABS: (DIRECT,) * 4,
                DATA: (DYNREL,) * 4, FUNC: (DYNREL,) * 4, PREEMPT: (DYNREL,) * 4},
    "tpslot": _by_class((DIRECT, DIRECT, DIRECT, DYNREL), (DYNREL,) * 4),
}


# Sections layout places in the writable segment by their name whatever their own flags say (its
# _RANKS, as GNU ld's script does by name, the output section then writable as its other inputs
# are): an "a"-only .init_array or .data there is written by the loader like the rest, so its
# pointers need no text relocation. Any other read-only section stays read-only.
_WRITABLE_BY_NAME = (".init_array", ".fini_array", ".preinit_array", ".data.rel.ro", ".data")
_WRITABLE_SECOND = frozenset(w[1] for w in _WRITABLE_BY_NAME)    # a name none of them starts with fails at once


def writable(sec) -> int:
    """1 when the loader may write sec's place in the output (its relocations need no text
    relocation), else 0: scan and both relocate paths ask this one question."""
    f = sec.flags
    if f & elf.SHF_WRITE:
        return 1
    if f & elf.SHF_TLS or not f & elf.SHF_ALLOC:
        return 0
    n = sec.name
    if n[1:2] not in _WRITABLE_SECOND:
        return 0        # .text.*, .rodata.*, .gcc_except_table.*: most of a big link's ~50k sections
    for w in _WRITABLE_BY_NAME:
        if n.startswith(w) and (len(n) == len(w) or n[len(w)] == "."):
            return 1
    return 0


def action(kind, rtype, cls, out, writable=True):
    """The action for a relocation of recipe kind `kind` (type rtype) in an allocated section
    against a symbol of class cls, in an output of kind out. Not for non-alloc sections
    (.debug_*), whose relocations are always DIRECT."""
    rule = RULES[kind]
    if rule.__class__ is str:
        if kind == "gotbase" and rtype == elf.R_X86_64_GOTOFF64 and cls in _PREEMPTIBLE:
            return ERR_PREEMPT       # S - GOT needs S at link time
        return rule
    if rule.__class__ is tuple:
        if kind == "dtpoff" and (rtype == elf.R_X86_64_DTPOFF64 or writable):
            # x@dtpoff becomes a TP offset only in code, where the local-dynamic sequence it follows
            # became local-exec; in data it stays the offset in the block (GNU ld: DTPOFF64 always,
            # DTPOFF32 outside SEC_CODE; a read-only data section's DTPOFF32 is taken for code here)
            return DIRECT
        return rule[out]
    a = rule[cls][out]
    if kind == "pc" and rtype == elf.R_X86_64_PLT32 and cls in _PREEMPTIBLE:
        return PLT                   # a call: through the PLT whatever the symbol is
    if kind == "abs64" and not writable:
        if cls == PREEMPT and out != SHARED:
            # in an executable, PREEMPT is an undefined weak (a strong one is an error before this):
            # GNU ld resolves a non-GOT reference to it to 0 at link time, -z text or not
            return DIRECT
        if a == DYNREL and (out != EXEC or cls == PREEMPT) or a == BASEREL:
            return ERR_TEXT
        if out == EXEC and cls == DATA:
            return COPYREL           # a read-only pointer to a library's data: bound to a copy
    elif kind == "abs64" and out == EXEC and cls in (DATA, FUNC):
        return DYNREL                # a writable pointer: the loader fills it
    return a


# DWARF 4 range lists end at a (0, 0) entry, and one unit's list covers many functions: a reference
# into a section gc dropped is written as 1 there (an empty entry, the rest of the list stays
# readable), 0 elsewhere -- GNU ld's rule (lld writes 1 in .debug_loc too, whose lists are a
# variable's, all in the one dropped function: GNU ld's 0 loses nothing there)
TOMBSTONE_ONE = frozenset((".debug_ranges",))

# --- Which path pays: relocations as numpy arrays or one by one ------------------------------
# below this many relocations in a link, numpy's import (~75 ms) costs more than it saves:
# the bulk path saves ~0.75 µs a relocation (bench_ld.py --rust --relocs-ab: 349k relocations,
# loop 405 ms, bulk 143 ms), so it pays from ~100k on
MIN_RELOCS = 100_000


def choice():
    """'python', 'bulk' or 'auto' (bulk when the link has enough relocations): LINKWRAP_LD_RELOCS,
    which tests and benchmarks set to compare the two paths."""
    v = os.environ.get("LINKWRAP_LD_RELOCS", "auto")
    return v if v in ("python", "bulk") else "auto"


def worth_it(pending) -> bool:
    """pending: [(section, image offset, address)] -> whether the bulk path pays for numpy."""
    mode = choice()
    if mode != "auto":
        return mode == "bulk"
    n = 0
    for m, _, _ in pending:
        n += m.rela[1] // 24
    if n < MIN_RELOCS:
        return False
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True
