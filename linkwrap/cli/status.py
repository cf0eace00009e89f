"""`linkwrap status`: where linkwrap is installed, and what would fight it.

Looks at the Cargo project around the current directory (or --path), the
global Cargo config, and every place `linkwrap install` noted (CMake build
directories and presets, ninja files), reading each file again so a hand
edit shows. Output: one line per place, or --json.
"""
import json
import os

from linkwrap.errors import LinkwrapError


def add_arguments(parser) -> None:
    parser.add_argument("--path", metavar="DIR", help="the Rust project to look at (default: around the current directory)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def collect(path=None) -> dict:
    from linkwrap.install import cargo, cargo_checks, cmake, commit, launcher, marker, ninja
    places, warnings, seen, broken, elsewhere = [], [], set(), [], []

    def place(kind, where, found, **details):
        seen.add((kind, os.path.abspath(where)))
        places.append({"kind": kind, "path": os.path.abspath(where), "installed": bool(found), **details})

    def cargo_place(kind, config):
        try:
            found = cargo_checks.installed(config)
        except LinkwrapError as e:
            place(kind, config, False, error=str(e))
            return []
        linkers = sorted({f["linker"] for f in found})
        place(kind, config, found, targets=[f["target"] for f in found],
              marked=all(f["marked"] for f in found) if found else None, exists=os.path.exists(config),
              linkers=linkers, runs={linker: runs(linker) for linker in linkers})
        for linker in sorted({f["linker"] for f in found}):
            why = entry_point_problem(config, linker, triples=[f["target"] for f in found if f["linker"] == linker])
            if why:
                broken.append(why)
            elif os.path.basename(linker) == cargo.SCRIPT:
                from linkwrap.install.trial import other_install
                other = other_install(linker)
                if other:  # linkwrap runs, another install's: said, but no reason to fail a script
                    elsewhere.append(f"{config}: linker = {other}; `linkwrap install` from this one makes it "
                                     "this one's")
        return [f["target"] for f in found]

    def launch_check(where, value, how):
        """A source tree's launcher (a bare name, once committed): would a build here run linkwrap?"""
        if value:
            places[-1]["runs"] = {value: runs(value)}
            why = entry_point_problem(where, value, commit.launcher_written(os.path.basename(value), how))
            if why:
                broken.append(why)

    root = None
    try:
        root = cargo.project_root(path or os.getcwd())
    except LinkwrapError:
        pass
    targets = []
    if root:
        targets += cargo_place("cargo-project", cargo.project_config(root))
    targets += cargo_place("cargo-global", cargo.global_config())
    for entry in marker.remembered():
        kind, where = entry.get("kind"), entry.get("path", "")
        if kind == "cargo":
            if ("cargo-project", where) in seen or ("cargo-global", where) in seen:
                continue
            cargo_place("cargo-project", where)
        elif kind == "cmake-cache":
            found = cmake.cache_installed(where) if os.path.isdir(where) else None
            place(kind, where, found, entries=sorted(found["entries"]) if found else [],
                  marked=found["marked"] if found else None)
            if found:
                from linkwrap.install.trial import _configured_without_us
                broken += _configured_without_us(where)  # a launcher of another linkwrap install
        elif kind == "cmake-presets":
            found = cmake.presets_installed(os.path.dirname(where))
            place(kind, where, found, preset=found["preset"] if found else None)
            launch_check(where, found and found.get("launcher"), "the preset's <LANG>_LINKER_LAUNCHER")
        elif kind == "ninja":
            found = ninja.installed(where)
            place(kind, where, found, rules=found["rules"] if found else [])
            launch_check(where, found and found.get("launcher"), "the link rules' prefix")
    if targets:
        warnings = cargo_checks.fights(sorted(set(targets)), cargo_checks.configs_read(root or os.getcwd()))
    # The entry points `linkwrap install` writes from this interpreter (install/launcher.py).
    scripts = {name: launcher.entry_point(name, write=False) for name in ("linkwrap-cc", "linkwrap-launch")}
    # What a bare `linker = "linkwrap-cc"` runs for a build started from here.
    on_path = {cargo.SCRIPT: commit.on_path(cargo.SCRIPT)}
    from linkwrap.cli.summary import forced_linker_lines   # LINKWRAP_LINKER naming a missing linker
    from linkwrap import paths
    untrusted = paths.untrusted_state()
    if untrusted:  # issue 31: each link then runs as asked, and install refuses
        broken.insert(0, f"{untrusted}: linkwrap's state is not used there (links run as asked, without "
                         "linkwrap); set LINKWRAP_HOME to a directory of your own")
    slow = sorted({r["path"] for p in places for r in (p.get("runs") or {}).values() if r["fast"] is False})
    return {"scripts": scripts, "on_path": on_path, "places": places,
            "warnings": broken + elsewhere + warnings + forced_linker_lines(path), "background": background(path),
            "incremental_bases": incremental_bases(),
            "ok": not broken and not slow, "not_running_linkwrap": broken, "slow_entry_points": slow}


def exit_status(info) -> int:
    """0 when every build found would run linkwrap through the native client; 1 when one would run
    without linkwrap or through the slow Python entry point, so `linkwrap status && cargo build` works
    in scripts and CI (issue 34)."""
    return 0 if info["ok"] else 1


def background(path=None) -> dict:
    """The warm server's background measurements (linkwrap/bench/background.py): off and why, or
    what is queued, running, done and deferred."""
    from linkwrap.bench import background as bg
    from linkwrap.request import config
    state = bg.read_state()
    try:
        setting = config.load(type("Here", (), {"cwd": path or os.getcwd(), "output": None})).background["background"]
    except LinkwrapError:
        setting = None
    # As this shell sees it, else as the server last did (its environment may say CI where this does not).
    off = bg.off_reason(os.environ, setting, bg.on_battery()) or state.get("off")
    running = state.get("running") if bg.running_pid(state) else None
    # Outputs whose results in the measurement cache (what the links follow) were taken while the
    # rest of the machine was busy (bench/load.py): they count, and are measured again when idle.
    # Those of this project (`linkwrap bench` here) and of the projects the background measurer took busy.
    from linkwrap.evidence import measured
    here = os.path.abspath(path or os.getcwd())
    projects = {here} | {d["cwd"] for d in state.get("finished", ()) if (d.get("load") or {}).get("busy")}
    busy = sorted({(r.project, r.output) for p in projects for r in measured.load_rows(p)
                   if r.busy and r.project == p})
    return {"off": off, "queued": list(state.get("queued") or ()), "running": running,
            "done": state.get("done", 0), "last_done_utc": state.get("last_done_utc"),
            "deferred": list(state.get("deferred") or ()), "taken_busy": [o for _, o in busy]}


def background_line(b) -> str:
    if b["off"]:
        return f"off ({b['off']})"
    import time
    parts = [f"queued {len(b['queued'])} saved link{'' if len(b['queued']) == 1 else 's'}"]
    if b["running"]:
        parts.append(f"running {b['running']}")
    last = time.strftime(" (last at %Y-%m-%d %H:%M:%S UTC)", time.gmtime(b["last_done_utc"])) if b["last_done_utc"] else ""
    parts.append(f"done {b['done']}{last}")
    if b["deferred"]:
        parts.append(f"deferred {len(b['deferred'])} (today's CPU budget spent)")
    if b.get("taken_busy"):
        parts.append(f"{len(b['taken_busy'])} taken busy (the rest of the machine used at least the load limit: "
                     "measured again when idle)")
    return ", ".join(parts)


def incremental_bases() -> dict:
    """The bases to patch the warm server builds from saved links (bench/incremental_base.py)."""
    from linkwrap.bench import incremental_base
    from linkwrap.record import base_queue
    last = incremental_base.last_built()
    return {"queued": len(base_queue.wanted()), "last_built_utc": last.get("built_utc") if last else None}


def incremental_bases_line(b) -> str:
    import time
    last = time.strftime("last built %Y-%m-%d %H:%M:%S UTC", time.gmtime(b["last_built_utc"])) \
        if b["last_built_utc"] else "none built yet"
    return f"queued {b['queued']}, {last} (built while the machine is idle, as background measurement runs)"


def runs(linker) -> dict:
    """What a build runs for this linker value: {"path": the file (a bare name looked up on PATH, as
    Cargo does), "fast": the native client (True), a Python script (False), or unknown (None)}."""
    import shutil
    path = shutil.which(linker) if os.sep not in linker else linker
    if path is None or not os.path.exists(path):
        return {"path": path, "fast": None}
    from linkwrap.install import commit
    fast = commit.is_native(path)
    return {"path": path, "fast": fast, "stand_in": not fast and _is_stand_in(path)}


def _is_stand_in(path) -> bool:
    """The wheel's Python stand-in for the native client (scripts/wheel/: built without a C compiler)."""
    try:
        with open(path, "rb") as f:
            return b"Python stand-in for its native client" in f.read(4096)
    except OSError:
        return False


def _runs_text(r) -> str:
    if r is None or r["fast"] is None:
        return ""
    if r["fast"]:
        return f" (runs {r['path']}: the native client, the fast entry point)"
    if r.get("stand_in"):
        return (f" (runs {r['path']}: the Python stand-in linkwrap's wheel ships when no C compiler built its "
                f"native client, ~20 ms a link more; reinstall linkwrap where `cc` works)")
    return (f" (runs {r['path']}: a Python script, ~20 ms a link more than the native client; "
            f"`linkwrap install` says how to run that)")


def entry_point_problem(config, linker, written=None, triples=()):
    """What fails when Cargo (or, given `written`, a ninja rule or CMake preset) runs `linker` from
    `config`, and what repairs it; None when it runs linkwrap."""
    import shutil
    from linkwrap.install import commit, launcher
    fails = written.fails if written else f'Cargo stops with "linker `{linker}` not found" (exit 101)'
    said = written.value if written else f'linker = "{linker}"'
    if os.sep not in linker:  # a bare name: found on PATH, as Cargo finds it
        found = shutil.which(linker)
        if found is None:
            try:
                from linkwrap.install import marker
                where = f"put {os.path.dirname(marker.script_path(linker))} on PATH"
            except LinkwrapError:
                where = f"install linkwrap (`{marker.install_command()}`) so that it is on PATH"
            return (f'{config}: {said} is not on PATH: {fails}; {where}, or run '
                    f"`linkwrap install --absolute` (this machine only)" + without_linkwrap(written, triples))
        if commit.on_path(linker) is None:
            return (f'{config}: {said} runs {found}, which is not linkwrap\'s entry point '
                    f"(or is a version manager's shim): put linkwrap's own bin directory first on PATH")
        linker = found
    if not os.path.lexists(linker):
        return f"{config}: linker = {linker!r} does not exist: {fails}; `linkwrap install` writes it again"
    why = launcher.problem(linker)
    if why:
        return (f"{config}: linker {linker} will not run linkwrap ({why}): links run as asked, without "
                f"linkwrap; `linkwrap install` repairs it")
    return None


def without_linkwrap(written, triples) -> str:
    """How a teammate without linkwrap builds anyway: the environment overrides the committed file
    (Cargo: CARGO_TARGET_<TRIPLE>_LINKER; a launcher: off the command line only by uninstall)."""
    if written or not triples:
        return ""
    from linkwrap.install import cargo
    return "; without linkwrap: " + " ".join(f"CARGO_TARGET_{cargo.env_key(t)}_LINKER=cc" for t in triples) + " cargo build"


LABELS = {"cargo-project": "cargo project", "cargo-global": "cargo global", "cmake-cache": "cmake build dir",
          "cmake-presets": "cmake presets", "ninja": "ninja file"}


def _unwritten(name, info) -> str:
    """Why an entry point script is not there, truthfully for each way install writes."""
    if name == "linkwrap-cc" and info["on_path"].get(name):
        # install then writes the bare name, which PATH resolves: this script is not needed.
        return ("not needed: `linkwrap install` writes the bare name linkwrap-cc, found on PATH; "
                "`linkwrap install --absolute` writes this path instead")
    if name == "linkwrap-cc":
        return "not written yet: `linkwrap install` writes it"
    return "not written yet: `linkwrap install --cmake` or `--ninja` writes it"


def run(args) -> int:
    info = collect(args.path)
    if args.json:
        print(json.dumps(info, indent=2, sort_keys=True))
        return exit_status(info)
    for name, where in info["scripts"].items():
        print(f"{name + ':':17}{where}" + ("" if os.path.exists(where) else f" ({_unwritten(name, info)})"))
    for name, where in info["on_path"].items():
        print(f"{'on PATH:':17}{where or f'no {name} of linkwrap' + chr(39) + 's (install writes absolute paths)'}")
    for p in info["places"]:
        if "error" in p:
            state = f"unreadable: {p['error']}"
        elif not p["installed"]:
            state = "not installed" if p.get("exists", True) else "not installed (no such file)"
        elif p["kind"].startswith("cargo"):
            state = (f"installed for {', '.join(p['targets'])}" + ("" if p.get("marked") else " (set by hand)")
                     + "".join(f"\n{'':17}linker = {linker}{_runs_text(p.get('runs', {}).get(linker))}"
                               for linker in p.get("linkers", [])))
        elif p["kind"] == "cmake-cache":
            state = f"installed ({', '.join(p['entries'])})" + (
                "" if p.get("marked") else " (no marker: set by `linkwrap run`, a preset or by hand)")
        elif p["kind"] == "cmake-presets":
            state = f"installed (preset {p['preset']!r})"
        else:
            state = f"installed (rules: {' '.join(p['rules'])})"
        print(f"{LABELS[p['kind']]:16} {p['path']}: {state}")
    print(f"Background measurement: {background_line(info['background'])}")
    if info["incremental_bases"]["queued"] or info["incremental_bases"]["last_built_utc"]:
        print(f"Incremental bases: {incremental_bases_line(info['incremental_bases'])}")
    for w in info["warnings"]:
        print(f"warning: {w}")
    if not info["ok"]:
        print("status: exit 1: " + ("a build would not run linkwrap" if info["not_running_linkwrap"] else
                                    "a build would run the slow Python entry point (see above)"))
    return exit_status(info)
