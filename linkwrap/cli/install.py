"""`linkwrap install`: make a Cargo project (default), a CMake project (--cmake)
or a hand-written ninja file (--ninja) link through linkwrap.

Each path plans a change (linkwrap/install/<kind>.py), then writes it, notes
where it went for `linkwrap status`, and says what it did on stdout;
warnings go to stderr, one line each. --dry-run shows the change instead.
"""
import os
import sys

from linkwrap.errors import UsageError, warning_line


def add_arguments(parser) -> None:
    add_common(parser)
    parser.add_argument("--force", action="store_true",
                        help="take over a linker or launcher that is already set (uninstall puts it back)")
    parser.add_argument("--rule", action="append", metavar="NAME", default=[],
                        help="with --ninja: the link rules to prefix (default: every rule that links)")
    parser.add_argument("--inherits", metavar="PRESET",
                        help="with --cmake on a source directory: the configure preset linkwrap's preset inherits")
    parser.add_argument("--console-script", action="store_true",
                        help="point builds at pip's console script instead of linkwrap's faster entry point "
                             "(which skips site-packages processing: 10-30 ms per link)")
    parser.add_argument("--absolute", action="store_true",
                        help="write the absolute path of linkwrap's entry point even in a file git will "
                             "commit (this machine only; by default such a file gets the bare name)")
    parser.add_argument("--bare", action="store_true",
                        help="write the bare name (linkwrap-cc; linkwrap-launch for --cmake/--ninja) even in a personal "
                             "file (ignored by git, outside git, --global, a CMake build directory), for setups "
                             "where PATH finds linkwrap everywhere")


def add_common(parser) -> None:
    """Options install and uninstall share."""
    parser.add_argument("--path", metavar="DIR",
                        help="the Rust project (default: the workspace around the current directory)")
    parser.add_argument("--global", dest="global_", action="store_true",
                        help="$CARGO_HOME/config.toml (default ~/.cargo) instead of the project's")
    parser.add_argument("--target", action="append", metavar="TRIPLE", default=[],
                        help="the target triple(s) (default: rustc's host)")
    parser.add_argument("--cmake", nargs="?", const=".", metavar="DIR",
                        help="a CMake build directory (cache entries) or source directory (CMakeUserPresets.json)")
    parser.add_argument("--ninja", nargs="?", const="build.ninja", metavar="FILE",
                        help="a hand-written ninja file (default: build.ninja)")
    parser.add_argument("--dry-run", action="store_true", help="show the change, write nothing")


def which(args) -> str:
    """'cargo', 'cmake' or 'ninja'; rejects options that belong to another path."""
    chosen = [name for name, on in (("--cmake", args.cmake is not None), ("--ninja", args.ninja is not None),
                                    ("--global", args.global_), ("--path", args.path is not None)) if on]
    if len(chosen) > 1:
        raise UsageError(f"{' and '.join(chosen)} do not go together")
    if getattr(args, "absolute", False) and getattr(args, "console_script", False):
        raise UsageError("--absolute and --console-script do not go together")
    if getattr(args, "bare", False) and (getattr(args, "absolute", False) or getattr(args, "console_script", False)):
        raise UsageError(f"--bare and --{'absolute' if args.absolute else 'console-script'} do not go together")
    if args.cmake is not None:
        if args.target:
            raise UsageError("--target is for Cargo projects, not --cmake")
        return "cmake"
    if args.ninja is not None:
        if args.target:
            raise UsageError("--target is for Cargo projects, not --ninja")
        return "ninja"
    if getattr(args, "rule", None):
        raise UsageError("--rule goes with --ninja")
    if getattr(args, "inherits", None):
        raise UsageError("--inherits goes with --cmake")
    return "cargo"


def say(lines) -> None:
    for line in lines:
        print(f"linkwrap: {line}")


def warn(lines) -> None:
    for line in lines:
        sys.stderr.write(warning_line(line))


def show_or_apply(change, dry_run: bool) -> bool:
    """Write the change (or print it for --dry-run); True if a file changed."""
    from linkwrap.install import marker
    if dry_run:
        if isinstance(change, marker.Change):
            text = marker.diff(change.path, change.old, change.new)
            sys.stdout.write(text or f"linkwrap: {change.path}: no change\n")
        else:
            print(" ".join(change.command()) if change.changes_anything else f"linkwrap: {change.path}: no change")
        return False
    change.apply()
    return change.changes_anything


def carry_out(change, dry_run: bool, remember) -> None:
    """Show (--dry-run) or apply a change; once applied, remember() notes the place and the change is said."""
    show_or_apply(change, dry_run)
    if not dry_run:
        remember()
        say(change.said)


def cargo_file(args):
    """(config path, project root or None) the Cargo path works on."""
    from linkwrap.install import cargo
    if args.global_:
        return cargo.global_config(), None
    root = cargo.project_root(args.path or os.getcwd())
    return cargo.project_config(root), root


def run(args) -> int:
    from linkwrap.install import commit, launcher, marker, warm
    kind = which(args)
    launcher.check_state()  # before anything is written: builds would run what another user put there

    def entry(name):
        return launcher.entry_point(name, args.console_script, write=not args.dry_run)

    if kind == "cargo":
        from linkwrap.install import cargo
        path, root = cargo_file(args)
        if args.target:
            cargo.check_targets(args.target)
        triples = args.target or [cargo.host_triple()]
        state = "global" if args.global_ else commit.git_status(path)
        written = commit.cargo_written(cargo.SCRIPT)
        linker, why = value_to_write(args, entry, written, state)
        change = cargo.plan_install(path, triples, linker, force=args.force)
        changed = show_or_apply(change, args.dry_run)
        if args.dry_run:
            return 0
        marker.remember("cargo", path, targets=triples, scope="global" if args.global_ else "project")
        say(change.said)
        say(why)  # run again, install gives the same advice as the first time (and as status)
        if not changed:
            from linkwrap.cli.status import entry_point_problem
            problem = entry_point_problem(path, linker)
            warn([problem] if problem else [])
        notes, warnings = commit.teammates(path, written, linker, state)
        say(notes if changed else [])
        warn(warnings)
        from linkwrap.install import cargo_checks
        warn(cargo_checks.fights(triples, cargo_checks.configs_read(root or os.getcwd())))
        if changed and os.path.islink(path):
            say([f"note: {path} is a symbolic link: its target {os.path.realpath(path)} was edited"])
        if changed:
            say(["note: Cargo hashes the linker's path, so the next build rebuilds everything once"])
        warm.first_build(linker)
        return 0
    if kind == "ninja":
        from linkwrap.install import ninja
        path = os.path.abspath(args.ninja)
        written = commit.launcher_written(ninja.SCRIPT, "the link rules' prefix")
        state = commit.git_status(path)
        launch, why = value_to_write(args, entry, written, state)
        change = ninja.plan_install(path, launch, args.rule)
        carry_out(change, args.dry_run, lambda: marker.remember("ninja", path))
        advise(args, change, written, launch, state, why)
        if not args.dry_run:
            warm.first_build(launch)
        return 0
    from linkwrap.install import cmake
    folder = os.path.abspath(args.cmake)
    if cmake.classify(folder) == "build":
        if args.inherits:
            raise UsageError("--inherits is for a source directory (CMakeUserPresets.json), not a build directory")
        # A build directory's cache is never committed: the absolute path, the fast one, unless --bare.
        launch, _ = value_to_write(args, entry, commit.launcher_written("linkwrap-launch", ""), "build-dir")
        carry_out(cmake.plan_cache_install(folder, launch, force=args.force), args.dry_run,
                  lambda: marker.remember("cmake-cache", folder))
        if not args.dry_run:
            warn(cmake.check_generated(folder, launch))
            warm.first_build(launch)
        return 0
    written = commit.launcher_written("linkwrap-launch", "the preset's <LANG>_LINKER_LAUNCHER")
    state = commit.git_status(os.path.join(folder, cmake.PRESETS))
    launch, why = value_to_write(args, entry, written, state)
    change = cmake.plan_presets_install(folder, launch, inherits=args.inherits)
    carry_out(change, args.dry_run, lambda: marker.remember("cmake-presets", change.path))
    advise(args, change, written, launch, state, why)
    if not args.dry_run:
        warm.first_build(launch)
    return 0


def value_to_write(args, entry, written, state):
    """(the bare name or the absolute entry point, why) by what git will do with the file (commit.py);
    --absolute and --console-script write the path, --bare the name."""
    from linkwrap.install import commit
    if args.absolute or args.console_script:
        return entry(written.name), []
    return commit.to_write(written, lambda: entry(written.name), shared=commit.committed(state),
                           state=state, bare=args.bare)


def advise(args, change, written, value, state, why) -> None:
    """After a source tree's file was written: which value and why, and what teammates then need."""
    if args.dry_run:
        return
    from linkwrap.install import commit
    say(why)
    notes, warnings = commit.teammates(change.path, written, value, state)
    say(notes if change.changes_anything else [])
    warn(warnings)
