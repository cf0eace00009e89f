"""`linkwrap launch -- <driver> <args...>`: the CMake / ninja link launcher."""
import sys


def run_verbatim(argv) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("linkwrap: error: usage: linkwrap launch -- <compiler driver> <link arguments...>", file=sys.stderr)
        return 2
    from linkwrap.wrap.pipeline import main as link
    return link(argv[1:], driver=argv[0])
