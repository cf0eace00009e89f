"""`linkwrap launch -- <driver> <args...>`: the CMake / ninja link launcher."""
import sys


def run_verbatim(argv) -> int:
    from linkwrap.cc import LAUNCH_USAGE
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        (sys.stdout if argv else sys.stderr).write(LAUNCH_USAGE.replace("linkwrap-launch", "linkwrap launch"))
        return 0 if argv else 2
    from linkwrap.wrap.pipeline import main as link
    return link(argv[1:], driver=argv[0])
