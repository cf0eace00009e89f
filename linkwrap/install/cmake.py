"""CMake: link through linkwrap-launch via CMAKE_<LANG>_LINKER_LAUNCHER (CMake >= 3.21).

Two places, chosen by what the directory is:
- a build directory (has CMakeCache.txt): `cmake -D...=<launcher> <dir>` sets
  the cache entries of the enabled languages; what each entry was (absent, or
  its type and value) is kept in the cache entry LINKWRAP_INSTALL:INTERNAL,
  so `uninstall` runs `cmake -U.../-D...=<old>` and the entries are as before;
- a source directory (has CMakeLists.txt): a preset named "linkwrap"
  (templates/cmake-preset.json) goes into CMakeUserPresets.json. The file's
  text is edited, not re-serialised, so every other byte stays; the preset's
  `vendor.linkwrap` object says what install added, which is all uninstall needs.
Input: the directory, the linkwrap-launch path. Output: CacheChange / marker.Change.
"""
import json
import os
import re
import shutil
import subprocess

from linkwrap.errors import ConfigError, InstallError
from linkwrap.install import marker

SCRIPT = "linkwrap-launch"
STATE = "LINKWRAP_INSTALL"
PRESETS = "CMakeUserPresets.json"
PRESET_NAME = "linkwrap"
# Languages whose <LANG>_LINKER_LAUNCHER CMake honours, from which version.
LANGS = (("C", (3, 21)), ("CXX", (3, 21)), ("OBJC", (3, 21)), ("OBJCXX", (3, 21)),
         ("Fortran", (4, 1)), ("CUDA", (4, 1)), ("HIP", (4, 1)))
CACHE_RE = re.compile(r'^(?:"(?P<qname>[^"]*)"|(?P<name>[^:=\s#/][^:=]*)):(?P<type>[A-Z]+)=(?P<value>.*)$')


def classify(folder: str, command: str = "install") -> str:
    """'build' or 'source' (a directory with both is an in-source build: its cache wins)."""
    if os.path.isfile(os.path.join(folder, "CMakeCache.txt")):
        return "build"
    if os.path.isfile(os.path.join(folder, "CMakeLists.txt")):
        return "source"
    hint = ("`linkwrap status` lists where linkwrap is installed; then linkwrap uninstall --cmake DIR"
            if command == "uninstall" else "linkwrap install --cmake DIR")
    raise InstallError(f"{folder} has neither CMakeCache.txt nor CMakeLists.txt\n"
                       f"hint: pass a CMake build directory or source directory: {hint}")


# ---- build directory: cache entries ----

def read_cache(builddir: str) -> dict:
    """{name: (type, value)} of CMakeCache.txt."""
    path = os.path.join(builddir, "CMakeCache.txt")
    entries = {}
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                m = CACHE_RE.match(line.rstrip("\r\n"))
                if m:
                    entries[m.group("qname") or m.group("name")] = (m.group("type"), m.group("value"))
    except OSError as e:
        raise InstallError(f"{path}: cannot read: {e.strerror}") from e
    return entries


def _cache_version(cache) -> tuple:
    try:
        return int(cache["CMAKE_CACHE_MAJOR_VERSION"][1]), int(cache["CMAKE_CACHE_MINOR_VERSION"][1])
    except (KeyError, ValueError):
        return (0, 0)


def _state(cache):
    raw = cache.get(STATE, (None, None))[1]
    if not raw:
        return None
    try:
        state = json.loads(raw)
    except ValueError:
        return None
    return state if isinstance(state, dict) and state.get("id") in (marker.ID, *marker.PRIOR_IDS) else None


class CacheChange:
    """The cmake arguments that install or uninstall, and what to say."""

    def __init__(self, builddir, cmake, args, said):
        self.path, self.cmake, self.args, self.said = builddir, cmake, list(args), list(said)

    @property
    def changes_anything(self) -> bool:
        return bool(self.args)

    def command(self) -> list:
        return [self.cmake, *self.args, self.path]

    def apply(self) -> None:
        if not self.args:
            return
        proc = subprocess.run(self.command(), capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise InstallError(f"`{' '.join(self.command())}` failed (exit {proc.returncode}): {' / '.join(tail)}")


def _enabled(builddir, cache, lang) -> bool:
    """The project enabled lang: its compiler is cached, or, when a toolchain file set it (cross
    builds: a plain variable, not cached), CMake wrote CMakeFiles/<version>/CMake<LANG>Compiler.cmake."""
    if f"CMAKE_{lang}_COMPILER" in cache:
        return True
    import glob
    return bool(glob.glob(os.path.join(glob.escape(builddir), "CMakeFiles", "*", f"CMake{lang}Compiler.cmake")))


def plan_cache_install(builddir: str, launcher: str, force: bool = False) -> CacheChange:
    cache = read_cache(builddir)
    version = _cache_version(cache)
    if version < (3, 21):
        raise InstallError(f"{builddir} was configured by CMake {version[0]}.{version[1]}; "
                           "CMAKE_<LANG>_LINKER_LAUNCHER needs CMake 3.21 or newer\n"
                           "hint: upgrade CMake, or use `linkwrap install --ninja` on a hand-written build.ninja")
    cmake = cache.get("CMAKE_COMMAND", (None, None))[1] or shutil.which("cmake") or "cmake"
    state = _state(cache) or {"id": marker.ID, "entries": {}}
    langs = [lang for lang, since in LANGS if version >= since and _enabled(builddir, cache, lang)]
    if not langs:
        raise InstallError(f"{builddir}: no C, C++ or Fortran compiler in CMakeCache.txt\n"
                           "hint: configure the project first: cmake -S SRC -B BUILD")
    args, said, taken = [], [], []
    for lang in langs:
        name = f"CMAKE_{lang}_LINKER_LAUNCHER"
        current = cache.get(name)
        if current and current[1] == launcher:
            continue
        if name in state["entries"]:  # ours, pointing at an older linkwrap: just update it
            args.append(f"-D{name}:STRING={launcher}")
            continue
        if current and current[1] and not force:
            raise InstallError(f"{builddir}: {name} is already {current[1]!r}\n"
                               f"hint: `linkwrap install --cmake {_q(builddir)} --force` takes it over; "
                               "`linkwrap uninstall --cmake` puts it back")
        state["entries"][name] = list(current) if current else None
        args.append(f"-D{name}:{current[0] if current else 'STRING'}={launcher}")
        taken.append(lang)
        if current and current[1]:
            said.append(f"{name} was {current[1]!r}; `linkwrap uninstall --cmake` puts it back")
    if not args:
        return CacheChange(builddir, cmake, [], [f"already installed in {builddir} ({', '.join(langs)})"])
    args.append(f"-D{STATE}:INTERNAL={json.dumps(state, sort_keys=True, separators=(',', ':'))}")
    said.insert(0, f"installed in the CMake build directory {builddir}: "
                   f"{', '.join(taken) or ', '.join(langs)} links run through {launcher}")
    return CacheChange(builddir, cmake, args, said)


def plan_cache_uninstall(builddir: str, set_by: str = "") -> CacheChange:
    """set_by: who set an unmarked launcher, where the caller knows (the preset that configured the
    directory); without it the message names the ways it can have been set."""
    cache = read_cache(builddir)
    cmake = cache.get("CMAKE_COMMAND", (None, None))[1] or shutil.which("cmake") or "cmake"
    state = _state(cache)
    if state is None:
        # No marker, yet linkwrap's launcher: set by `linkwrap run`, a preset or by hand. Every such
        # entry holds linkwrap-launch alone, so taking it out leaves the directory linking as plain CMake.
        ours = unmarked_launchers(cache)
        if not ours:
            return CacheChange(builddir, cmake, [], [f"not installed in {builddir}"])
        return CacheChange(builddir, cmake, [f"-U{name}" for name in ours],
                           [f"removed linkwrap's launcher from the CMake build directory {builddir} "
                            f"({', '.join(ours)}; "
                            + (f"set by {set_by}); the directory and its build stay yours"
                               if set_by else "set without `linkwrap install`: by `linkwrap run`, a preset or by hand)")])
    args = []
    for name, old in sorted(state.get("entries", {}).items()):
        if old is None:
            args.append(f"-U{name}")
        else:
            args.append(f"-D{name}:{old[0]}={old[1]}")
    args.append(f"-U{STATE}")
    return CacheChange(builddir, cmake, args, [f"removed linkwrap from the CMake build directory {builddir}"])


def unmarked_launchers(cache) -> list:
    """The *_LINKER_LAUNCHER entries that run linkwrap-launch and nothing else."""
    return sorted(name for name, (_, value) in cache.items()
                  if name.endswith("_LINKER_LAUNCHER") and ";" not in value
                  and os.path.basename(value) == SCRIPT)


def check_generated(builddir: str, launcher: str) -> list[str]:
    """Warnings when the generated link rules do not run the launcher (the project overrides it)."""
    rules = os.path.join(builddir, "CMakeFiles", "rules.ninja")
    try:
        with open(rules, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return []
    link_rules = re.findall(r"^rule (\w+_(?:EXECUTABLE|SHARED_LIBRARY|MODULE)_LINKER__\S+)", text, re.M)
    if link_rules and launcher not in text:
        return [f"{rules}: the link rules do not run {launcher}: the project sets <LANG>_LINKER_LAUNCHER itself"]
    return []


def cache_installed(builddir: str) -> dict | None:
    try:
        cache = read_cache(builddir)
    except InstallError:
        return None
    found = {name: value for name, (_, value) in cache.items()
             if name.endswith("_LINKER_LAUNCHER") and os.path.basename(value.split(";")[0]) == SCRIPT}
    if not found:
        return None
    return {"entries": found, "marked": _state(cache) is not None}


# ---- source directory: CMakeUserPresets.json ----

_WS = re.compile(r"[ \t\n\r]*")
_decoder = json.JSONDecoder()


def _skip(text, i):
    return _WS.match(text, i).end()


def _members(text, open_at):
    """[(key, member start, value start, value end)] of the object whose '{' is at open_at, and its '}' index."""
    out, i = [], _skip(text, open_at + 1)
    if text[i] == "}":
        return out, i
    while True:
        start = i
        key, i = _decoder.raw_decode(text, i)
        i = _skip(text, i) + 1  # ':'
        vstart = _skip(text, i)
        _, vend = _decoder.raw_decode(text, vstart)
        out.append((key, start, vstart, vend))
        i = _skip(text, vend)
        if text[i] == "}":
            return out, i
        i = _skip(text, i + 1)  # ','


def _elements(text, open_at):
    """[(start, end)] of the array whose '[' is at open_at, and its ']' index."""
    out, i = [], _skip(text, open_at + 1)
    if text[i] == "]":
        return out, i
    while True:
        _, end = _decoder.raw_decode(text, i)
        out.append((i, end))
        i = _skip(text, end)
        if text[i] == "]":
            return out, i
        i = _skip(text, i + 1)


def _indent_before(text, pos) -> str | None:
    line_start = text.rfind("\n", 0, pos) + 1
    lead = text[line_start:pos]
    return lead if lead.strip() == "" else None


def _unit(text) -> str:
    m = re.search(r"\n([ \t]+)\S", text)
    return m.group(1) if m else "  "


def _render(obj, indent: str, unit: str) -> str:
    body = json.dumps(obj, indent=len(unit) if unit.strip(" ") == "" else unit)
    return body.replace("\n", "\n" + indent)


def _load_json(path, text):
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}:{e.lineno}: malformed JSON: {e.msg}; nothing was changed") from e


def cmake_version() -> tuple:
    try:
        out = subprocess.run(["cmake", "--version"], capture_output=True, text=True).stdout
        m = re.search(r"version (\d+)\.(\d+)", out)
        return (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    except OSError:
        return (0, 0)


def _preset(launcher: str, inherits: str | None, version: int, added_key: bool, new_file: bool) -> dict:
    text = marker.template("cmake-preset.json", launcher=json.dumps(launcher)[1:-1], id=marker.ID)
    preset = json.loads(text)
    if cmake_version() >= (4, 1):
        preset["cacheVariables"]["CMAKE_Fortran_LINKER_LAUNCHER"] = launcher
    if inherits:
        preset.pop("binaryDir", None)
        preset = {"name": preset["name"], "inherits": inherits, **{k: v for k, v in preset.items() if k != "name"}}
    elif version < 3:  # presets before version 3 must name a generator
        preset["generator"] = "Ninja" if shutil.which("ninja") else "Unix Makefiles"
    flags = preset["vendor"]["linkwrap"]
    if added_key:
        flags["addedConfigurePresets"] = True
    if new_file:
        flags["createdFile"] = True
    return preset


def _ours(preset) -> bool:
    vendor = preset.get("vendor") if isinstance(preset, dict) else None
    mine = vendor.get("linkwrap") if isinstance(vendor, dict) else None
    return isinstance(mine, dict) and mine.get("id") in (marker.ID, *marker.PRIOR_IDS)


def _project_presets_version(srcdir) -> int:
    try:
        with open(os.path.join(srcdir, "CMakePresets.json"), encoding="utf-8") as f:
            return int(json.load(f).get("version", 3))
    except (OSError, ValueError, AttributeError, TypeError):
        return 3


def _other_names(srcdir) -> set:
    try:
        with open(os.path.join(srcdir, "CMakePresets.json"), encoding="utf-8") as f:
            data = json.load(f)
        return {p.get("name") for p in data.get("configurePresets", []) if isinstance(p, dict)}
    except (OSError, ValueError, AttributeError):
        return set()


def plan_presets_install(srcdir: str, launcher: str, inherits: str | None = None) -> marker.Change:
    path = os.path.join(srcdir, PRESETS)
    old = marker.read_bytes(path)
    if PRESET_NAME in _other_names(srcdir):
        raise InstallError(f"{os.path.join(srcdir, 'CMakePresets.json')} already has a configure preset "
                           f"named {PRESET_NAME!r}\nhint: add CMAKE_C_LINKER_LAUNCHER={launcher} to it by hand")
    if old is None:
        version = max(3, _project_presets_version(srcdir))
        text = marker.template("cmake-user-presets.json", version=str(version))
        new_file = True
    else:
        text = old.decode("utf-8")
        new_file = False
    data = _load_json(path, text)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: not a JSON object; nothing was changed")
    presets = data.get("configurePresets", [])
    for p in presets if isinstance(presets, list) else []:
        if isinstance(p, dict) and p.get("name") == PRESET_NAME:
            if _ours(p) and p.get("cacheVariables", {}).get("CMAKE_C_LINKER_LAUNCHER") == launcher:
                return marker.Change(path, old, old, [f"already installed in {path} (preset {PRESET_NAME!r})"])
            if _ours(p):
                raise InstallError(f"{path}: the {PRESET_NAME!r} preset points at another linkwrap\n"
                                   f"hint: `linkwrap uninstall --cmake {_q(srcdir)}` first, then install again")
            raise InstallError(f"{path} already has a configure preset named {PRESET_NAME!r}\n"
                               f"hint: add CMAKE_C_LINKER_LAUNCHER={launcher} to it by hand")
    version = int(data.get("version", 3)) if isinstance(data.get("version"), int) else 3
    unit = _unit(text)
    top_open = _skip(text, 0)
    members, top_close = _members(text, top_open)
    keys = {k: (s, vs, ve) for k, s, vs, ve in members}
    if "configurePresets" in keys:
        _, vs, _ = keys["configurePresets"]
        elements, close = _elements(text, vs)
        preset = _preset(launcher, inherits, version, added_key=False, new_file=new_file)
        if elements:
            indent = _indent_before(text, elements[0][0])
            indent = unit * 2 if indent is None else indent
            insert = "\n" + indent + _render(preset, indent, unit) + ","
        else:
            key_indent = _indent_before(text, keys["configurePresets"][0]) or ""
            indent = key_indent + unit
            insert = "\n" + indent + _render(preset, indent, unit) + "\n" + key_indent
        new_text = text[:vs + 1] + insert + text[vs + 1:]
    else:
        preset = _preset(launcher, inherits, version, added_key=True, new_file=new_file)
        key_indent = _indent_before(text, members[0][1]) if members else unit
        key_indent = unit if key_indent is None else key_indent
        indent = key_indent + unit
        member = ('"configurePresets": [\n' + indent + _render(preset, indent, unit) + "\n" + key_indent + "]")
        insert = "\n" + key_indent + member + ("," if members else "\n")
        new_text = text[:top_open + 1] + insert + text[top_open + 1:]
    # Re-read what we are about to write: it must be the old presets plus ours.
    got = _load_json(path, new_text)
    expected = dict(data)
    expected["configurePresets"] = [preset, *(presets if isinstance(presets, list) else [])]
    if got != expected:
        raise InstallError(f"{path}: linkwrap's edit would change more than its preset; nothing was changed\n"
                           f"hint: add a preset with CMAKE_C_LINKER_LAUNCHER={launcher} by hand")
    where = "the inherited binaryDir" if inherits else os.path.join(srcdir, "build", "linkwrap")
    said = [f"installed in {path}: configure preset {PRESET_NAME!r} links through {launcher}",
            f"use it: cmake --preset {PRESET_NAME}, then build in {where}"]
    return marker.Change(path, old, new_text.encode("utf-8"), said)


def plan_presets_uninstall(srcdir: str) -> marker.Change:
    path = os.path.join(srcdir, PRESETS)
    old = marker.read_bytes(path)
    if old is None:
        return marker.Change(path, None, None, [f"not installed in {srcdir} (no {PRESETS})"])
    text = old.decode("utf-8")
    data = _load_json(path, text)
    top_open = _skip(text, 0)
    members, _ = _members(text, top_open)
    keys = {k: (s, vs, ve) for k, s, vs, ve in members}
    if "configurePresets" not in keys:
        return marker.Change(path, old, old, [f"not installed in {path}"])
    _, vs, ve = keys["configurePresets"]
    elements, close = _elements(text, vs)
    presets = data["configurePresets"]
    mine = [n for n, p in enumerate(presets) if _ours(p)]
    if not mine:
        return marker.Change(path, old, old, [f"not installed in {path}"])
    n = mine[0]
    flags = presets[n]["vendor"]["linkwrap"]
    start, end = elements[n]
    if len(elements) == 1 and flags.get("addedConfigurePresets"):
        # Take out the whole member, as install put it in.
        idx = [k for k, *_ in members].index("configurePresets")
        after = _skip(text, ve)
        if idx == 0:  # install puts it first: `{`, the member, its comma (or nothing else)
            new_text = text[:top_open + 1] + text[after + 1 if text[after] == "," else after:]
        else:
            new_text = text[:text.rfind(",", 0, members[idx][1])] + text[ve:]
    elif len(elements) == 1:
        new_text = text[:vs + 1] + text[close:]
    elif n + 1 < len(elements):
        # `[` or the comma before it, ours, its comma: exactly what install inserted.
        cut_from = vs + 1 if n == 0 else text.rfind(",", 0, start) + 1
        cut_to = text.index(",", end) + 1
        new_text = text[:cut_from] + text[cut_to:]
    else:  # ours is last: take it with the comma before it
        cut_from = text.rfind(",", 0, start)
        new_text = text[:cut_from] + text[end:]
    rest = _load_json(path, new_text)
    expected = dict(data)
    expected["configurePresets"] = [p for k, p in enumerate(presets) if k != n]
    if flags.get("addedConfigurePresets") and not expected["configurePresets"]:
        del expected["configurePresets"]
    if rest != expected:
        raise InstallError(f"{path}: cannot take linkwrap's preset out cleanly; nothing was changed\n"
                           f"hint: delete the {PRESET_NAME!r} configure preset by hand")
    said = [f"removed the {PRESET_NAME!r} preset from {path}"]
    if flags.get("createdFile") and set(rest) <= {"version", "configurePresets"} and not rest.get("configurePresets"):
        return marker.Change(path, old, None, said + [f"removed {path} (linkwrap created it)"])
    return marker.Change(path, old, new_text.encode("utf-8"), said)


def presets_installed(srcdir: str) -> dict | None:
    path = os.path.join(srcdir, PRESETS)
    data = marker.read_bytes(path)
    if data is None:
        return None
    try:
        presets = json.loads(data).get("configurePresets", [])
    except (ValueError, AttributeError):
        return None
    for p in presets:
        if _ours(p):
            return {"preset": p.get("name"), "launcher": p.get("cacheVariables", {}).get("CMAKE_C_LINKER_LAUNCHER")}
    return None


def preset_build_dir(srcdir: str) -> str | None:
    """The build directory `cmake --preset linkwrap` configures (its binaryDir, or the inherited
    preset's), when the presets say it plainly; None when a macro only CMake can expand is in it."""
    srcdir = os.path.abspath(srcdir)
    presets = {}
    for name in ("CMakePresets.json", PRESETS):  # the user's file may use the project's presets
        try:
            with open(os.path.join(srcdir, name), encoding="utf-8") as f:
                found = json.load(f).get("configurePresets", [])
        except (OSError, ValueError, AttributeError):
            continue
        for p in found if isinstance(found, list) else []:
            if isinstance(p, dict) and isinstance(p.get("name"), str):
                presets.setdefault(p["name"], p)
    preset, seen = presets.get(PRESET_NAME), set()
    while isinstance(preset, dict) and "binaryDir" not in preset and preset.get("name") not in seen:
        seen.add(preset.get("name"))
        parent = preset.get("inherits")
        parent = parent[0] if isinstance(parent, list) and parent else parent
        preset = presets.get(parent) if isinstance(parent, str) else None
    binary = preset.get("binaryDir") if isinstance(preset, dict) else None
    if not isinstance(binary, str):
        return None
    macros = {"sourceDir": srcdir, "sourceParentDir": os.path.dirname(srcdir),
              "sourceDirName": os.path.basename(srcdir), "presetName": PRESET_NAME}
    expanded = re.sub(r"\$\{(\w+)\}", lambda m: macros.get(m.group(1), m.group(0)), binary)
    if "${" in expanded or "$env{" in expanded or "$penv{" in expanded:
        return None
    return os.path.normpath(os.path.join(srcdir, expanded))


def configured_from(builddir: str, srcdir: str) -> bool:
    """builddir holds a cache of srcdir's project that runs linkwrap-launch."""
    try:
        cache = read_cache(builddir)
    except InstallError:
        return False
    home = cache.get("CMAKE_HOME_DIRECTORY", (None, ""))[1]
    return (bool(home) and os.path.realpath(home) == os.path.realpath(srcdir)
            and bool(unmarked_launchers(cache) or _state(cache)))


def _q(path) -> str:
    """A path as a shell would need it in a command the user copies (spaces, quotes)."""
    import shlex
    return shlex.quote(str(path))
