"""linkwrap.ld: an ELF linker for x86-64 Linux/glibc executables, in pure Python.

Passes: parse -> resolve -> gc -> scan -> layout -> relocate -> write
(driver.link lists them). Imported only when the Python linker runs: it is
not on the wrapper's per-link hot path.
"""
