"""CONFIG FILE: one linkwrap.toml -> its validated table, and the vocabulary it may use.

request/config.py finds the files and layers their tables; here one file is read and checked.
tomllib costs milliseconds to import, so a file is parsed only when it exists, and its validated
table (or its error) is cached with marshal keyed on its (size, mtime, ctime, inode): a warm link
imports no TOML parser. A malformed or unreadable file raises ConfigError "<path>:<line>: <what>".
Only plain lists, strings, bools and dicts remain in a table, so it can be marshalled.
"""
import os
import stat  # already imported by os: free

from linkwrap import cache as cache_mod
from linkwrap.errors import ConfigError

FILE_NAME = "linkwrap.toml"
# Every linker linkwrap knows, by the name config, policy, records and LINKWRAP_LINKER use: the one
# list. It is the caller's vocabulary (what LINKWRAP_LINKER and linkwrap.toml may name), so it lives
# with the settings; facts/linkers.py finds the ones installed.
LINKER_NAMES = ("mold", "wild", "lld", "rust-lld", "bfd", "gold", "python")
# How much of its own state linkwrap keeps ([records] in linkwrap.toml; 0 = no limit). The spool and
# the fault log are bounded on the link path, links.db by the commands that ingest the spool.
RETENTION = {"keep_days": 90, "max_db_mb": 256, "max_spool_mb": 64, "max_log_kb": 1024, "max_learned": 2000}
# [memory]: admission of links by their predicted memory (linkwrap/choice/admission.py).
MEMORY_DEFAULTS = {"admission": None, "headroom_mb": 64, "max_wait_s": 300.0}
_CACHE_FORMAT = 2
_CACHE_MAX_FILES = 64


# --- reading one file, cached ----------------------------------------------

CACHE_NAME = "config.marshal"


def read_file(path: str, _cache=None):
    """The validated table of one file, None if it does not exist; ConfigError if malformed
    or unreadable (a directory, a dangling symlink, no permission, not UTF-8)."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):  # absent (a parent may be a file)
        if os.path.islink(path):
            raise ConfigError(f"{path}: cannot read: a symbolic link to a missing file") from None
        return None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        # Never open it: a FIFO would block the link.
        what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise ConfigError(f"{path}: cannot read: {what}")
    # inode and ctime too: an edit within one mtime tick, or a file replaced by rename, is still seen
    stamp = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
    if _cache is None:
        _cache = []
    if not _cache:
        _cache.append(_load_cache())
    cache = _cache[0]
    entry = cache["files"].get(path)
    if entry is not None and entry[0] == stamp:
        table, error = entry[1], entry[2]
    else:
        table, error = None, None
        try:
            table = parse_text(_read_text(path), path)
        except ConfigError as e:
            error = str(e)
        # Errors are cached too: a broken file must not cost every link a tomllib import.
        files = cache["files"]
        if len(files) >= _CACHE_MAX_FILES:
            files.clear()
        files[path] = [stamp, table, error]
        _store_cache(cache)
    if error:
        raise ConfigError(error)
    return table


def _read_text(path) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text") from None


def _load_cache() -> dict:
    data = cache_mod.load(CACHE_NAME, _CACHE_FORMAT)
    if not isinstance(data.get("files"), dict):
        data["files"] = {}
    return data


def _store_cache(data) -> None:
    cache_mod.store(CACHE_NAME, data)


# --- parsing and validating ------------------------------------------------

_TOP_KEYS = ("prefer", "forbid", "in_place", "record", "linkers", "records", "memory", "choice", "bench",
             "incremental", "profile")
# Small tables: key -> (allowed values or bool, what the error says it must be).
_SMALL_TABLES = {"choice": {"learn": ((True, False), "true or false")},
                 "incremental": {"enabled": ((True, False), "true or false")},
                 "bench": {"save": (("off", "all", "largest"), '"off", "all" or "largest"'),
                           "background": ((True, False), "true or false"),
                           # a number: (the least it may be, whether that least is allowed)
                           "background_budget_s": ((0, False), "a number of CPU seconds above 0"),
                           "background_quiet_s": ((0, True), "a number of seconds, 0 or more"),
                           "background_load": ((0, False), "a fraction of the usable CPUs above 0")}}


def parse_text(text: str, path: str = FILE_NAME) -> dict:
    """TOML text -> validated table: {prefer, forbid, in_place, record, linkers, profile}.

    Only plain lists, strings, bools and dicts remain, so the result can be
    marshalled. Raises ConfigError "<path>:<line>: <what>".
    """
    import tomllib  # cold path: only on a cache miss
    try:
        raw = tomllib.loads(text)
        return _table(raw, text, path, (), allow_profile=True)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(_toml_error(path, str(e), text)) from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to read") from None
    except (ValueError, TypeError, MemoryError) as e:  # whatever else a parser can raise on odd input
        raise ConfigError(f"{path}: cannot parse: {type(e).__name__}: {e}") from None


def _toml_error(path, message, text) -> str:
    # tomllib says "Invalid value (at line 3, column 9)" or "... (at end of document)".
    what, sep, where = message.rpartition(" (at line ")
    if sep and where.endswith(")"):
        line, _, column = where[:-1].partition(", column ")
        return f"{path}:{line}: {what} (column {column})"
    if message.endswith(" (at end of document)"):
        last = text.count("\n") + (0 if text.endswith("\n") else 1)
        return f"{path}:{max(last, 1)}: {message[:-len(' (at end of document)')]} (at end of file)"
    return f"{path}: {message}"


def _table(raw, text, path, where, allow_profile) -> dict:
    out = {}
    allowed = _TOP_KEYS if allow_profile else _TOP_KEYS[:-1]
    for key, value in raw.items():
        if key not in allowed:
            _fail(text, path, where, key, f"unknown key '{_dotted(where, key)}' (known: {', '.join(allowed)})")
        if key in ("prefer", "forbid"):
            out[key] = _names(value, text, path, where, key)
        elif key in ("in_place", "record"):
            if not isinstance(value, bool):
                _fail(text, path, where, key, f"'{_dotted(where, key)}' must be true or false")
            out[key] = value
        elif key == "linkers":
            out[key] = _linkers(value, text, path, where + (key,))
        elif key == "records":
            out[key] = _records(value, text, path, where + (key,))
        elif key == "memory":
            out[key] = _memory(value, text, path, where + (key,))
        elif key in _SMALL_TABLES:
            out[key] = _small_table(key, value, text, path, where)
        else:
            if not isinstance(value, dict):
                _fail(text, path, where, key, "'profile' must be a table: [profile.<name>]")
            profiles = {}
            for name, sub in value.items():
                if not isinstance(sub, dict):
                    _fail(text, path, where + ("profile",), name, f"'profile.{name}' must be a table")
                profiles[name] = _table(sub, text, path, where + ("profile", name), allow_profile=False)
            out[key] = profiles
    return out


def _names(value, text, path, where, key) -> list:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        _fail(text, path, where, key, f"'{_dotted(where, key)}' must be a list of linker names")
    for v in value:
        if v not in LINKER_NAMES:
            _fail(text, path, where, key, f"'{_dotted(where, key)}': unknown linker '{v}' "
                                           f"(known: {', '.join(LINKER_NAMES)})")
    return list(value)


def _linkers(value, text, path, where) -> dict:
    if not isinstance(value, dict):
        _fail(text, path, where[:-1], where[-1], "'linkers' must be a table: [linkers.<name>]")
    out = {}
    for name, settings in value.items():
        if name not in LINKER_NAMES:
            _fail(text, path, where, name, f"unknown linker '{name}' in [linkers] (known: {', '.join(LINKER_NAMES)})")
        if not isinstance(settings, dict):
            _fail(text, path, where, name, f"'linkers.{name}' must be a table")
        for key, flags in settings.items():
            if key != "extra_flags":
                _fail(text, path, where + (name,), key, f"unknown key '{_dotted(where + (name,), key)}' (known: extra_flags)")
            if not isinstance(flags, list) or not all(isinstance(f, str) and f for f in flags):
                _fail(text, path, where + (name,), key, f"'{_dotted(where + (name,), key)}' must be a list of non-empty strings")
        out[name] = {k: list(v) for k, v in settings.items()}
    return out


def _records(value, text, path, where) -> dict:
    if not isinstance(value, dict):
        _fail(text, path, where[:-1], where[-1], "'records' must be a table: [records]")
    for key, number in value.items():
        if key not in RETENTION:
            _fail(text, path, where, key, f"unknown key '{_dotted(where, key)}' (known: {', '.join(RETENTION)})")
        if isinstance(number, bool) or not isinstance(number, (int, float)) or number < 0:
            _fail(text, path, where, key, f"'{_dotted(where, key)}' must be a number >= 0 (0: no limit)")
    return dict(value)


def _memory(value, text, path, where) -> dict:
    if not isinstance(value, dict):
        _fail(text, path, where[:-1], where[-1], "'memory' must be a table: [memory]")
    for key, v in value.items():
        if key not in MEMORY_DEFAULTS:
            _fail(text, path, where, key, f"unknown key '{_dotted(where, key)}' (known: {', '.join(MEMORY_DEFAULTS)})")
        if key == "admission" and not isinstance(v, bool):
            _fail(text, path, where, key, f"'{_dotted(where, key)}' must be true or false")
        if key == "headroom_mb" and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            _fail(text, path, where, key, f"'{_dotted(where, key)}' must be a whole number of MiB, 0 or more")
        if key == "max_wait_s" and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1e6):
            _fail(text, path, where, key, f"'{_dotted(where, key)}' must be a number of seconds above 0")
    return {k: float(v) if k == "max_wait_s" else v for k, v in value.items()}


def _small_table(name, value, text, path, where) -> dict:
    if not isinstance(value, dict):
        _fail(text, path, where, name, f"'{_dotted(where, name)}' must be a table: [{name}]")
    known = _SMALL_TABLES[name]
    for key, v in value.items():
        if key not in known:
            _fail(text, path, where + (name,), key,
                  f"unknown key '{_dotted(where + (name,), key)}' (known: {', '.join(known)})")
        allowed, words = known[key]
        if isinstance(allowed[0], int) and not isinstance(allowed[0], bool):
            least, may_equal = allowed
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v < 1e9 \
                    or v < least or (v == least and not may_equal):
                _fail(text, path, where + (name,), key, f"'{_dotted(where + (name,), key)}' must be {words}")
            continue
        if type(v) is not type(allowed[0]) or v not in allowed:
            _fail(text, path, where + (name,), key, f"'{_dotted(where + (name,), key)}' must be {words}")
    return dict(value)


def _dotted(where, key) -> str:
    return ".".join((*where, key))


def _fail(text, path, where, key, message):
    raise ConfigError(f"{path}:{line_of(text, where, key)}: {message}")


def line_of(text: str, where: tuple, key: str) -> int:
    """The line that sets `key` in table `where` (best effort; TOML parsers give no positions).

    `key =` under [where] or a dotted `a.key =` under [b] for where=(b, a);
    else the header [where.key]; else line 1.
    """
    table, header_line = "", None
    full = ".".join((*where, key))
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith("["):
            table = _header_name(line)
            if table == full and header_line is None:
                header_line = n
            continue
        lhs, eq, _ = line.partition("=")
        if eq and not line.startswith("#"):
            here = ".".join(p for p in (table, _unquote_key(lhs)) if p)
            if here == full:
                return n
    return header_line or 1


def _header_name(line: str) -> str:
    inner = line.strip("[] \t").split("]")[0]
    return _unquote_key(inner)


def _unquote_key(key: str) -> str:
    return ".".join(p.strip().strip("\"'") for p in key.strip().split("."))
