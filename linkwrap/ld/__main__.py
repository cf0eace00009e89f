"""`linkwrap-ld` and `linkwrap ld`: run the linker on an ld command line, exit with its status.

Errors are printed the way GNU ld prints them ("ld: ..." one per line) and
exit 1, never with a traceback; an internal failure says so on one line.
"""
import os
import sys


USAGE = """Usage: linkwrap-ld [options] file...
linkwrap's own ELF linker: x86-64 Linux (glibc) executables, static, static-pie, PIE
and non-PIE, shared objects and -r partial links, with GNU ld's command line (one- or
two-dash long options, @file, -z keywords):
-o, -r, -L, -l, -Bstatic/-Bdynamic, --as-needed, --whole-archive, groups, -pie/-no-pie/-static,
-e, -u, --defsym, -init/-fini, --dynamic-list, --sysroot, --gc-sections, --build-id,
--eh-frame-hdr, --allow-multiple-definition, -z now|relro|origin|max-page-size=N|ibt|shstk|...,
-rpath, -E, -s, -S, -shared, -soname, --version-script, --no-undefined-version, --no-undefined,
-Bsymbolic, -Bsymbolic-functions, -x, -X, --discard-none, --exclude-libs, --export-dynamic-symbol,
--export-dynamic-symbol-list, --hash-style=gnu|sysv|both, --package-metadata, -f, -F, -t,
--emit-relocs, -q, -R, --just-symbols, --section-start;
glibc's input scripts (libc.so: GROUP, AS_NEEDED, INPUT).
What it cannot link (SECTIONS scripts with -T, extern "C++" in version scripts, an option or input
it does not know) it names on one line ("not supported yet: ...") and exits 1, so linkwrap
falls back.
  --version   print the version      --time   print each pass's wall time to stderr
  --verbose   the version and the layout used (no linker script), then each input as -t
  --stats     print the counts that explain those times (inputs, sections, symbols, relocations
              by type and how they were applied, merged strings, bytes written) to stderr
Through the wrapper: LINKWRAP_LINKER=python. See docs/ld.md.
"""


def run(argv, keep=None) -> int:
    """keep: a list that holds the link's records past the link (driver.link), for a caller that
    exits by os._exit right after and need not free them one by one."""
    if argv and argv[0] in ("-h", "--help") or "--help" in argv or "-help" in argv:
        sys.stdout.write(USAGE)       # GNU ld: --help anywhere prints the usage, links nothing
        return 0
    from linkwrap.ld.incremental import where
    if any(a.startswith("--incremental") for a in argv) or \
            os.environ.get(where.ENV) in (where.FULL_OR_PATCH, where.PATCH_ONLY, where.BASE_ONLY):
        refused = _not_incremental(argv)
        if refused:
            print(f"linkwrap-ld: not supported yet: {refused} in an incremental link", file=sys.stderr)
            return 1
        from linkwrap.ld.incremental.main import run as incremental   # docs/ld.md "Incremental"
        return incremental(argv)
    from linkwrap.ld.diag import Unsupported
    from linkwrap.errors import LinkwrapError
    prog = "linkwrap-ld"
    try:
        from linkwrap.ld.options import parse_args
        opts = parse_args(argv)
        if opts.version or opts.verbose:
            from linkwrap import __version__
            print(f"linkwrap.ld {__version__} (compatible with GNU linkers)")
            if opts.verbose:
                # GNU ld prints its default script here; this linker has none (docs/ld.md "Layout")
                print("using linkwrap.ld's own layout: no linker script")
            if not opts.inputs:
                return 0
        if not opts.inputs:
            print(f"{prog}: no input files", file=sys.stderr)
            return 1
        from linkwrap.ld.driver import link
        t = link(opts, keep=keep)
        if opts.time_phases:
            for label, ms in t.phases:
                print(f"{prog}: {ms:8.1f} ms  {label}", file=sys.stderr)
        for line in t.stats:
            print(f"{prog}: {line}", file=sys.stderr)
        return 0
    except Unsupported as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1
    except LinkwrapError as e:
        for line in str(e).splitlines():
            print(f"{prog}: {line}" if not line.startswith(prog) else line, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug in this linker: one line, and linkwrap falls back
        import traceback
        tb = traceback.extract_tb(e.__traceback__)[-1]
        print(f"{prog}: internal error: {type(e).__name__}: {e} "
              f"(at {tb.filename.rsplit('/', 1)[-1]}:{tb.lineno})", file=sys.stderr)
        return 1


def _not_incremental(argv):
    """The options an incremental link cannot keep when it patches (its relink writes neither
    emitted relocations nor .symtab's section symbols, and takes no just-symbols file) -> the name
    of one, or None (the incremental link reads and judges the rest itself)."""
    from linkwrap.errors import LinkwrapError
    from linkwrap.ld.diag import Unsupported
    from linkwrap.ld.options import parse_args
    try:
        opts = parse_args([a for a in argv if not a.startswith("--incremental")])
    except (Unsupported, LinkwrapError):
        return None
    if opts.emit_relocs:
        return "--emit-relocs"
    if opts.just_symbols:
        return "-R FILE (--just-symbols)"
    if opts.section_start:
        return "--section-start"
    return None


def main() -> None:
    # Python's cyclic collector off for the whole process, not just the link (driver.link pauses it and
    # gives the caller's state back): given back on, its first young collection walked every record the
    # link had made (~400k tracked objects after a Rust debug link: 0.15-0.5 s of wall after the last
    # pass, none of it in --time) only for os._exit below to drop them all
    import gc
    gc.disable()
    # the link's records are kept (never freed, os._exit below): freeing them one by one as the link
    # returned cost a Rust debug link ~0.2 s of wall
    kept = []     # a name, not a temporary: a temporary would be freed as run returns
    status = run(sys.argv[1:], keep=kept)
    # the link's records (millions of objects, cycles among them) are not freed one by one at exit:
    # ~90 ms of a Rust debug link. Nothing is left to write but the standard streams.
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass    # a closed pipe: nothing more can be said
    os._exit(status)


if __name__ == "__main__":
    main()
