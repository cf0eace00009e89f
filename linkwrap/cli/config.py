"""`linkwrap config`: every configuration value and where it came from (like `ccache -p`).

Input: the current directory (which project file applies), --profile or
--output (which [profile.<name>] overrides apply) and the environment.
Output: one line per value, `(source) key = value` with the value in TOML
syntax, then every [profile.<name>] override of the files read (marked when it applies here),
and a warning when LINKWRAP_LINKER forces a linker that is not installed; --json gives the same
as an object ("values", "profiles": [{profile, key, value, source, applied}], "installed",
"forced_not_installed"). A configuration error (a
malformed or unreadable file, an unknown LINKWRAP_LINKER) is one line, exit 1. --init writes the commented
template (templates/linkwrap.toml) as this project's linkwrap.toml.
"""
import json
import os
import sys

from linkwrap import paths
from linkwrap.errors import LinkwrapError, UsageError
from linkwrap.request import args as args_mod
from linkwrap.request import config as config_mod


def add_arguments(parser) -> None:
    parser.add_argument("--profile", metavar="NAME",
                        help="show the values for this build profile (default: none, or LINKWRAP_PROFILE)")
    parser.add_argument("--output", metavar="PATH",
                        help="show the values for a link writing PATH (its profile comes from the path)")
    parser.add_argument("--json", action="store_true", help="print a JSON object instead of lines")
    parser.add_argument("--init", action="store_true",
                        help="write a commented linkwrap.toml into the current directory (--user: your own)")
    parser.add_argument("--user", action="store_true", help="with --init: write your own file instead")


def run(args) -> int:
    if args.init:
        return _init(args.user)
    if args.user:
        raise UsageError("--user only goes with --init")
    environ = dict(os.environ)
    if args.profile:
        environ["LINKWRAP_PROFILE"] = args.profile
    cwd = os.getcwd()
    request = args_mod.parse(["-o", args.output] if args.output else [], driver="cc", environ=environ, cwd=cwd)
    profile = (args.profile, "option --profile") if args.profile else None
    settings = config_mod.load(request, environ, profile=profile)
    report = describe(settings, cwd, environ)
    report["profiles"] = profile_overrides(settings)
    report["applied_order"] = applied_order(settings)
    from linkwrap.facts import linkers
    installed = list(linkers.discover(request, environ))
    report["installed"] = installed
    report["forced_not_installed"] = settings.forced if settings.forced and settings.forced not in installed else None
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from linkwrap.errors import printable_data
    report = printable_data(report)
    files = report["files"]
    user_state = "" if files["user_exists"] else " (not present)"
    print(f"user file:    {files['user']}{user_state}")
    print(f"project file: {files['project'] or _not_found(cwd)}")
    for entry in report["ignored"]:
        print(f"ignored:      {entry['path']} ({entry['why']})")
    if report["disabled"]:
        print("LINKWRAP_DISABLE=1: linkwrap is off; every link runs exactly as asked, whatever follows")
    for key, entry in report["values"].items():
        print(f"({entry['source']}) {key} = {toml_value(entry['value'])}")
        if key == "prefer" and report.get("applied_order"):
            import textwrap
            print(textwrap.fill(report["applied_order"]["text"], 80, initial_indent="  ", subsequent_indent="  "))
    if report["profiles"]:
        print("profile overrides (each applies only to its profile's links; `--profile NAME` shows one merged):")
        for entry in report["profiles"]:
            mark = "  (applies here)" if entry["applied"] else ""
            print(f"  [profile.{entry['profile']}] {entry['key']} = {toml_value(entry['value'])}  "
                  f"({entry['source']}){mark}")
    if report["forced_not_installed"]:
        name = report["forced_not_installed"]
        print(f"warning: forced linker {name} is not installed: links choose as usual "
              f"(LINKWRAP_LINKER={name}; installed: {', '.join(report['installed']) or 'none'})")
    return 0


def applied_order(settings):
    """What a link really tries when `prefer` is the default: the policy puts the caller's own fast
    default first (rustc's rust-lld), and a measurement or the output's relinks decide before any
    order. {rust, text}, or None when `prefer` was configured (then it is the order, as shown)."""
    if settings.sources.get("prefer", "default") != "default":
        return None
    from linkwrap.choice.policy import static_order
    rust = list(static_order(settings.prefer, ("rust-lld",)))
    return {"rust": rust,
            "text": ("applied: first what `linkwrap bench` measured for the output, else what its relinks "
                     "taught; else a caller's own fast linker first, then this order (a rustc link: "
                     f"{', '.join(rust)}; a small C link: GNU ld first); `linkwrap explain OUTPUT` shows "
                     "one link's")}


def _not_found(cwd) -> str:
    """Where the search for linkwrap.toml looked, in words that are true for this cwd."""
    end = config_mod.search_end(cwd)
    where = f"{cwd}" if end == os.path.abspath(cwd) else f"{cwd} up to {end}"
    git = ", which holds .git" if os.path.exists(os.path.join(end, ".git")) else ""
    return f"none (searched {where}{git})"


def describe(settings, cwd, environ=None) -> dict:
    """{files: {...}, profile, disabled, values: {key: {value, source}}} for a Config."""
    src = settings.sources
    values = {
        "linker": (settings.forced, src.get("linker", "default")),
        "prefer": (list(settings.prefer), src["prefer"]),
        "forbid": (sorted(settings.forbid), src["forbid"]),
        "in_place": (settings.in_place, src["in_place"]),
        "record": (settings.record, src["record"]),
        "profile": (settings.profile, src["profile"]),
        "choice.learn": (settings.learn, src.get("choice.learn", "default")),
        "bench.save": (settings.save, src.get("bench.save", "default")),
        # unset (None): chosen per output by its relinks' measurements (docs/policy.md 1.5)
        "incremental.enabled": (settings.incremental, src.get("incremental.enabled", "default")),
    }
    for name in config_mod.LINKER_NAMES:
        key = f"linkers.{name}.extra_flags"
        values[key] = (list(settings.extra_flags.get(name, ())), src.get(key, "default"))
    for key in config_mod.RETENTION:
        values[f"records.{key}"] = (settings.retention[key], src.get(f"records.{key}", "default"))
    for name, value in settings.memory.items():  # admission unset: on only when a memory limit applies
        values[f"memory.{name}"] = (value, src.get(f"memory.{name}", "default"))
    user = paths.user_config_file()
    return {
        "files": {"user": user, "user_exists": os.path.isfile(user),
                  "project": config_mod.find_project_file(cwd)},
        "ignored": [{"path": path, "why": why} for path, why in settings.ignored],
        "profile": settings.profile,
        "disabled": _disabled(environ or {}),  # as pipeline.link checks it
        "values": {k: {"value": v, "source": s} for k, (v, s) in values.items()},
    }


def profile_overrides(settings) -> list:
    """Every [profile.<name>] value of the files read, whichever profile this link has:
    [{"profile", "key", "value", "source", "applied"}] (applied: it is in the values above)."""
    user = paths.user_config_file()
    applied = config_mod.profile_tables(settings.profile)
    out = []
    for path in settings.files:
        table = config_mod.read_file(path) or {}
        kind = "user file" if os.path.abspath(path) == os.path.abspath(user) else "project file"
        for name, sub in sorted(table.get("profile", {}).items()):
            for key, value in _flat(sub):
                out.append({"profile": name, "key": key, "value": value, "source": f"{kind} {path}",
                            "applied": name in applied})
    return out


def _flat(table, prefix=""):
    for key, value in table.items():
        if isinstance(value, dict):
            yield from _flat(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", sorted(value) if isinstance(value, (set, frozenset)) else value


def toml_value(value) -> str:
    """A value as it would be written in linkwrap.toml (None: not set)."""
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(json.dumps(v) for v in value) + "]"
    return json.dumps(value)


def _init(user: bool) -> int:
    from linkwrap.resources import template_text
    target = paths.user_config_file() if user else os.path.join(os.getcwd(), config_mod.FILE_NAME)
    if os.path.exists(target):
        # A refusal, not a usage error: exit 1 as install's are.
        raise LinkwrapError(f"{target} already exists; not overwriting it")
    os.makedirs(os.path.dirname(target), exist_ok=True)
    text = template_text("linkwrap.toml")
    # O_EXCL: never clobber a file that appeared meanwhile.
    with open(target, "x", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {target} (every setting commented out: the defaults)")
    return 0


def _disabled(environ) -> bool:
    from linkwrap.request.invocation import disabled
    return disabled(environ)
