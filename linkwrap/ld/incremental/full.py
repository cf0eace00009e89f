"""The full incremental link: ld/driver's passes, each input's chunks given slack, and the state.

The chunk policy (what makes a relink possible): in every loaded output section, the sections one
input contributes are contiguous already (layout places members in input order); after the last
of them comes a Slack member, so the chunk's capacity is
    align_up(used + max(MIN_SLACK, used * SLACK_SHARE), 16)
bytes (used: the input's bytes there with their alignment gaps). A changed input whose sections
still fit is written into its chunks and nothing after them moves. Slack in code is int3 (0xCC),
elsewhere zeros. No slack where the bytes are walked as one list by the loader or an unwinder:
.init/.fini (crti's prologue and crtn's epilogue are one function), the init/fini arrays,
.ctors/.dtors, notes, and sections named like C identifiers (arrays walked from __start_SEC to
__stop_SEC); nor in non-loaded sections (.debug_*): their units are walked one after another, so
a changed size there is a full link (a reason). .eh_frame's slack is one filler record, a CIE no
FDE names (a zero word would end an unwinder's walk of registered frames): an input that gains a
function gains an FDE. And .eh_frame_hdr's table gets spare rows (HDR_SPARE; the header's count
says how many are used, the rest are zeros past it) for the FDEs a relink adds.
The share was chosen by what it costs against what it saves: see benchmarks/bench_incremental.py
(a quarter grows a 1 KiB function's chunk by 256 bytes; an edit rarely grows code by more).

`pinned` (the state of an earlier link) gives every chunk the capacity it had: that is the
from-scratch link into the same layout that `--incremental-check` compares a relink against.
"""
from dataclasses import replace

from linkwrap.ld import elf
from linkwrap.ld.incremental import state as st

MIN_SLACK = 64
SLACK_SHARE = 4            # used // 4
NO_SLACK = (".init", ".fini", ".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors",
            ".jcr", ".tm_clone_table")
# the smallest filler record: length, CIE id 0, version 1, augmentation "", code and data
# alignment factors, return address column (13 bytes), in .eh_frame's 4-byte steps
MIN_FILLER = 16
# caps' key of .eh_frame_hdr's table capacity (rows), beside the chunks' (input key, output name)
HDR_KEY = ("", ".eh_frame_hdr")


def hdr_capacity(fde_count) -> int:
    """Rows of .eh_frame_hdr's table: the FDEs and a sixteenth more (at least 64), 8 bytes each."""
    return fde_count + max(64, fde_count // 16)


def filler(n) -> bytes:
    """n bytes of .eh_frame that are one CIE no FDE points at (n % 4 == 0, n >= MIN_FILLER):
    walkers step over it by its length, DW_CFA_nop (0) pads it."""
    return (n - 4).to_bytes(4, "little") + bytes(4) + b"\x01\x00\x01\x78\x10" + bytes(n - 13)


def fill(osec_name, flags, n) -> bytes:
    """A chunk's n bytes of slack: a filler record in .eh_frame, int3 in code, zeros elsewhere."""
    if osec_name == ".eh_frame":
        return filler(n)
    return (b"\xcc" if flags & elf.SHF_EXECINSTR else b"\0") * n


class Slack:
    """A member of an output section that holds a chunk's room to grow (layout places it like an
    input section; relocate copies its bytes(); it has no relocations)."""
    __slots__ = ("file", "index", "name", "type", "flags", "size", "align", "entsize", "offset",
                 "info", "link", "rela", "relocs", "group_sig")
    # .eh_frame_hdr's writer reads a member's kept FDEs (none here) instead of walking the records
    fdes = ()
    data = b""

    def __init__(self, after, size):
        self.file = after.file
        self.index = -1
        self.name = after.name
        self.type = after.type
        self.flags = after.flags
        self.size = size
        self.align = 1
        self.entsize = after.entsize
        self.offset = 0
        self.info = self.link = 0
        self.rela = None
        self.relocs = ()
        self.group_sig = None

    def bytes(self):
        return b"" if self.type == elf.SHT_NOBITS else fill(self.name, self.flags, self.size)

    def __repr__(self):
        return f"Slack({self.file.name}:{self.name}+{self.size})"


def gets_slack(osec_name, sec) -> bool:
    # a section named like a C identifier is an array walked from __start_ to __stop_ (glibc's
    # __libc_atexit, __libc_subfreeres ...): a zero pointer in it would be called
    return bool(sec.flags & elf.SHF_ALLOC) and osec_name not in NO_SLACK and sec.type != elf.SHT_NOTE \
        and not osec_name.startswith(".note") and not osec_name.replace("_", "a").isalnum()


def capacity(used) -> int:
    return elf.align_up(used + max(MIN_SLACK, used // SLACK_SHARE), 16)


def in_output(opts, sec) -> bool:
    """Whether a live section is placed as a member (not merged, not stripped): with_slack's rule."""
    if opts.strip_debug or opts.strip_all:
        if not sec.flags & elf.SHF_ALLOC:
            if opts.strip_debug and sec.name.startswith((".debug", ".zdebug")):
                return False
            if opts.strip_all and sec.name != ".comment":
                return False
    return True


def with_slack(opts, live, merged_of, pinned=None):
    """-> (the sections layout places, Slack members inserted; chunks: {(ObjectFile, output name):
    (offset in the output section, capacity, [members])}). Offsets are computed as layout computes
    them (members of one output name in this order, each at its alignment)."""
    from linkwrap.ld.layout import output_name
    strip = opts.strip_debug or opts.strip_all
    placed = []
    for sec in live.sections:
        if sec in merged_of:
            continue
        if strip and not sec.flags & elf.SHF_ALLOC:
            if opts.strip_debug and sec.name.startswith((".debug", ".zdebug")):
                continue
            if opts.strip_all and sec.name != ".comment":
                continue
        placed.append((output_name(sec), sec))
    last = {}
    for k, (name, sec) in enumerate(placed):
        last[(sec.file, name)] = k
    ends = {k: key for key, k in last.items()}
    off = {}
    chunks = {}
    out = []
    for k, (name, sec) in enumerate(placed):
        o = off.get(name, 0)
        a = sec.align
        if a > 1:
            o = (o + a - 1) & ~(a - 1)
        key = (sec.file, name)
        c = chunks.get(key)
        if c is None:
            c = chunks[key] = [o, 0, []]
        c[2].append(sec)
        o += sec.size
        out.append(sec)
        if k in ends:
            used = o - c[0]
            if pinned is not None:
                cap = pinned.get((st.input_key(sec.file.name), name), used)
                if cap < used:
                    from linkwrap.ld.diag import LinkFailed
                    raise LinkFailed(f"{sec.file.name}: its {name} ({used} bytes) does not fit the "
                                     f"{cap} bytes the layout gives it")
            else:
                cap = capacity(used) if gets_slack(name, sec) else used
            c[1] = cap
            if cap > used:
                out.append(Slack(sec, cap - used))
            o = c[0] + cap
        off[name] = o
    return tuple(out), {key: tuple(c) for key, c in chunks.items()}


def link(opts, pinned=None, diag=None):
    """The full incremental link; -> (Timings, state dict). pinned: chunk capacities to keep."""
    import gc as collector
    paused = collector.isenabled()
    collector.disable()
    try:
        return _link(opts, pinned, diag)
    finally:
        if paused:
            collector.enable()


def _link(opts, pinned, diag):
    from linkwrap.ld import driver, gc, layout, parse, relocate, resolve, scan, synthetic, write
    from linkwrap.ld.diag import Diagnostics
    diag = diag or Diagnostics()
    t = driver.Timings()
    with t.phase("Parse inputs"):
        inputs = parse.read_inputs(opts, diag)
    with t.phase("Resolve symbols"):
        res = resolve.resolve(opts, inputs, diag)
    diag.checkpoint()
    mode = driver._mode(opts, res)
    with t.phase("Garbage-collect sections"):
        live = gc.mark_live(opts, res, diag, ())
    with t.phase("Scan relocations"):
        needs = scan.scan(opts, mode, res, live, diag)
    diag.checkpoint()
    with t.phase("Create synthetic sections"):
        synth = synthetic.create(opts, mode, res, live, needs, None)
    with t.phase("Place chunks with slack"):
        sections, chunks = with_slack(opts, live, synth.merged_of, pinned)
        hdr = synth.eh_frame_hdr
        if hdr is not None:
            cap = hdr_capacity(hdr.fde_count) if pinned is None else pinned.get(HDR_KEY, hdr.fde_count)
            if cap < hdr.fde_count:
                from linkwrap.ld.diag import LinkFailed
                raise LinkFailed(f".eh_frame_hdr: {hdr.fde_count} FDEs do not fit the {cap} rows the layout gives it")
            hdr.fde_count = cap
    with t.phase("Compute layout"):
        lk = layout.compute(opts, mode, res, replace(live, sections=sections), synth)
    with t.phase("Finalize synthetic sections"):
        for syn in synth.all:
            syn.finalize(lk)
    out = write.Image(opts.output, lk.file_size)
    try:
        with t.phase("Apply relocations"):
            image = relocate.apply_all(res, lk, live, diag, None, out.buf)
        diag.checkpoint()
        with t.phase("Write output"):
            write.write_output(opts, mode, lk, image, synth, out)
    except BaseException:
        out.abandon()
        raise
    with t.phase("Build incremental state"):
        from linkwrap.ld.incremental import record
        state = record.build(opts, inputs, res, live, lk, synth, chunks)
        if hdr is not None:
            state["caps"][HDR_KEY] = hdr.fde_count
    return t, state
