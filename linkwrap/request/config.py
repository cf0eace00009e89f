"""CONFIG: linkwrap.toml (user's, then project's) and LINKWRAP_* variables -> Config.

Input: the LinkRequest (its cwd finds the project file, its output path the
Cargo profile) and the environment. Output: one Config record whose
`sources` says where every value came from (`linkwrap config` prints them).

Layers, later wins: defaults, the user file (paths.user_config_file()), its
[profile.<p>] table, the project file (linkwrap.toml in cwd or the nearest
parent, stopping at a directory holding .git), its [profile.<p>] table, and
the environment (LINKWRAP_LINKER, LINKWRAP_PROFILE, LINKWRAP_INCREMENTAL). docs/policy.md lists the keys.
A LINKWRAP_LINKER that names no linker linkwrap knows is a ConfigError too:
a typo must not quietly mean "the usual choice".

This runs on every link: a server's child that loaded the same files, unchanged since, answers
from its last load(); reading and validating one file is request/config_file.py's (parsed only when
it exists and changed: a warm link imports no TOML parser). A malformed file raises ConfigError
naming file and line (pipeline.py then links as asked).
"""
import os
import stat  # already imported by os: free
from linkwrap.records import record

from linkwrap import cache as cache_mod
from linkwrap import paths
from linkwrap.errors import ConfigError
# One file's reading and its vocabulary (request/config_file.py): what load() layers. The settings'
# callers (the policy, `linkwrap config`, the tests) name them as config.LINKER_NAMES, config.read_file.
from linkwrap.request.config_file import FILE_NAME, LINKER_NAMES, MEMORY_DEFAULTS, RETENTION  # noqa: F401
from linkwrap.request.config_file import parse_text, read_file  # noqa: F401

DEFAULT_PREFER = tuple(n for n in LINKER_NAMES if n != "python")  # linkwrap's own linker only when asked for
DEFAULT = "default"
ENV_LINKER = "env LINKWRAP_LINKER"
ENV_INCREMENTAL = "env LINKWRAP_INCREMENTAL"
ENV_LD_INCREMENTAL = "env LINKWRAP_LD_INCREMENTAL"


class Config(record("Config", [
    "prefer",        # tuple[str]: linker names, most preferred first
    "forbid",        # frozenset[str]
    "forced",        # str | None: LINKWRAP_LINKER, lower-cased; always one of LINKER_NAMES
    "extra_flags",   # dict[str, tuple[str]]: linker name -> extra linker flags
    "in_place",      # bool: allow in-place writes when every safety rule holds
    "record",        # bool: keep per-link records
    "sources",       # dict[str, str]: key -> where its value came from
    "profile",       # str | None: the build profile the overrides were taken for
    "files",         # tuple[str]: configuration files read, user's first
    "ignored",       # tuple[(path, why)]: files not read because another user could have written them
    "retention",     # dict[str, number]: [records] keep_days, max_db_mb, max_spool_mb, max_log_kb, max_learned
    "memory",        # dict: [memory] admission (bool | None = when a limit applies), headroom_mb, max_wait_s
    "learn",         # bool: [choice] learn: learn the fastest linker from an output's relinks
    "save",          # str: [bench] save: "off" | "all" | "largest" (links kept replayable; default "largest")
    "background",    # dict: [bench] background (bool | None = on unless CI or on battery), background_budget_s,
                     # background_quiet_s, background_load (linkwrap/bench/background.py)
    "incremental",   # bool | None: [incremental] enabled, LINKWRAP_INCREMENTAL, LINKWRAP_LD_INCREMENTAL: True forces
                     # incremental relinks (where they may be), False turns them off, None: by measurement
], defaults=(None,))):
    """The settings for one link. Keys of `sources`: prefer, forbid, linker,
    in_place, record, profile, linkers.<name>.extra_flags, records.<key>, memory.<key>."""
    __slots__ = ()


def defaults() -> Config:
    sources = {"prefer": DEFAULT, "forbid": DEFAULT, "linker": DEFAULT, "in_place": DEFAULT,
               "record": DEFAULT, "profile": DEFAULT}
    return Config(DEFAULT_PREFER, frozenset(), None, {}, True, True, sources, None, (), (), dict(RETENTION),
                  dict(MEMORY_DEFAULTS), True, SAVE_DEFAULT, dict(BACKGROUND_DEFAULTS))


# Saving is on by default: each project's few largest outputs stay replayable, so their linkers can be
# measured off the link path (docs/bench.md, "Saved without asking"). LINKWRAP_SAVE=0 turns it off, as
# does a CI job (CI set, as every CI service sets it): nothing measures there, so saving would only
# hold disk; `[bench] save` in a file says otherwise either way.
SAVE_DEFAULT = "largest"
ENV_SAVE = "env LINKWRAP_SAVE"
ENV_CI = "env CI"


def in_ci(environ) -> bool:
    return (environ.get("CI") or "").strip().lower() not in ("", "0", "false", "no")




# [bench] background*: measuring saved links while the machine is idle (linkwrap/bench/background.py).
# budget_s: CPU seconds per output per day; quiet_s: no link for this long first; load: the 1-minute
# load average must stay below this fraction of the usable CPUs.
BACKGROUND_DEFAULTS = {"background": None, "background_budget_s": 120.0, "background_quiet_s": 60.0,
                       "background_load": 0.5}


def load(request=None, environ=None, profile=None) -> Config:
    """The merged configuration for this link.

    profile: (name, source) chosen by the caller (`linkwrap config --profile`),
    which wins over LINKWRAP_PROFILE and the output path. Raises ConfigError for
    a malformed or unreadable file and for an unknown LINKWRAP_LINKER.
    """
    global _last
    environ = os.environ if environ is None else environ
    cwd = getattr(request, "cwd", None) or os.getcwd()
    output = getattr(request, "output", None)
    profile, profile_source = profile or profile_for(output, environ)
    layers = []
    files = []
    cache = []  # the marshal cache, read once per load (only when a file exists)
    user = paths.user_config_file()
    project, _, project_why = _search(cwd)
    # The same files, found the same way, not changed since (content, owner, mode: the change time):
    # the same Config (a server's spare loaded it for the link it rehearsed).
    key = (cwd, profile, profile_source, user, project, project_why, environ.get("LINKWRAP_LINKER"),
           environ.get("LINKWRAP_SAVE"), in_ci(environ), environ.get("LINKWRAP_INCREMENTAL"),
           environ.get("LINKWRAP_LD_INCREMENTAL"))
    last = _last
    if last is not None and last[0] == key and cache_mod.unchanged(last[1]):
        return last[2]
    watched = (user, os.path.dirname(user), project) if project else (user, os.path.dirname(user))
    stamps = cache_mod.stamps(watched)
    ignored = []
    for kind, path in (("user file", user), ("project file", project)):
        if not path or (kind == "project file" and user and _same_file(path, user)):
            continue
        why = project_why if kind == "project file" else untrusted(path)
        if why:
            ignored.append((path, why))
            continue
        table = read_file(path, cache)
        if table is None:
            continue
        files.append(path)
        label = f"{kind} {path}"
        layers.append((label, table))
        for name in profile_tables(profile):
            if name in table.get("profile", {}):
                layers.append((f"{label} [profile.{name}]", table["profile"][name]))
    config = merge(layers, environ, profile, profile_source, tuple(files), tuple(ignored))
    _last = (key, stamps, config)
    return config


# This process's last load(): (its key, the stamps of its files, its Config).
_last = None


def merge(layers, environ, profile=None, profile_source=DEFAULT, files=(), ignored=()) -> Config:
    """Apply validated tables in order (later wins), then the environment. Pure."""
    c = defaults()
    prefer, forbid, in_place, record = c.prefer, c.forbid, c.in_place, c.record
    extra, sources, memory = {}, dict(c.sources), dict(c.memory)
    retention = dict(c.retention)
    learn, save, background, incremental = c.learn, c.save, dict(c.background), c.incremental
    if in_ci(environ):
        save, sources["bench.save"] = "off", ENV_CI
    for label, table in layers:
        for key, value in table.get("records", {}).items():
            retention[key], sources[f"records.{key}"] = value, label
        if "prefer" in table:
            prefer, sources["prefer"] = tuple(table["prefer"]), label
        if "forbid" in table:
            forbid, sources["forbid"] = frozenset(table["forbid"]), label
        if "in_place" in table:
            in_place, sources["in_place"] = table["in_place"], label
        if "record" in table:
            record, sources["record"] = table["record"], label
        if "learn" in table.get("choice", {}):
            learn, sources["choice.learn"] = table["choice"]["learn"], label
        if "save" in table.get("bench", {}):
            save, sources["bench.save"] = table["bench"]["save"], label
        for key in BACKGROUND_DEFAULTS:
            if key in table.get("bench", {}):
                background[key], sources[f"bench.{key}"] = table["bench"][key], label
        if "enabled" in table.get("incremental", {}):
            incremental, sources["incremental.enabled"] = table["incremental"]["enabled"], label
        for name, settings in table.get("linkers", {}).items():
            if "extra_flags" in settings:
                extra[name] = tuple(settings["extra_flags"])
                sources[f"linkers.{name}.extra_flags"] = label
        for name, value in table.get("memory", {}).items():
            memory[name], sources[f"memory.{name}"] = value, label
    if environ.get("LINKWRAP_SAVE") == "0":
        save, sources["bench.save"] = "off", ENV_SAVE
    forced = forced_linker(environ)
    if forced:
        sources["linker"] = ENV_LINKER
    asked = incremental_asked(environ)
    if asked is not None:
        incremental, sources["incremental.enabled"] = asked
    sources["profile"] = profile_source
    return Config(prefer, forbid, forced, extra, in_place, record, sources, profile, files, ignored, retention,
                  memory, learn, save, background, incremental)


def forced_linker(environ) -> str | None:
    """LINKWRAP_LINKER, lower-cased; None when unset or blank; ConfigError when unknown."""
    raw = (environ.get("LINKWRAP_LINKER") or "").strip()
    if not raw:
        return None
    name = raw.lower()
    if name not in LINKER_NAMES:
        shown = raw if raw.isprintable() else repr(raw)[1:-1]  # the message stays one line
        raise ConfigError(f"LINKWRAP_LINKER={shown}: not a linker linkwrap knows ({', '.join(LINKER_NAMES)})")
    return name


# --- which files -----------------------------------------------------------

def find_project_file(cwd: str) -> str | None:
    """linkwrap.toml in cwd or the nearest parent; the search ends at a .git or /.

    For Cargo links rustc runs the linker in the workspace root, so this is the
    workspace's file; for ninja/CMake it is the build directory and upwards.
    Anything named linkwrap.toml counts (lexists): a directory or a dangling
    symlink of that name is an error for read_file, not a reason to read a
    file further up that the user did not mean.

    Another user's file is never read (it can name a linker plugin: code run as
    this user), as git refuses another user's repository: the search stops at
    the first directory not owned by this user or root, and a file that another
    user owns or could have replaced is ignored (None here; load() says why).
    """
    path, _, why = _search(cwd)
    return None if why else path


def search_end(cwd: str) -> str:
    """The last directory find_project_file looks in: the one holding .git, or /."""
    return _search(cwd)[1]


def _search(cwd):
    """-> (nearest linkwrap.toml or None, the last directory searched, why it is untrusted or None)."""
    d = os.path.abspath(cwd)
    me = os.geteuid()
    while True:
        try:
            st = os.stat(d)
        except OSError:
            return None, d, None
        if st.st_uid not in (me, 0):
            return None, d, None
        candidate = os.path.join(d, FILE_NAME)
        if os.path.lexists(candidate):
            return candidate, d, untrusted(candidate, st)
        parent = os.path.dirname(d)
        if parent == d or os.path.exists(os.path.join(d, ".git")):
            return None, d, None
        d = parent


def untrusted(path, dir_st=None) -> str | None:
    """Why another user could have written this configuration file, or None."""
    me = os.geteuid()
    try:
        for st in (os.lstat(path), os.stat(path)):
            if st.st_uid not in (me, 0):
                return f"owned by another user (uid {st.st_uid})"
            if st.st_mode & stat.S_IWOTH and not stat.S_ISLNK(st.st_mode):
                return "writable by other users"
        if dir_st is None:
            dir_st = os.stat(os.path.dirname(path) or ".")
    except OSError:
        return None  # missing or unreadable: read_file says what is wrong
    if dir_st.st_mode & stat.S_IWOTH and not dir_st.st_mode & stat.S_ISVTX:
        return "its directory is writable by other users"
    return None


def _same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


# --- which profile ---------------------------------------------------------

# Cargo writes a profile's outputs as <target-dir>/[<triple>/]<profile>/deps/<file>,
# .../<profile>/examples/<file> and build scripts as .../<profile>/build/<pkg>-<hash>/<file>.
_PROFILE_PARENT = ("deps", "examples")


def profile_for(output, environ) -> tuple:
    """(profile, where it came from): LINKWRAP_PROFILE, else the output path."""
    forced = (environ.get("LINKWRAP_PROFILE") or "").strip()
    if forced:
        return forced, "env LINKWRAP_PROFILE"
    name = profile_of(output)
    return (name, f"output path {output}") if name else (None, DEFAULT)


def profile_of(output) -> str | None:
    """'…/target/debug/deps/foo-1a2b' -> 'debug'; None when the path says nothing."""
    if not output:
        return None
    parts = [p for p in os.path.normpath(output).split(os.sep) if p]
    dirs = parts[:-1]
    if len(dirs) >= 2 and dirs[-1] in _PROFILE_PARENT:
        return dirs[-2]
    if len(dirs) >= 3 and dirs[-2] == "build":
        return dirs[-3]
    for i in range(len(dirs) - 1, -1, -1):
        if dirs[i] == "target" and i + 1 < len(dirs):
            rest = dirs[i + 1:]
            # target/<triple>/<profile>: a target triple has at least two dashes
            if rest[0].count("-") >= 2 and len(rest) > 1:
                return rest[1]
            return rest[0]
    return None


def profile_tables(profile) -> tuple:
    """Cargo's `dev` profile builds into target/debug: [profile.dev] and [profile.debug] both apply."""
    if not profile:
        return ()
    return ("dev", "debug") if profile in ("debug", "dev") else (profile,)


_ON, _OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def incremental_asked(environ):
    """(enabled, source) the environment sets for incremental relinks, or None (the files decide).

    LINKWRAP_INCREMENTAL=0 wins over everything (the way to turn it off for one build); =1 forces
    it; LINKWRAP_LD_INCREMENTAL=1, the variable linkwrap's own linker reads, forces it too (how it was
    asked for before the policy could choose it). Another value is a ConfigError: a typo must not
    quietly mean "by measurement"."""
    raw = (environ.get("LINKWRAP_INCREMENTAL") or "").strip()
    if raw:
        if raw.lower() in _OFF:
            return False, ENV_INCREMENTAL
        if raw.lower() in _ON:
            return True, ENV_INCREMENTAL
        shown = raw if raw.isprintable() else repr(raw)[1:-1]
        raise ConfigError(f"LINKWRAP_INCREMENTAL={shown}: must be 0 (off) or 1 (on); unset, "
                          "the measurements decide")
    if environ.get("LINKWRAP_LD_INCREMENTAL") == "1":
        return True, ENV_LD_INCREMENTAL
    return None
