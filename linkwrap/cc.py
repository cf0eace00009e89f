"""Entry points that stand in for a cc driver.

linkwrap-cc: Cargo's `linker` (rustc calls it with cc arguments).
linkwrap-launch: CMake's <LANG>_LINKER_LAUNCHER and ninja rule prefixes
(called as `linkwrap-launch <driver> <args...>`).
"""
import sys


def main() -> None:
    from linkwrap.wrap.pipeline import main as link
    sys.exit(link(sys.argv[1:]))


def launch_main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        sys.stderr.write("linkwrap-launch: usage: linkwrap-launch <compiler driver> <link arguments...>\n")
        sys.exit(2)
    from linkwrap.wrap.pipeline import main as link
    sys.exit(link(argv[1:], driver=argv[0]))
