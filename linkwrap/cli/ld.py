"""`linkwrap ld ...`: linkwrap's own ELF linker with an ld command line (passed on verbatim)."""


def run_verbatim(argv) -> int:
    from linkwrap.ld.__main__ import run
    return run(list(argv))
