"""The `linkwrap` command: a flat table of subcommands, one module each.

Each module in linkwrap/cli/ has add_arguments(parser) and run(args) -> int
and is imported only when its command runs (rich, tomlkit and sqlite3 belong
to commands, never to the link path). Errors: a LinkwrapError prints its
message and exits 1, ^C exits 130, anything else is logged and exits 3.
"""
import argparse
import importlib
import sys

from linkwrap import __version__

# name -> (module, one-line help). The order is the order of `linkwrap --help`.
COMMANDS = {
    "install": ("install", "make a Cargo project (or --cmake / --ninja build) link through linkwrap"),
    "uninstall": ("uninstall", "undo `linkwrap install`, restoring what was there byte for byte"),
    "status": ("status", "say whether and where linkwrap is installed"),
    "explain": ("explain", "show the facts of a link and the linker and flags linkwrap would choose, with reasons"),
    "config": ("config", "show every configuration value and where it came from"),
    "summary": ("summary", "the links of the last build (or --build ID, --all, --since): time, memory, linker"),
    "run": ("run", "run a build command and print its link summary at the end"),
    "report": ("report", "write a self-contained HTML report of link times (--html FILE)"),
    "log": ("log", "the link records: path | status | on | off | clear"),
    "launch": ("launch", "link through linkwrap from a build system: linkwrap launch -- <driver> <args...>"),
    "ld": ("ld", "linkwrap's own ELF linker, with an ld-compatible command line"),
    "server": ("server", "the warm link server behind the native entry point: status | stop"),
}
# Commands whose arguments are someone else's command line, passed on verbatim.
VERBATIM = {"launch", "ld"}


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser; .subparsers maps each command to its own parser."""
    parser = argparse.ArgumentParser(
        prog="linkwrap", description="Fast and safe linking on Linux: picks the linker per link, keeps outputs safe, records what linking costs.")
    parser.add_argument("--version", action="version", version=f"linkwrap {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.subparsers = {}
    for name, (_, help_text) in COMMANDS.items():
        p = parser.subparsers[name] = sub.add_parser(name, help=help_text, description=help_text)
        if name not in VERBATIM:
            _module(name).add_arguments(p)
        else:
            p.add_argument("rest", nargs=argparse.REMAINDER)
    return parser


def _module(name):
    return importlib.import_module(f"linkwrap.cli.{COMMANDS[name][0]}")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # Paths are bytes on Linux: print a non-UTF-8 one as the bytes it is, never fail on it.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="surrogateescape")
        except (AttributeError, ValueError):
            pass
    from linkwrap.errors import LinkwrapError, error_line
    try:
        if argv and argv[0] in VERBATIM:
            code = _module(argv[0]).run_verbatim(argv[1:])
        else:
            parser = build_parser()
            args, extras = parser.parse_known_args(argv)
            if extras:
                # argparse would show `linkwrap`'s usage: show the command's own.
                (parser.subparsers.get(args.command) or parser).error(f"unrecognized arguments: {' '.join(extras)}")
            if not args.command:
                parser.print_help()
                code = 0
            else:
                code = _module(args.command).run(args)
    except LinkwrapError as e:
        sys.stderr.write(error_line(e))
        code = 1
    except KeyboardInterrupt:
        print("linkwrap: interrupted", file=sys.stderr)
        code = 130
    except BrokenPipeError:
        code = 0
    except OSError as e:  # the machine said no (read-only, full, missing): not a bug, one line
        where = f"{e.filename}: " if e.filename else ""
        sys.stderr.write(error_line(f"{where}{e.strerror or e}"))
        code = 1
    except Exception as e:
        from linkwrap import faults, paths
        faults.note(f"running `linkwrap {' '.join(argv[:1])}`", e)
        print(f"linkwrap: unexpected error: {type(e).__name__}: {e} (details in {paths.log_file()})", file=sys.stderr)
        code = 3
    return code


def entry() -> None:
    sys.exit(main())
