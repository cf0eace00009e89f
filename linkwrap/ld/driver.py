"""The linker's table of contents: link(options) runs the passes in order.

Input: Options. Output: the executable at options.output, and Timings (wall
time per pass). Each pass is a module of its own and hands a frozen result
to the next; a later pass never changes an earlier pass's records (input
sections, Symbols, libraries): what it decides about them is in its own
result (Liveness.alive, Needs, the synthetic sections' index tables,
Layout.osec_of/addr_of/linker_values). The buffers a result owns are filled in
place (the synthetic sections' contents at finalize, .rela.dyn's lists, the
output image). User-facing errors are collected in Diagnostics and reported
together at the checkpoints.
"""
import time

from linkwrap.ld.diag import Diagnostics


class Timings:
    def __init__(self):
        self.phases = []
        self.stats = []     # --stats: lines of counts (linkwrap.ld.stats)

    def phase(self, label):
        return _Phase(self, label)


class _Phase:
    def __init__(self, t, label):
        self.t, self.label = t, label

    def __enter__(self):
        self.start = time.perf_counter()

    def __exit__(self, *exc):
        self.t.phases.append((self.label, (time.perf_counter() - self.start) * 1000.0))


def link(opts, diag=None, keep=None) -> Timings:
    """keep: a list the link's records (inputs, symbols, sections, layout, image) are appended to, so
    they outlive the call. A process that exits right after (ld/__main__, by os._exit) passes one:
    freed on return, the ~2 M objects of a Rust debug link went one by one (~0.2 s of its wall)."""
    # Python's cyclic collector paused for the link: the passes make millions of objects (symbols,
    # relocation tuples, .eh_frame records) and no garbage cycles worth collecting, and each full
    # collection walks all of them -- a Rust debug link spent about a third of its time there
    import gc as collector
    paused = collector.isenabled()
    collector.disable()
    try:
        return _link(opts, diag, keep)
    finally:
        if paused:
            collector.enable()


def _link(opts, diag, keep):
    from linkwrap.ld import gc, layout, parse, relocate, resolve, scan, synthetic, write
    diag = diag or Diagnostics()
    t = Timings()
    if opts.emit_relocs and not opts.relocatable:   # (-r keeps the relocations anyway)
        from linkwrap.ld.emit_relocs import check_options
        check_options(opts)
    with t.phase("Parse inputs"):
        # objects, archive indexes, shared libraries; glibc's linker scripts expanded in place
        inputs = parse.read_inputs(opts, diag)
    with t.phase("Resolve symbols"):
        # pull archive members, pick each symbol's definition, drop duplicate COMDAT groups,
        # decide DT_NEEDED (--as-needed); referenced linker-defined symbols (_end, __start_SEC...)
        # count as defined from here
        res = resolve.resolve(opts, inputs, diag)
    if keep is not None:
        keep.append(res)
    diag.checkpoint()  # duplicate definitions
    if opts.relocatable:
        from linkwrap.ld import relocatable
        with t.phase("Write relocatable output"):
            # sections concatenated by name, symbols and relocations renamed: nothing resolved
            write.save(opts.output, relocatable.link_partial(opts, res, diag), executable=False)
        return t
    # Beyond this point, no input file is added and no Symbol changes.
    exports = None
    if opts.version_script and not opts.shared:
        from linkwrap.ld.diag import Unsupported
        # GNU ld would version and export an executable's own symbols by it
        raise Unsupported("--version-script for an executable (only with -shared)")
    if opts.shared:
        from linkwrap.ld.version_script import decide_exports
        with t.phase("Decide exports"):
            # what .dynsym defines and under which version; which of those the loader may interpose
            exports = decide_exports(opts, res, diag)
        diag.checkpoint()  # --no-undefined-version
    mode = _mode(opts, res, exports)
    # the symbol and string tables parse copied into its records: their pages out of the RSS
    relocate.drop_inputs(res)
    with t.phase("Garbage-collect sections"):
        # the set of live sections (all but COMDAT losers without --gc-sections); .eh_frame
        # rewritten into new records without the FDEs of dead functions
        live = gc.mark_live(opts, res, diag, exports.version if exports else ())
    with t.phase("Scan relocations"):
        # decide GOT slots, PLT entries, copy relocations and dynamic symbols; find undefined symbols
        needs = scan.scan(opts, mode, res, live, diag)
    diag.checkpoint()  # every undefined symbol and unsupported relocation, all at once
    # the input pages gc and scan read (symbol and relocation tables, .eh_frame) leave the RSS before
    # the string merge's peak: what is read again faults in from the page cache (relocate.drop_inputs)
    relocate.drop_inputs(res)
    with t.phase("Create synthetic sections"):
        # .got .plt .dynamic .dynsym .gnu.hash .gnu.version_r .rela.* .eh_frame_hdr .bss commons
        synth = synthetic.create(opts, mode, res, live, needs, exports)
    with t.phase("Compute layout"):
        # bin sections into output sections and segments; assign addresses and file offsets
        # (Layout's own tables: osec_of, addr_of, linker_values)
        lk = layout.compute(opts, mode, res, live, synth)
    # At this point, memory layout is fixed: every symbol address and file offset is known.
    with t.phase("Finalize synthetic sections"):
        # address-dependent contents (GOT values, COPY/GLOB_DAT relocations) into their own buffers
        for syn in synth.all:
            syn.finalize(lk)
    # the image is the temporary output file, mapped: filled in place, renamed at the end
    out = write.Image(opts.output, lk.file_size)
    try:
        with t.phase("Apply relocations"):
            # copy every section into the image and patch it; R_X86_64_64 in a PIE -> .rela.dyn
            reloc_stats = {} if opts.stats else None
            image = relocate.apply_all(res, lk, live, diag, reloc_stats, out.buf)
        diag.checkpoint()  # relocation overflows, with their locations
        with t.phase("Write output"):
            # linker-made sections, headers, build-id; temporary file renamed over the output
            write.write_output(opts, mode, lk, image, synth, out)
    except BaseException:
        out.abandon()
        raise
    if opts.stats:
        from linkwrap.ld import stats
        t.stats = stats.lines(res, live, lk, synth, reloc_stats)
    if keep is not None:
        keep.append((live, needs, synth, lk, image))
    return t


def _mode(opts, res, exports=None):
    from linkwrap.ld.resolve import is_dynamic
    from linkwrap.ld.scan import Mode
    if opts.shared:
        return Mode(pic=True, dynamic=True, interp=False, base=0, shared=True, interposable=exports.interposable,
                    undef_weak_dynamic=opts.z_dynamic_undefined_weak)
    dynamic = is_dynamic(opts, res.dsos)
    interp = bool(res.dsos) and not opts.no_dynamic_linker
    return Mode(pic=opts.pie, dynamic=dynamic, interp=interp, base=0 if opts.pie else 0x400000,
                undef_weak_dynamic=opts.z_dynamic_undefined_weak)
