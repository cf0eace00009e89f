"""Cargo: make `[target.<triple>] linker` point at linkwrap-cc, and undo it.

Input: a .cargo/config.toml (project or $CARGO_HOME), target triples, the
linkwrap-cc path. Output: a marker.Change whose new text differs from the old
only in lines carrying the marker ID, checked with tomllib before it is written.

Edits are line-level: tomlkit renders and reads the lines we write (TOML
strings, keys), but it appends new keys after trailing comments that belong
to the next table, so linkwrap places its lines itself. Each edit has an exact
inverse that needs nothing but the file:
- no such table: a marked block is appended (flags say whether the file/dir
  were new and whether the last line had no newline);
- the table exists without a linker: one marked `linker =` line goes right
  under its header;
- --force over a linker: the line is replaced, the original line kept as a
  JSON string in the marker comment.
"""
import copy
import json
import os
import re
import subprocess
import tomllib

from linkwrap.errors import ConfigError, InstallError
from linkwrap.install import marker
from linkwrap.resources import doc_path

HEADER_RE = re.compile(r"^[ \t]*\[(?!\[)(?P<key>.*?)\][ \t]*(?:#.*)?$")
AOT_RE = re.compile(r"^[ \t]*\[\[")
LINKER_RE = re.compile(r"""^(?P<indent>[ \t]*)(?:linker|"linker"|'linker')[ \t]*=""")
BEGIN_RE = re.compile(r"^# >>> linkwrap \(ID: ([0-9a-f]{16})\) block \[(?P<flags>[a-z -]*)\]")
END_RE = re.compile(r"^# <<< linkwrap \(ID: ([0-9a-f]{16})\)")
LINE_RE = re.compile(r"#\s*linkwrap \(ID: (?P<id>[0-9a-f]{16})\) (?P<how>added|replaced: (?P<was>\".*\"))\s*$")
SCRIPT = "linkwrap-cc"


# ---- where ----

def project_root(start: str) -> str:
    """The workspace root for start: the nearest ancestor whose Cargo.toml has
    [workspace], else the nearest Cargo.toml (Cargo reads .cargo/config.toml
    from the directory it runs in upwards, so the root's config covers all)."""
    here = os.path.abspath(start)
    nearest = None
    while True:
        manifest = os.path.join(here, "Cargo.toml")
        if os.path.isfile(manifest):
            nearest = nearest or here
            if _has_workspace(manifest):
                return here
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    if nearest is None:
        raise InstallError(f"no Cargo.toml in {os.path.abspath(start)} or above\n"
                           "hint: run it inside a Rust project, or pass --path DIR, --global, --cmake or --ninja")
    return nearest


def _has_workspace(manifest: str) -> bool:
    try:
        with open(manifest, "rb") as f:
            return "workspace" in tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError):
        return False


def cargo_home(environ=os.environ) -> str:
    return environ.get("CARGO_HOME") or os.path.join(os.path.expanduser("~"), ".cargo")


def config_file(folder: str) -> str:
    """The config file Cargo reads in folder (a .cargo dir or CARGO_HOME):
    the old extension-less `config` wins when it exists."""
    legacy = os.path.join(folder, "config")
    return legacy if os.path.isfile(legacy) else os.path.join(folder, "config.toml")


def project_config(root: str) -> str:
    return config_file(os.path.join(root, ".cargo"))


def global_config(environ=os.environ) -> str:
    return config_file(cargo_home(environ))


def host_triple() -> str:
    try:
        out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise InstallError(f"cannot ask rustc for the host triple ({e})\nhint: pass --target TRIPLE") from e
    for line in out.splitlines():
        if line.startswith("host:"):
            return line.split(":", 1)[1].strip()
    raise InstallError("`rustc -vV` printed no host line\nhint: pass --target TRIPLE")


# ---- what to write: linkwrap/install/commit.py (the same rule for CMake and ninja) ----

def env_key(triple: str) -> str:
    """Cargo's mangling of a triple in environment names: upper case, `-` and `.` as `_`."""
    return re.sub(r"[-.]", "_", triple).upper()


def check_targets(triples) -> None:
    """Refuse a --target rustc does not know (`rustc --print target-list`); a target file (.json) passes."""
    try:
        out = subprocess.run(["rustc", "--print", "target-list"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise InstallError(f"cannot ask rustc for its targets ({e})\nhint: is rustc on PATH?") from e
    known = set(out.split())
    for triple in triples:
        if triple in known or triple.endswith(".json"):
            continue
        import difflib
        close = difflib.get_close_matches(triple, sorted(known), n=3)
        hint = f"did you mean {' or '.join(close)}?" if close else "`rustc --print target-list` lists them"
        raise InstallError(f"--target {triple}: not a target rustc knows\nhint: {hint}")


# ---- reading ----

def parse(path: str, data: bytes | None) -> dict:
    """tomllib's reading of the file; a malformed file is one line naming file and line."""
    if data is None:
        return {}
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text (byte {e.start}); nothing was changed") from e
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
        where = f"{path}:{m.group(1)}" if m else path
        what = msg[:m.start()].strip() if m else msg
        raise ConfigError(f"{where}: malformed TOML: {what}; nothing was changed") from e


def linker_of(data: dict, triple: str):
    target = data.get("target")
    table = target.get(triple) if isinstance(target, dict) else None
    return table.get("linker") if isinstance(table, dict) else None


def _sections(lines):
    """(line index, key path) of every [table] header; [[array]] headers as None path."""
    for i, line in enumerate(lines):
        if AOT_RE.match(line):
            yield i, None
            continue
        m = HEADER_RE.match(line.rstrip("\r\n"))
        if not m:
            continue
        try:
            d = tomllib.loads(f"[{m.group('key')}]")
        except tomllib.TOMLDecodeError:
            continue
        path = []
        while isinstance(d, dict) and len(d) == 1:
            k, d = next(iter(d.items()))
            path.append(k)
        yield i, tuple(path)


def _table_span(lines, keypath):
    """(header index, end index) of the table headed exactly [keypath], or None."""
    heads = list(_sections(lines))
    for n, (i, path) in enumerate(heads):
        if path == keypath:
            end = heads[n + 1][0] if n + 1 < len(heads) else len(lines)
            return i, end
    return None


# ---- install ----

def _is_driver(linker: str) -> bool:
    """A compiler driver (clang, gcc, a cc wrapper), not a linker that rustc calls as `ld`."""
    name = os.path.basename(linker)
    return not (name in ("ld", "rust-lld", "lld", "mold", "wild") or name.startswith(("ld.", "ld64")))


def _toml_str(value: str) -> str:
    import tomlkit
    return tomlkit.string(value).as_string()


def _toml_key(key: str) -> str:
    import tomlkit
    return tomlkit.key(key).as_string()


def _linker_line(indent: str, linker: str, how: str, eol: str) -> str:
    line = marker.template("cargo-linker-line.toml", linker=_toml_str(linker), id=marker.ID, how=how)
    return indent + line.rstrip("\n") + eol


def plan_install(path: str, triples, linker: str, force: bool = False) -> marker.Change:
    old = marker.read_bytes(path)
    data = parse(path, old)
    text = old.decode("utf-8") if old is not None else ""
    expected = copy.deepcopy(data)
    said = []
    for triple in triples:
        current = linker_of(data, triple)
        if current == linker:
            said.append(f"already installed in {path} for {triple}")
            continue
        if current is not None and os.path.basename(str(current)) == SCRIPT:
            moved = _repoint(text, triple, current, linker)
            if moved is not None:  # linkwrap's own line, from an install elsewhere: follow the move
                text = moved
                expected["target"][triple]["linker"] = linker
                said.append(f"installed in {path} for {triple}: linker = {linker} (was {current})")
                continue
        if current is not None and not force:
            raise InstallError(
                f"{path} already sets a linker for {triple} ({current!r})\n"
                f"hint: `linkwrap install --force` takes it over; `linkwrap uninstall` puts {current!r} back")
        text = _install_one(path, text, old is None, triple, linker, current)
        expected.setdefault("target", {}).setdefault(triple, {})["linker"] = linker
        said.append(f"installed in {path} for {triple}: linker = {linker}"
                    + (f" (was {current!r}; `linkwrap uninstall` puts it back)" if current is not None else ""))
        if current is not None and _is_driver(str(current)):
            said.append(f"note: linkwrap links {triple} through {current!r} as the compiler driver (kept in its "
                        f"marker; LINKWRAP_CC_{env_key(triple)} names another)")
    new = text.encode("utf-8") if text or old is not None else None
    if new != old:
        _check(path, new, expected, exact=True)
    return marker.Change(path, old, new, said)


def _eol(text: str) -> str:
    """The file's own line ending: CRLF when its first line ends so (a Windows-edited file), else LF;
    what linkwrap adds is written in it, so the file stays one style and uninstall gives it back."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def _install_one(path, text, new_file, triple, linker, current) -> str:
    lines = text.splitlines(keepends=True)
    eol = _eol(text)
    keypath = ("target", triple)
    span = _table_span(lines, keypath)
    if current is not None:
        if span:
            for i in range(span[0] + 1, span[1]):
                m = LINKER_RE.match(lines[i])
                if m:
                    body = lines[i].rstrip("\r\n")
                    eol = lines[i][len(body):]
                    how = "replaced: " + json.dumps(body)
                    lines[i] = _linker_line(m.group("indent"), linker, how, eol)
                    return "".join(lines)
        raise InstallError(f"{path}: the linker for {triple} is not a plain `linker = ...` line under "
                           f"[target.{triple}], so linkwrap cannot take it over safely\n"
                           f"hint: remove it by hand, then run `linkwrap install`")
    if span:
        h = span[0]
        # Indent like the table's first key line, if it has one.
        keys = [ln for ln in lines[h + 1:span[1]] if ln.strip() and not ln.lstrip().startswith("#")]
        indent = re.match(r"[ \t]*", keys[0]).group(0) if keys else ""
        if lines[h].endswith("\n"):
            lines.insert(h + 1, _linker_line(indent, linker, "added", lines[h][len(lines[h].rstrip("\r\n")):]))
        else:  # the header is the last line, without a newline: ours carries it instead
            lines.insert(h + 1, eol + _linker_line(indent, linker, "added", ""))
        return "".join(lines)
    # No such table: append the marked block.
    flags = []
    sep = ""
    if new_file:
        flags.append("new-file")
        if not os.path.isdir(os.path.dirname(path)):
            flags.append("new-dir")
    elif text:
        if not text.endswith("\n"):
            flags.append("no-eol")
            sep = eol + eol
        else:
            sep = eol
    block = marker.template("cargo-config.toml", id=marker.ID, flags=" ".join(flags),
                            triple=_toml_key(triple), linker=_toml_str(linker))
    return text + sep + block.replace("\n", eol)  # the template is LF


def _repoint(text, triple, current, linker):
    """text with linkwrap's own linker line for triple pointing at linker, or None if it is not ours."""
    lines = text.splitlines(keepends=True)
    span = _table_span(lines, ("target", triple))
    if not span:
        return None
    blocks = [i for i in range(span[0]) if BEGIN_RE.match(lines[i]) and marker.is_ours(lines[i])]
    in_block = bool(blocks) and blocks[-1] == span[0] - 1
    old_value = _toml_str(current)
    for i in range(span[0] + 1, span[1]):
        if LINKER_RE.match(lines[i]) and (in_block or _line_is_ours(lines[i])) and old_value in lines[i]:
            lines[i] = lines[i].replace(old_value, _toml_str(linker), 1)
            return "".join(lines)
    return None


def _check(path, new: bytes | None, expected: dict, exact: bool) -> None:
    """Re-read what we are about to write; refuse to write anything else."""
    # exact is install's check; uninstall's (not exact) hint is to take linkwrap's lines out, not to set one.
    hint = (f"set `linker` by hand, see {doc_path('install.md')}" if exact else
            "take out the lines marked `linkwrap (ID: …)` by hand (a replaced line's old text is in its marker)")
    try:
        got = tomllib.loads(new.decode("utf-8")) if new is not None else {}
    except tomllib.TOMLDecodeError as e:
        raise InstallError(f"{path}: linkwrap's edit would not be valid TOML ({e}); nothing was changed\n"
                           f"hint: {hint}") from e
    if not exact:
        got, expected = _prune(got), _prune(expected)
    if got != expected:
        raise InstallError(f"{path}: linkwrap's edit would change more than the linker; nothing was changed\n"
                           f"hint: {hint}")


def _prune(d):
    """Empty tables mean nothing to Cargo: compare without them."""
    if not isinstance(d, dict):
        return d
    out = {}
    for k, v in d.items():
        v = _prune(v)
        if v != {}:
            out[k] = v
    return out


# ---- uninstall ----

def plan_uninstall(path: str, triples=None) -> marker.Change:
    """Take out every line linkwrap wrote (for triples, or all), restoring what was there."""
    old = marker.read_bytes(path)
    if old is None:
        return marker.Change(path, None, None, [f"not installed in {path} (no such file)"])
    data = parse(path, old)
    lines = old.decode("utf-8").splitlines(keepends=True)
    expected = copy.deepcopy(data)
    said, delete_file, drop_dir, created = [], False, None, set()

    heads = {i: p for i, p in _sections(lines)}
    out, i = [], 0
    current_table = ()
    while i < len(lines):
        line = lines[i]
        if i in heads:
            current_table = heads[i] or ()
        begin = BEGIN_RE.match(line)
        if begin and begin.group(1) in (marker.ID, *marker.PRIOR_IDS):
            end = next((j for j in range(i + 1, len(lines)) if END_RE.match(lines[j])), None)
            head = heads.get(i + 1)
            triple = head[1] if head and len(head) == 2 and head[0] == "target" else None
            if end is None or triple is None:
                raise InstallError(f"{path}:{i + 1}: linkwrap's block was edited by hand; nothing was changed\n"
                                   "hint: remove the lines between `# >>> linkwrap` and `# <<< linkwrap` yourself")
            if triples and triple not in triples:
                out.extend(lines[i:end + 1])
                i = end + 1
                continue
            flags = begin.group("flags").split()
            inner = lines[i + 1:end]
            if len(inner) == 2 and LINKER_RE.match(inner[1]):
                _drop_path(expected, ("target", triple))
                # The blank line install put before the block (two newlines after a last line without one).
                if out and out[-1] in ("\n", "\r\n"):
                    out.pop()
                    if "no-eol" in flags and out:
                        out[-1] = out[-1].rstrip("\r\n")
                if "new-file" in flags and not out and end + 1 == len(lines):
                    delete_file = True
                    if "new-dir" in flags:
                        drop_dir = os.path.dirname(path)
                else:  # another block came after it (a second target): the file is still ours to remove
                    created |= {f for f in flags if f in ("new-file", "new-dir")}
            else:  # someone added keys inside our block: keep the table and their lines
                out.append(inner[0])
                out.extend(ln for ln in inner[1:] if not (LINKER_RE.match(ln) and _line_is_ours(ln)))
                _drop_path(expected, ("target", triple, "linker"))
            said.append(f"removed the linker for {triple} from {path}")
            i = end + 1
            continue
        m = LINE_RE.search(line)
        if m and m.group("id") in (marker.ID, *marker.PRIOR_IDS) and LINKER_RE.match(line) and current_table:
            triple = current_table[-1]
            if triples and triple not in triples:
                out.append(line)
            elif m.group("how") == "added":
                _drop_path(expected, (*current_table, "linker"))
                if not line.endswith("\n") and out:
                    out[-1] = out[-1].rstrip("\r\n")
                said.append(f"removed the linker for {triple} from {path}")
            else:
                body = json.loads(m.group("was"))
                eol = line[len(line.rstrip("\r\n")):]
                out.append(body + eol)
                was = tomllib.loads(body).get("linker")
                _set_path(expected, (*current_table, "linker"), was)
                said.append(f"restored the linker for {triple} in {path}: {was!r}")
            i += 1
            continue
        out.append(line)
        i += 1
    if not said:
        return marker.Change(path, old, old, [f"not installed in {path}"])
    if created and not delete_file:
        if not "".join(out):
            delete_file = True
            drop_dir = os.path.dirname(path) if "new-dir" in created else None
        else:
            _pass_on(out, created)
    new = None if delete_file else "".join(out).encode("utf-8")
    _check(path, new, {} if delete_file else expected, exact=False)
    if delete_file:  # what the user sees is what happened: the file is gone, not edited
        targets = ", ".join(s.split(" for ", 1)[1].split(" from ", 1)[0] for s in said if s.startswith("removed the linker"))
        said = [f"removed {path}: linkwrap had created it for the linker of {targets}"]
    return marker.Change(path, old, new, said, drop_dir=drop_dir)


def _pass_on(out, created) -> None:
    """Hand the new-file/new-dir flags of a removed block to the first of linkwrap's blocks left, so
    the uninstall that takes out the last one removes the file (and .cargo/) install made."""
    for k, line in enumerate(out):
        begin = BEGIN_RE.match(line)
        if begin and begin.group(1) in (marker.ID, *marker.PRIOR_IDS):
            flags = begin.group("flags").split()
            merged = [f for f in ("new-file", "new-dir") if f in created or f in flags]
            merged += [f for f in flags if f not in merged]
            out[k] = line[:begin.start("flags")] + " ".join(merged) + line[begin.end("flags"):]
            return


def _line_is_ours(line: str) -> bool:
    m = LINE_RE.search(line)
    return bool(m) and m.group("id") in (marker.ID, *marker.PRIOR_IDS)


def _drop_path(d, keypath):
    for k in keypath[:-1]:
        d = d.get(k)
        if not isinstance(d, dict):
            return
    d.pop(keypath[-1], None)


def _set_path(d, keypath, value):
    for k in keypath[:-1]:
        d = d.setdefault(k, {})
    d[keypath[-1]] = value
