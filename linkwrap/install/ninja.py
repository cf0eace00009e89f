"""Hand-written ninja files: put linkwrap-launch in front of the driver of every link rule.

Input: a build.ninja's bytes, the linkwrap-launch path, optional rule names.
Output: a marker.Change that inserts `<launcher> ` before the compiler driver
in each link rule's `command` and one marker line (templates/ninja-marker.ninja)
at the top naming those rules; every other byte stays. Uninstall takes out
exactly those insertions. Generated files (CMake, meson, gn) are refused: their
generator would overwrite the edit on its next run.

A rule links when its command runs a C/C++/Fortran compiler driver or ld with
`-o` and without `-c`/`-S`/`-E` (compile-only flags), after expanding the
rule's and the file's variables; `--rule NAME` names them instead.
"""
import os
import re
import shlex

from linkwrap.errors import InstallError
from linkwrap.install import marker
from linkwrap.resources import doc_path

SCRIPT = "linkwrap-launch"
DRIVER_RE = re.compile(
    r"^(?:[\w.+]+-)*(?:cc|c\+\+|gcc|g\+\+|clang|clang\+\+|gfortran|flang(?:-new)?|icx|icpx|ld|ld\.\w+|mold|wild)"
    r"(?:-\d+(?:\.\d+)*)?$")
LAUNCHERS = {"ccache", "sccache", "distcc", "icecc"}
COMPILE_ONLY = {"-c", "-S", "-E", "-M", "-MM"}
MARKER_RE = re.compile(r"^# linkwrap \(ID: ([0-9a-f]{16})\) prefixed link rules: (?P<rules>[^;\n]*);")
RULE_RE = re.compile(r"^rule[ \t]+(?P<name>\S+)[ \t]*$")
BINDING_RE = re.compile(r"^(?P<indent>[ \t]+)(?P<key>[\w.-]+)[ \t]*=[ \t]*")
TOPVAR_RE = re.compile(r"^(?P<key>[\w.-]+)[ \t]*=[ \t]*(?P<value>.*)$")
# linkwrap-launch-python: the Python entry point beside the wheel's native client, named by hand.
PREFIX_RE = re.compile(r"(?:'[^']*linkwrap-launch(?:-python)?'|[^\s']*linkwrap-launch(?:-python)?) ")

# Text a generator writes into its ninja files -> what to do instead.
GENERATED = (
    ("# CMAKE generated file: DO NOT EDIT!", "CMake", "linkwrap install --cmake BUILD_DIR"),
    ("# This file contains all the build statements describing the", "CMake", "linkwrap install --cmake BUILD_DIR"),
    ("# This file contains all the rules used to get the outputs files", "CMake", "linkwrap install --cmake BUILD_DIR"),
    ("rule RERUN_CMAKE", "CMake", "linkwrap install --cmake BUILD_DIR"),
    ("# This is the build file for project", "meson",
     f"meson regenerates build.ninja: make its linker command run linkwrap-launch instead (see {doc_path('install.md')})"),
    ("rule REGENERATE_BUILD", "meson",
     f"meson regenerates build.ninja: make its linker command run linkwrap-launch instead (see {doc_path('install.md')})"),
    ("build build.ninja: gn", "gn", "put linkwrap-launch in the link tools of your gn toolchain instead"),
)


class _Rule:
    def __init__(self, name, line):
        self.name, self.line = name, line   # line: index of `rule NAME`
        self.bindings = {}                  # key -> value text, not expanded
        self.command = None                 # (first physical line index, last index, value start column)


def _logical(lines, i):
    """Index of the last physical line of the logical line starting at i ($ at end continues it)."""
    j = i
    while j < len(lines) and _continues(lines[j]) and j + 1 < len(lines):
        j += 1
    return j


def _continues(line: str) -> bool:
    body = line.rstrip("\r\n")
    n = len(body) - len(body.rstrip("$"))
    return n % 2 == 1


def _value(lines, first, last, col) -> str:
    """A binding's value with continuations joined, as ninja reads it."""
    parts = []
    for k in range(first, last + 1):
        text = lines[k].rstrip("\r\n")
        if k == first:
            text = text[col:]
        else:
            text = text.lstrip(" ")
        if k < last:
            text = text[:-1]
        parts.append(text)
    return "".join(parts)


def parse(text: str):
    """(top-level variables, {rule name: _Rule}, lines)."""
    lines = text.splitlines(keepends=True)
    top, rules = {}, {}
    i = 0
    while i < len(lines):
        line = lines[i]
        last = _logical(lines, i)
        m = RULE_RE.match(line.rstrip("\r\n"))
        if m:
            rule = _Rule(m.group("name"), i)
            rules[rule.name] = rule
            j = last + 1
            while j < len(lines):
                raw = lines[j]
                if not raw.strip() or raw.lstrip().startswith("#"):
                    # Ninja skips blank and comment lines inside a rule only if
                    # indented bindings follow; stop at the first non-indented one.
                    j += 1
                    continue
                b = BINDING_RE.match(raw)
                if not b:
                    break
                end = _logical(lines, j)
                value = _value(lines, j, end, b.end())
                rule.bindings[b.group("key")] = value
                if b.group("key") == "command":
                    rule.command = (j, end, b.end())
                j = end + 1
            i = j
            continue
        t = TOPVAR_RE.match(line.rstrip("\r\n"))
        if t and not line[:1].isspace():
            top[t.group("key")] = _value(lines, i, last, t.start("value"))
        i = last + 1
    return top, rules, lines


def _expand(value: str, scopes, depth=0) -> str:
    if depth > 8:
        return value

    def sub(m):
        tok = m.group(0)
        if tok == "$$":
            return "$"
        if tok in ("$ ", "$:"):
            return tok[1]
        name = m.group(1) or m.group(2)
        for scope in scopes:
            if name in scope:
                return _expand(scope[name], scopes, depth + 1)
        return ""  # $in, $out and build-level variables: unknown here
    return re.sub(r"\$\{([\w.-]+)\}|\$([\w-]+)|\$\$|\$ |\$:", sub, value)


def _segments(text: str):
    """(start offset, segment text) of each shell command in text, split on && || ; |."""
    out, start = [], 0
    for m in re.finditer(r"&&|\|\||;|\|", text):
        out.append((start, text[start:m.start()]))
        start = m.end()
    out.append((start, text[start:]))
    return out


def _driver_word(raw_segment: str, scopes):
    """(offset in raw_segment of the word that runs the driver, driver, tokens) or None."""
    words = list(re.finditer(r"\S+", raw_segment))
    k = 0
    while k < len(words):
        expanded = _split(_expand(words[k].group(0), scopes))
        if not expanded:
            k += 1
            continue
        first = expanded[0]
        if "=" in first and not first.startswith("-") and len(expanded) == 1:
            k += 1  # VAR=value before the command
            continue
        if os.path.basename(first) in LAUNCHERS and len(expanded) == 1:
            k += 1
            continue
        rest = []
        for w in words[k:]:
            rest.extend(_split(_expand(w.group(0), scopes)))
        return words[k].start(), first, rest
    return None


def _split(text: str):
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _link_spot(rule: _Rule, lines, scopes, explicit: bool):
    """(line index, column) where the launcher goes for this rule, 'already' or None."""
    if rule.command is None:
        return None
    first, last, col = rule.command
    # Continuation lines join the value; the launcher goes on its first line.
    value = _value(lines, first, last, col)
    on_first_line = len(lines[first].rstrip("\r\n")) - col
    for start, segment in _segments(value):
        found = _driver_word(segment, scopes)
        if not found:
            continue
        offset, driver, tokens = found
        if start + offset >= on_first_line:
            return None
        name = os.path.basename(driver)
        if name == SCRIPT:
            return "already"
        if explicit:
            return first, col + start + offset
        if not DRIVER_RE.match(name):
            continue
        if "-o" not in tokens and not any(t.startswith("-o") and len(t) > 2 for t in tokens):
            continue
        if any(t in COMPILE_ONLY for t in tokens):
            continue
        return first, col + start + offset
    return None


def generated_by(text: str):
    """(generator, hint) if text was written by a build generator, else None."""
    for needle, who, hint in GENERATED:
        if needle in text:
            return who, hint
    return None


def _prefix(launcher: str) -> str:
    quoted = shlex.quote(launcher).replace("$", "$$")
    return marker.template("ninja-prefix.txt", launcher=quoted)


def _read(path: str, command: str = "install"):
    data = marker.read_bytes(path)
    if data is None:
        raise InstallError(f"{path}: no such file\nhint: name the hand-written ninja file: "
                           + ("`linkwrap status` lists those linkwrap is installed in; linkwrap uninstall --ninja FILE"
                              if command == "uninstall" else "linkwrap install --ninja FILE"))
    try:
        return data, data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InstallError(f"{path}: not UTF-8 text (byte {e.start}); nothing was changed") from e


def _marker_line(lines):
    for i, line in enumerate(lines):
        m = MARKER_RE.match(line)
        if m and m.group(1) in (marker.ID, *marker.PRIOR_IDS):
            return i, m.group("rules").split()
    return None, []


def plan_install(path: str, launcher: str, rule_names=()) -> marker.Change:
    old, text = _read(path)
    gen = generated_by(text)
    if gen:
        who, hint = gen
        raise InstallError(f"{path} was generated by {who}, which would overwrite linkwrap's edit on its next run\n"
                           f"hint: {hint}")
    top, rules, lines = parse(text)
    for name in rule_names:
        if name not in rules:
            raise InstallError(f"{path}: no rule named {name!r} (rules: {', '.join(rules) or 'none'})")
    mark_at, prefixed = _marker_line(lines)
    chosen = list(rule_names) or list(rules)
    spots, already = {}, [r for r in prefixed if r in rules]
    for name in chosen:
        spot = _link_spot(rules[name], lines, (rules[name].bindings, top), explicit=bool(rule_names))
        if spot == "already":
            if name not in already:
                already.append(name)
        elif spot:
            spots[name] = spot
    if not spots and not already:
        raise InstallError(f"{path}: no rule looks like a link (a compiler driver with -o and without -c)\n"
                           "hint: name them: linkwrap install --ninja FILE --rule NAME")
    prefix = _prefix(launcher)
    # Rules linkwrap prefixed before with another value (the absolute path, now the bare name git
    # will commit, or back): the prefix is rewritten, as Cargo's marked line is.
    renamed = []
    for name in prefixed:
        m = _our_prefix(rules.get(name), lines)
        if m and m.group(0) != prefix:
            first = rules[name].command[0]
            lines[first] = lines[first][:m.start()] + prefix + lines[first][m.end():]
            renamed.append(name)
    if not spots and not renamed:
        return marker.Change(path, old, old, [f"already installed in {path} (rules: {' '.join(already)})"])
    for name, (line_no, column) in spots.items():
        line = lines[line_no]
        lines[line_no] = line[:column] + prefix + line[column:]
    # The marker lists only rules linkwrap prefixed itself, so uninstall
    # leaves a launcher someone wrote by hand alone.
    ours = [r for r in prefixed if r in rules] + [r for r in spots if r not in prefixed]
    mark = marker.template("ninja-marker.ninja", id=marker.ID, rules=" ".join(ours))
    if mark_at is not None:
        lines[mark_at] = mark
    else:
        lines.insert(0, mark)
    new = "".join(lines).encode("utf-8")
    said = [f"installed in {path}: rules {' '.join([*spots, *renamed])} now link through {launcher}"]
    return marker.Change(path, old, new, said)


def plan_uninstall(path: str) -> marker.Change:
    old, text = _read(path, "uninstall")
    top, rules, lines = parse(text)
    mark_at, ours = _marker_line(lines)
    if mark_at is None:
        return marker.Change(path, old, old, [f"not installed in {path}"])
    removed = []
    for name in ours:
        m = _our_prefix(rules.get(name), lines)
        if m:
            first = rules[name].command[0]
            lines[first] = lines[first][:m.start()] + lines[first][m.end():]
            removed.append(name)
    del lines[mark_at]
    new = "".join(lines).encode("utf-8")
    return marker.Change(path, old, new, [f"removed linkwrap from {path} (rules: {' '.join(removed) or 'none'})"])


def installed(path: str) -> dict | None:
    """{rules, launcher} if linkwrap's marker is in path, else None (launcher: the word our first
    prefixed rule runs, a path or the bare name, unquoted; None when the prefix was edited away)."""
    data = marker.read_bytes(path)
    if data is None:
        return None
    top, rules, lines = parse(data.decode("utf-8", "replace"))
    at, ours = _marker_line(lines)
    if at is None:
        return None
    spots = [_our_prefix(rules.get(name), lines) for name in ours]
    words = [shlex.split(m.group(0).replace("$$", "$"))[0] for m in spots if m]
    return {"rules": ours, "launcher": words[0] if words else None}


def _our_prefix(rule, lines):
    """The match of linkwrap's prefix on rule's command line, or None."""
    if rule is None or rule.command is None:
        return None
    first, _, col = rule.command
    return PREFIX_RE.search(lines[first], col)
