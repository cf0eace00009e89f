"""`linkwrap ld ...`: linkwrap's own ELF linker with an ld command line (passed on verbatim)."""


def run_verbatim(argv) -> int:
    if argv[:1] in (["-h"], ["--help"]) or argv[:2] in (["--", "-h"], ["--", "--help"]):
        import sys
        from linkwrap.cli.main import verbatim_help
        sys.stdout.write(verbatim_help("ld"))
        return 0
    from linkwrap.ld.__main__ import run
    return run(list(argv))
