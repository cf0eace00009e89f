"""The linker's table of contents: link(options) runs the passes in order.

Input: Options. Output: the executable at options.output, and Timings (wall
time per pass). Each pass is a module of its own and hands a frozen result
to the next; user-facing errors are collected in Diagnostics and reported
together at the checkpoints.
"""
import time

from linkwrap.ld import elf
from linkwrap.ld.diag import Diagnostics


class Timings:
    def __init__(self):
        self.phases = []

    def phase(self, label):
        return _Phase(self, label)


class _Phase:
    def __init__(self, t, label):
        self.t, self.label = t, label

    def __enter__(self):
        self.start = time.perf_counter()

    def __exit__(self, *exc):
        self.t.phases.append((self.label, (time.perf_counter() - self.start) * 1000.0))


def link(opts, diag=None) -> Timings:
    from linkwrap.ld import gc, layout, parse, relocate, resolve, scan, synthetic, write
    diag = diag or Diagnostics()
    t = Timings()
    with t.phase("Parse inputs"):
        # objects, archive indexes, shared libraries; glibc's linker scripts expanded in place
        inputs = parse.read_inputs(opts, diag)
    with t.phase("Resolve symbols"):
        # pull archive members, pick each symbol's definition, drop duplicate COMDAT groups
        res = resolve.resolve(opts, inputs, diag)
    diag.checkpoint()  # duplicate definitions
    # Beyond this point, no input file is added.
    mode = _mode(opts, res)
    with t.phase("Garbage-collect sections"):
        # mark live sections (all of them without --gc-sections); drop FDEs of dead functions
        live = gc.mark_live(opts, res, diag)
    # Linker-defined symbols (__init_array_start, _end, __start_SEC...) count as defined from here.
    layout.reserve_linker_symbols(opts, mode, res)
    with t.phase("Scan relocations"):
        # decide GOT slots, PLT entries, copy relocations and dynamic symbols; find undefined symbols
        needs = scan.scan(opts, mode, res, live, diag)
    diag.checkpoint()  # every undefined symbol and unsupported relocation, all at once
    with t.phase("Create synthetic sections"):
        # .got .plt .dynamic .dynsym .gnu.hash .gnu.version_r .rela.* .eh_frame_hdr .bss commons
        synth = synthetic.create(opts, mode, res, live, needs)
    with t.phase("Compute layout"):
        # bin sections into output sections and segments; assign addresses and file offsets
        lk = layout.compute(opts, mode, res, live, synth)
    # At this point, memory layout is fixed: every symbol address and file offset is known.
    with t.phase("Finalize synthetic sections"):
        for syn in synth.all:
            syn.finalize(lk)
    with t.phase("Apply relocations"):
        # copy every section into the image and patch it; R_X86_64_64 in a PIE -> .rela.dyn
        image = relocate.apply_all(lk, live, diag)
    diag.checkpoint()  # relocation overflows, with their locations
    with t.phase("Write output"):
        # linker-made sections, headers, build-id; temporary file renamed over the output
        write.write_output(opts, mode, lk, image, synth)
    return t


def _mode(opts, res):
    from linkwrap.ld.scan import Mode
    dynamic = bool(opts.pie or res.dsos)
    interp = bool(res.dsos) and not opts.no_dynamic_linker
    return Mode(pic=opts.pie, dynamic=dynamic, interp=interp, base=0 if opts.pie else 0x400000)
