"""Version scripts (--version-script): which symbols a shared object exports, and under which version.

Input: the script files' text. Output: a VersionScript that answers, per defined global symbol,
whether it stays global and which version node it belongs to. The grammar is GNU ld's
(ld/ldgram.y, "VERSION scripts"):

    { global: a; b*; local: *; };                     an anonymous node (no versions)
    V1 { global: f; local: *; };  V2 { g; } V1;       named nodes; V2 depends on V1

Patterns are globs (`*`, `?`, `[...]`) unless quoted; an exact name wins over a glob, and a
glob other than `*` over `*` (GNU ld's and lld's precedence). `extern "C++"` blocks (demangled
patterns) are named as not supported.
"""
import re
from typing import NamedTuple

from linkwrap.ld.diag import BadInput, Unsupported, read_text


class Node(NamedTuple):
    name: str              # '' for the anonymous node
    index: int             # its version index (2, 3 ...); 1 (global) for the anonymous node
    parents: tuple         # names of the nodes it depends on


_TOKEN = re.compile(r'\s+|/\*.*?\*/|#[^\n]*|"(?:[^"\\]|\\.)*"|[{};:]|[^\s{};:"]+', re.S)


def _tokens(text, path):
    pos = 0
    out = []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise BadInput(f"{path}: syntax error in version script near `{text[pos:pos + 20].strip()}'")
        t = m.group(0)
        pos = m.end()
        if t[0].isspace() or t.startswith(("/*", "#")):
            continue
        out.append(t)
    return out


class VersionScript:
    def __init__(self):
        self.nodes = []            # Node, in script order (named ones get indexes 2, 3 ...)
        self.exact = {}            # name -> (node index into self.nodes, global?)
        self.globs = []            # (pattern, node, global?) other than a lone '*'
        self.star = None           # (node, global?) of a '*' pattern
        self.patterns = []         # (text, node name, global?) of every exact global name, for --no-undefined-version

    def add(self, text, path):
        toks = _tokens(text, path)
        i = 0

        def expect(t):
            nonlocal i
            if i >= len(toks) or toks[i] != t:
                near = toks[i] if i < len(toks) else "end of file"
                raise BadInput(f"{path}: syntax error in version script near `{near}' (expected `{t}')")
            i += 1

        while i < len(toks):
            name = ""
            if toks[i] != "{":
                name = toks[i]
                i += 1
            expect("{")
            node = len(self.nodes)
            glob = True
            while i < len(toks) and toks[i] != "}":
                t = toks[i]
                if t in ("global", "local") and i + 1 < len(toks) and toks[i + 1] == ":":
                    glob = t == "global"
                    i += 2
                    continue
                if t == "extern":
                    lang = toks[i + 1] if i + 1 < len(toks) else ""
                    raise Unsupported(f"extern {lang} block in version script {path}")
                i += 1
                self._pattern(t, node, glob, path)
                expect(";")
            expect("}")
            parents = []
            while i < len(toks) and toks[i] != ";":
                parents.append(toks[i])
                i += 1
            expect(";")
            if not name and (self.nodes or i < len(toks)):
                raise BadInput(f"{path}: anonymous version tag cannot be combined with other version tags")
            if any(n.name == name for n in self.nodes):
                raise BadInput(f"{path}: duplicate version tag `{name}'")
            known = {n.name for n in self.nodes}
            for p in parents:
                if p not in known:
                    raise BadInput(f"{path}: unable to find version dependency `{p}'")
            index = 1 if not name else 2 + sum(1 for n in self.nodes if n.name)
            self.nodes.append(Node(name, index, tuple(parents)))

    def _pattern(self, t, node, glob, path):
        if t.startswith('"'):
            self.exact.setdefault(t[1:-1], (node, glob))
            if glob:
                self.patterns.append((t[1:-1], node))
            return
        if t == "*":
            if self.star is None:
                self.star = (node, glob)
        elif any(c in t for c in "*?["):
            self.globs.append((re.compile(_glob_re(t)), node, glob))
        else:
            self.exact.setdefault(t, (node, glob))
            if glob:
                self.patterns.append((t, node))

    def lookup(self, name):
        """-> (global?, version index) for a defined symbol; (True, 1) when nothing matches."""
        hit = self.exact.get(name)
        if hit is None:
            for rx, node, glob in self.globs:
                if rx.fullmatch(name):
                    hit = (node, glob)
                    break
        if hit is None:
            hit = self.star
        if hit is None:
            return True, 1
        node, glob = hit
        return glob, self.nodes[node].index if glob else 0


def _glob_re(pat):
    out = []
    i = 0
    while i < len(pat):
        c = pat[i]
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            j = pat.find("]", i + 2 if pat[i + 1:i + 2] in ("!", "]") else i + 1)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = pat[i + 1:j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def read(paths) -> VersionScript:
    vs = VersionScript()
    for path in paths:
        vs.add(read_text(path, "version script"), path)
    return vs


class Exports(NamedTuple):
    version: dict          # exported Symbol -> its version index (1: global, no version)
    interposable: frozenset   # the exported Symbols another module may interpose (default visibility)
    script: object         # the VersionScript, or None


def decide_exports(opts, res, diag) -> Exports:
    """A shared object's .dynsym definitions: every defined global of default or protected
    visibility that the version scripts leave global (GNU ld's rule), with its version node."""
    from linkwrap.ld import elf
    from linkwrap.ld.symbol_lists import excluded_from_export, shared_interposable_list
    vs = read(opts.version_script) if opts.version_script else None
    version = {}
    interposable = set()
    listed = shared_interposable_list(opts)
    excluded = excluded_from_export(opts.exclude_libs)
    for name, s in res.symtab.items():
        if s.file is None or s.is_local or not s.defined or s.visibility not in (elf.STV_DEFAULT, elf.STV_PROTECTED):
            continue
        if excluded(s):
            continue      # --exclude-libs: as if hidden (local in .symtab, not exported)
        if "@" in name:
            raise Unsupported(f"symbol version in an object's symbol name (`{name}', .symver)")
        glob, idx = vs.lookup(name) if vs is not None else (True, 1)
        if not glob:
            continue
        version[s] = idx
        if s.visibility != elf.STV_DEFAULT:
            continue
        if listed is not None:
            if listed(name):
                interposable.add(s)
        elif not (opts.bsymbolic == "all" or (
                opts.bsymbolic == "functions" and s.type in (elf.STT_FUNC, elf.STT_GNU_IFUNC))):
            interposable.add(s)
    if vs is not None and opts.no_undefined_version:
        for name, node in vs.patterns:
            s = res.symtab.get(name)
            if s is None or not s.defined or s.dso is not None:
                tag = vs.nodes[node].name if node < len(vs.nodes) else ""
                diag.error(f"version script assignment of `{tag or 'global'}' to symbol `{name}' failed: "
                           f"symbol not defined")
    return Exports(version, frozenset(interposable), vs)
