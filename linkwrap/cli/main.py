"""The `linkwrap` command: a flat table of subcommands, one module each.

Each module in linkwrap/cli/ has add_arguments(parser) and run(args) -> int
and is imported only when its command runs (rich, tomlkit and sqlite3 belong
to commands, never to the link path). Errors: a LinkwrapError prints its
message and exits 1 (a UsageError 2, as argparse's own usage errors), ^C
exits 130, anything else is logged and exits 3. Every --help ends with the
environment variables linkwrap reads (ENVIRONMENT).
"""
import sys

if sys.argv[1:2] == ["launch"] and __name__ != "__main__":
    # A link, started the way linkwrap-launch starts one: ^C kills it quietly, as it kills cc.
    import linkwrap.cc  # noqa: F401 (importing it is what sets SIGINT)
import argparse
import importlib

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
    "report": ("report", "write a self-contained HTML report of where the link time went (--open to see it)"),
    "bench": ("bench", "replay saved links on every installed linker; later links follow the measurements"),
    "log": ("log", "the link records: status (the default) | path | on | off | clear | export"),
    "launch": ("launch", "link through linkwrap from a build system: linkwrap launch -- <driver> <args...>"),
    "ld": ("ld", "linkwrap's own ELF linker, with an ld-compatible command line"),
    "server": ("server", "the warm link server behind the native entry point: status | stop"),
}
# Commands whose arguments are someone else's command line, passed on verbatim.
VERBATIM = {"launch", "ld"}
# Their --help, in the same form as the others' (argparse builds it; nothing is parsed).
VERBATIM_HELP = {
    "launch": ("-- DRIVER ARGS...",
               "Links through linkwrap: the compiler driver (cc, c++, gcc...) and its whole link command "
               "line, as CMake's <LANG>_LINKER_LAUNCHER and ninja link rules pass them. Also installed as "
               "linkwrap-launch. `linkwrap install --cmake` and `--ninja` set it up."),
    # The linker's own words (linkwrap/ld/__main__.py USAGE), so that the two helps never drift apart.
    "ld": ("[OPTIONS] FILE...", None),
}

# The environment section of every --help: "  NAME  what it does" lines.
ENVIRONMENT = (
    ("LINKWRAP_HOME", "keep records, caches and the fault log here (default: the XDG state directory, "
                      "~/.local/state/linkwrap)"),
    ("LINKWRAP_DISABLE", "1 (or yes, true, on): every link runs exactly as asked, untouched"),
    ("LINKWRAP_LINKER", "force a linker: mold, wild, lld, rust-lld, bfd, gold or python"),
    ("LINKWRAP_CC", "the compiler driver Cargo links run (default: cc)"),
    ("LINKWRAP_CC_<TRIPLE>", "the driver for Cargo links of that target, e.g. LINKWRAP_CC_AARCH64_UNKNOWN_LINUX_GNU"),
    ("LINKWRAP_CONFIG_ERRORS", "warn: a broken linkwrap.toml or LINKWRAP_LINKER is said once and links run as "
                               "asked, instead of failing"),
    ("LINKWRAP_PROFILE", "the profile of linkwrap.toml to use (default: from the output's path)"),
    ("LINKWRAP_LOG", "off: links in this environment are not recorded"),
    ("LINKWRAP_SERVER", "off: no warm link server (`linkwrap install` starts none either); every link starts "
                        "Python itself (slower, same result)"),
    ("LINKWRAP_DIRECT", "0: start every linker through the compiler driver, never directly"),
    ("LINKWRAP_INSTALL_ENTRY", "state: `linkwrap install` writes the entry point it compiles under linkwrap's "
                               "state directory, not the installed native client's path (the default)"),
    ("LINKWRAP_SAVE", "1: keep each link replayable for `linkwrap bench` (what `linkwrap run --save` sets)"),
    ("LINKWRAP_LD_NO_FALLBACK", "1: a failure of linkwrap's own linker (LINKWRAP_LINKER=python) is the link's "
                                "result, not linked again as asked (for testing that linker)"),
    ("LINKWRAP_INCREMENTAL", "0: no incremental relinks (wins over every way of asking for them); 1: debug "
                             "executables are relinked incrementally by linkwrap's own linker, measured or not "
                             "(unset: where this output's relinks measured them faster)"),
    ("LINKWRAP_LD_INCREMENTAL", "1: linkwrap's own linker links incrementally (as `linkwrap ld --incremental`), "
                                "where a -B shim cannot pass a flag; to the wrapper, as LINKWRAP_INCREMENTAL=1"),
    ("LINKWRAP_LD_OUTPUT", "set by linkwrap for its own linker: the output a link written in a private "
                           "directory is for (its incremental state is kept beside it)"),
    ("LINKWRAP_INCREMENTAL_PAUSE", "for tests: `linkwrap ld --incremental` stops at that step (the crash tests' "
                                   "hook; the last good output must survive it)"),
    ("OTEL_EXPORTER_OTLP_ENDPOINT", "`linkwrap run` sends its build's spans there (OTLP/HTTP) at the end"),
    ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf (the default) or http/json: how those spans are encoded; "
                                    "`log export --format otlp` writes protobuf only when it says so"),
    ("COLUMNS", "the width of tables (default: the terminal's, 80 in a pipe)"),
)


class HelpFormatter(argparse.HelpFormatter):
    """argparse's, except that description and epilog lines starting with two spaces
    (the environment section) keep their line breaks; other paragraphs are filled."""

    def _fill_text(self, text, width, indent):
        import textwrap
        out = []
        for para in text.split("\n\n"):
            if para.startswith("  ") or para.startswith("environment:"):
                out.append("\n".join(_wrap_entry(line, width, indent) for line in para.splitlines()))
            else:
                out.append(textwrap.fill(" ".join(para.split()), width, initial_indent=indent,
                                         subsequent_indent=indent, break_on_hyphens=False))
        return "\n\n".join(out)


def _wrap_entry(line, width, indent):
    """'  NAME  text' -> text wrapped in a column of its own, within width."""
    import textwrap
    if not line.startswith("  "):
        return indent + line
    name, _, text = line.strip().partition("  ")
    pad = indent + " " * 22
    if len(name) > 18:
        return f"{indent}  {name}\n" + textwrap.fill(text.strip(), width, initial_indent=pad, subsequent_indent=pad)
    return textwrap.fill(text.strip(), width, initial_indent=f"{indent}  {name:<18}  ", subsequent_indent=pad)


def environment_epilog(extra=None) -> str:
    lines = ["environment:"] + [f"  {name}  {text}" for name, text in ENVIRONMENT]
    return ((extra + "\n\n") if extra else "") + "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser; .subparsers maps each command to its own parser."""
    parser = argparse.ArgumentParser(
        prog="linkwrap", formatter_class=HelpFormatter,
        description="Fast and safe linking on Linux: picks the linker per link, keeps outputs safe, records "
                    "what linking costs.", epilog=environment_epilog())
    parser.add_argument("--version", action="version", version=f"linkwrap {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.subparsers = {}
    for name, (_, help_text) in COMMANDS.items():
        p = parser.subparsers[name] = sub.add_parser(name, help=help_text, description=help_text,
                                                      formatter_class=HelpFormatter)
        if name not in VERBATIM:
            _module(name).add_arguments(p)
        else:
            usage, details = VERBATIM_HELP[name]
            p.usage = f"linkwrap {name} {usage}"
            p.description = details or _ld_details()
            if name == "ld":  # shown, never parsed: the linker reads its own command line
                p.add_argument("--version", action="store_true", help="print the version")
                p.add_argument("--time", action="store_true", help="print each pass's wall time to stderr")
            p.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        p.epilog = environment_epilog(p.epilog)
    return parser


def _ld_details() -> str:
    from linkwrap.ld.__main__ import USAGE
    from linkwrap.resources import doc_path
    # Its option lines ("  --version ...") become options of the parser (verbatim_options).
    lines = [line for line in USAGE.split("\n")[1:] if not line.startswith("  ")]
    body = " ".join(" ".join(lines).split())
    return body.replace("docs/ld.md", doc_path("ld.md"))


def verbatim_help(name) -> str:
    """`linkwrap launch --help`, `linkwrap ld --help`: the same form as every other command's."""
    return build_parser().subparsers[name].format_help()


def unknown_command(word) -> str:
    """One line for a command that does not exist, with the nearest ones (a typo is the usual cause)."""
    import difflib
    near = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.6)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return f"no command {word!r}{hint} (`linkwrap --help` lists them)"


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
        elif argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
            from linkwrap.errors import UsageError
            raise UsageError(unknown_command(argv[0]))
        else:
            parser = build_parser()
            args, extras = parser.parse_known_args(argv)
            if extras:
                # argparse would show `linkwrap`'s usage: show the command's own.
                (parser.subparsers.get(args.command) or parser).error(f"unrecognized arguments: {' '.join(extras)}")
            if not args.command:
                # Nothing asked is a usage error (exit 2, the help on stderr); `--help` exits 0.
                parser.print_help(sys.stderr)
                code = 2
            else:
                code = _module(args.command).run(args)
    except LinkwrapError as e:
        from linkwrap.errors import UsageError
        sys.stderr.write(error_line(e))
        code = 2 if isinstance(e, UsageError) else 1  # usage errors exit 2, as argparse's do
    except KeyboardInterrupt:
        if argv[:1] == ["launch"]:  # a link: dies of it quietly, as cc does
            from linkwrap.cc import die_of_sigint
            die_of_sigint()
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
        if isinstance(faults.unkept, OSError):
            from linkwrap.errors import os_error_text
            where = f"its details could not be kept: {os_error_text(faults.unkept)}"
        else:
            where = f"details in {paths.log_file()}"
        print(f"linkwrap: unexpected error: {type(e).__name__}: {e} ({where})", file=sys.stderr)
        code = 3
    return code


def entry() -> None:
    sys.exit(main())
