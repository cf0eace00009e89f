"""linkwrap.ld's output-side steps on the Rust debug link, this tree's against another tree's, in one process.

The link is read, resolved, collected and scanned once by this tree; then each step runs with this
tree's module and with the other tree's (loaded from its file, on this tree's records), interleaved,
N times: string merging (merge.strings on .debug_str), .symtab's creation and finalize, layout,
.eh_frame's split and rewrite, .eh_frame_hdr's table. Prints medians, the ratio this/baseline with a
95 % bootstrap CI, and whether both give the same result. In one warm process the machine's load
moves both sides alike, which process-level figures (bench_ld_passes.py) cannot promise on a busy
machine; what one process cannot show (a first touch of memory, an import moved) is theirs.
The other tree's modules must take this tree's records (true of a tree before a speed change).

    python benchmarks/bench_ld_output.py --baseline /path/to/other/checkout [--runs 11]
                                         [--modules 16 --rust-funcs 34]
"""
import argparse
import atexit
import importlib.util
import os
import shutil
import random
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_ld  # noqa: E402


def load_module(tree, rel, name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(tree, rel))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def timed(fn):
    t = time.perf_counter()
    result = fn()
    return result, (time.perf_counter() - t) * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, metavar="TREE", help="another checkout of linkwrap")
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--modules", type=int, default=16)
    ap.add_argument("--rust-funcs", type=int, default=34)
    a = ap.parse_args()
    base = os.path.abspath(a.baseline)
    if not os.path.isdir(os.path.join(base, "linkwrap", "ld")):
        raise SystemExit(f"bench_ld_output: {a.baseline} holds no linkwrap/ld")
    root = tempfile.mkdtemp(prefix="bench-ld-output-")
    atexit.register(shutil.rmtree, root, True)  # its inputs and outputs (up to ~1 GB) go with it
    argv, _, env, cwd, mb = bench_ld.rust_debug_link(root, a.modules, a.rust_funcs)
    ld_argv = bench_ld.record_rust_ld_args(root, argv, env, cwd)
    ld_argv[ld_argv.index("-o") + 1] = os.path.join(root, "out")
    os.chdir(cwd)
    sys.path.insert(0, os.path.dirname(HERE))
    import gc as collector

    from linkwrap.ld import eh_frame, elf, gc, layout, merge, options, parse, relocate, resolve, scan, synthetic
    from linkwrap.ld.diag import Diagnostics
    from linkwrap.ld.driver import _mode
    from linkwrap.ld.synthetic import symbols
    collector.disable()             # as driver.link runs the passes
    opts = options.parse_args(ld_argv)
    diag = Diagnostics()
    res = resolve.resolve(opts, parse.read_inputs(opts, diag), diag)
    mode = _mode(opts, res)
    live = gc.mark_live(opts, res, diag)
    needs = scan.scan(opts, mode, res, live, diag)
    synth = synthetic.create(opts, mode, res, live, needs)
    lk = layout.compute(opts, mode, res, live, synth)
    for syn in synth.all:
        syn.finalize(lk)
    image = relocate.apply_all(res, lk, live, diag)
    old = {m: load_module(base, f"linkwrap/ld/{m}.py", f"baseline_{m}") for m in ("merge", "layout", "eh_frame")}
    old["symbols"] = load_module(base, "linkwrap/ld/synthetic/symbols.py", "baseline_symbols")

    strs = [s for s in live.sections if s.name == ".debug_str" and s.flags & elf.SHF_MERGE]
    frames = [(s, res.syms[s.file]) for obj in res.objects for s in obj.sections
              if s is not None and s.name == ".eh_frame" and s not in res.discarded]
    eh = lk.osec(".eh_frame")

    def symtab(mod):
        st = mod.SymTab(res, live, synth.copied)
        return st.symbols, st.names, bytes(st.strtab.data)

    tables = {"baseline": old["symbols"].SymTab(res, live, synth.copied),
              "this": symbols.SymTab(res, live, synth.copied)}

    def finalize(which):
        tables[which].finalize(lk)
        return tables[which].values

    def layout_of(mod):
        k = mod.compute(opts, mode, res, live, synth)
        return k.addr_of, [(o.name, o.addr, o.offset, o.size, o.flags, o.type, o.align, o.entsize) for o in k.osecs]

    def frames_of(mod):
        refs = {}
        splits = [mod._split_eh_frame(s, syms, refs) for s, syms in frames]
        out = [mod._drop_dead_fdes(s, sp, live.alive) for (s, _), sp in zip(frames, splits)]
        return refs, [(e.data, list(e.relocs), n) for e, n in out], [sp.cies_relocs for sp in splits]

    hdrs = {}
    for mod in (eh_frame, old["eh_frame"]):
        hdrs[mod] = h = mod.EhFrameHdr(synth.eh_frame_hdr.fde_count)
        lk.addr_of[h], lk.osec_of[h] = lk.addr_of[synth.eh_frame_hdr], lk.osec_of[synth.eh_frame_hdr]

    def eh_frame_hdr(mod):
        h = hdrs[mod]
        h.write_to(image, lk)
        off = lk.offset_of(h)
        return bytes(image[off:off + h.size()])

    mine = {"merge": merge, "layout": layout, "eh_frame": eh_frame, "symbols": symbols}
    steps = [
        (".debug_str merge", lambda m: m["merge"].strings(strs)),
        (".symtab create", lambda m: symtab(m["symbols"])),
        (".symtab finalize", lambda m: finalize("this" if m is mine else "baseline")),
        ("layout", lambda m: layout_of(m["layout"])),
        (".eh_frame split + rewrite", lambda m: frames_of(m["eh_frame"])),
        (".eh_frame_hdr", lambda m: eh_frame_hdr(m["eh_frame"])),
    ]
    rng = random.Random(1)
    loads = [float(bench_ld.load()[0])]
    print(f"Rust debug link ({a.modules}x{a.rust_funcs}, {mb:.0f} MB of inputs): output-side steps, "
          f"{a.runs} interleaved runs each in one process, medians")
    print(f"  {'step':28} {'baseline':>9} {'this':>9} {'ratio':>6}  95% CI        same result")
    for label, step in steps:
        t_base, t_this = [], []
        same = None
        for _ in range(a.runs):
            r_base, ms = timed(lambda: step(old))
            t_base.append(ms)
            r_this, ms = timed(lambda: step(mine))
            t_this.append(ms)
            if same is None:
                same = r_base == r_this
            loads.append(float(bench_ld.load()[0]))
        r, lo, hi = bench_ld.ratio_ci(t_this, t_base, rng)
        print(f"  {label:28} {statistics.median(t_base):9.1f} {statistics.median(t_this):9.1f} {r:6.2f}  "
              f"[{lo:.2f}, {hi:.2f}]  {same}")
    print(f"  (1-min load {min(loads)}-{max(loads)})")


if __name__ == "__main__":
    main()
