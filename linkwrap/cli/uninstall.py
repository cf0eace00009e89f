"""`linkwrap uninstall`: undo `linkwrap install` in the same place, taking out
only what linkwrap wrote (its marker ID) and putting back what was there.

Same places as install: the Cargo project (default), --global, --cmake DIR,
--ninja FILE. Without --target every target linkwrap set in that file goes.
"""
import os

from linkwrap.cli.install import add_common, cargo_file, carry_out, say, show_or_apply, which


def add_arguments(parser) -> None:
    add_common(parser)


def run(args) -> int:
    from linkwrap.install import marker
    kind = which(args)
    if kind == "cargo":
        from linkwrap.install import cargo
        path, _ = cargo_file(args)
        change = cargo.plan_uninstall(path, set(args.target) or None)
        changed = show_or_apply(change, args.dry_run)
        if args.dry_run:
            return 0
        if not _cargo_left(path):
            marker.forget("cargo", path)
        say(change.said)
        if changed:
            say(["note: Cargo hashes the linker's path, so the next build rebuilds everything once"])
        return 0
    if kind == "ninja":
        from linkwrap.install import ninja
        path = os.path.abspath(args.ninja)
        carry_out(ninja.plan_uninstall(path), args.dry_run, lambda: marker.forget("ninja", path))
        return 0
    from linkwrap.install import cmake
    folder = os.path.abspath(args.cmake)
    if cmake.classify(folder, "uninstall") == "build":
        carry_out(cmake.plan_cache_uninstall(folder), args.dry_run, lambda: marker.forget("cmake-cache", folder))
        return 0
    built = cmake.preset_build_dir(folder) if cmake.presets_installed(folder) else None
    change = cmake.plan_presets_uninstall(folder)
    carry_out(change, args.dry_run, lambda: marker.forget("cmake-presets", change.path))
    # A build directory configured from the preset keeps the launcher in its cache: take it out
    # too, or it would go on linking through linkwrap.
    if built and cmake.configured_from(built, folder):
        carry_out(cmake.plan_cache_uninstall(built, set_by=f"linkwrap's {cmake.PRESET_NAME!r} preset, which configured it"),
                  args.dry_run, lambda: marker.forget("cmake-cache", built))
    elif built is None and change.changes_anything:
        say(["note: a build directory configured from the preset keeps linkwrap's launcher in its cache: "
             "`linkwrap uninstall --cmake BUILD_DIR` takes it out"])
    return 0


def _cargo_left(path) -> bool:
    from linkwrap.install import cargo
    try:
        from linkwrap.install import cargo_checks
        return bool(cargo_checks.installed(path))
    except Exception:
        return False
