"""ARGS: the cc-style command line rustc (or a build system) hands over -> LinkRequest.

Never rejects anything: unknown flags are passed through untouched. What it
does take out is what rustc >= 1.90 injects to force its bundled rust-lld
(`-fuse-ld=lld` and `-B<sysroot>/lib/rustlib/<triple>/bin/gcc-ld`), because the
policy, not rustc, now picks the linker; it remembers where rust-lld was. A
-fuse-ld= after that pair is the caller's own (`-C link-arg=-fuse-ld=bfd`: rustc puts
link-args after its own arguments, and gcc takes the last -fuse-ld=): it is taken out too,
and it, not rustc's default, is what the line asks for (rustc_forces_lld()).

Records are linkwrap.records.record types (namedtuple's interface), not frozen
dataclasses: this module runs on every link and `import dataclasses` alone costs
~15 ms here (docs/hot-path.md, "The import budget").
"""
import os
from linkwrap.errors import UsageError
from linkwrap.records import record


class LinkRequest(record("LinkRequest", [
    "argv",        # tuple[str]: the arguments exactly as received (@files unexpanded)
    "args",        # tuple[str]: expanded, minus rustc's linker-forcing arguments
    "driver",      # str: the cc driver to run: the launcher's, else the target's (target.driver_for)
    "output",      # str | None: absolute path of -o
    "kind",        # "pie" | "exec" | "shared" | "relocatable" | "static" | "static-pie"
    "inputs",      # tuple[str]: input files named on the command line
    "fuse_ld",     # str | None: the -fuse-ld= value the caller asked for ("lld" from rustc)
    "rust_lld",    # str | None: rust-lld binary learnt from the injected -B…/gcc-ld
    "removed",     # tuple[str]: arguments taken out, in order
    "used_response_file",  # bool: the caller passed @file (keep passing one: ARG_MAX)
    "cwd",         # str
    "target",      # str | None: a Rust link's target triple, or a prefixed driver's (aarch64-linux-gnu)
    "own_linker",  # str | None: how the command line names its own linker binary (-B dir with an ld,
                   # --ld-path=, -fuse-ld=/path): the caller's choice, linked as asked
    "overrides_rustc",  # bool: fuse_ld is the caller's, after rustc's injected pair (which it outranks)
], defaults=(False,))):
    """One link, as asked for. Immutable; every later stage reads it."""
    __slots__ = ()


class ArgsError(UsageError):
    """An @response file could not be read: the command line's own fault (explain says it as an error)."""


# This process's last parse() of a command line that reads no file (its key, its request, rustc's
# temporary directory in it): a server's spare rehearsed the last link (server/warm.rehearse()), and a build
# relinks the same output again and again. What the answer depends on beyond argv and cwd -- the Cargo
# configuration and the variables that name the driver -- is asked again every time (driver_for).
_last = None


def rustc_temp_dir(argv):
    """The directory rustc made for this link alone (`<out dir>/rustcXXXXXX/`, its symbols.o's and
    raw-dylibs'), with its slash; None when there is none. Its name is new every link, and nothing
    parse() or direct.split() decide depends on it: a link again but for that name is the same link."""
    for a in argv:
        if a[-10:] == "/symbols.o":
            d = a[:-9]
            if d[d.rfind("/", 0, -1) + 1:].startswith("rustc"):
                return d
            return None
    return None


def renamed(strings, old, new) -> tuple:
    """strings with the directory old (rustc_temp_dir()) named new where an argument names it: at
    its start, or after an option's own letters (`-L`, `-Wl,-rpath,`). Anywhere else (`lib<old>`,
    `/elsewhere/<old>`) it is part of another name, kept as it is (and so in the key: that link must
    come again exactly for the kept answer to serve)."""
    if old == new or old is None:
        return tuple(strings)
    return tuple(_renamed(a, old, new) for a in strings)


def _renamed(a, old, new):
    i = a.find(old)
    if i < 0 or (i and (a[0] != "-" or "/" in a[:i])):
        return a
    return a[:i] + new + a[i + len(old):]


def parse(argv, driver=None, environ=os.environ, cwd=None) -> LinkRequest:
    """Classify a cc driver command line; see the module docstring."""
    global _last
    cwd = cwd or os.getcwd()
    tmp = rustc_temp_dir(argv)
    if tmp and tmp.rstrip("/").rsplit("/", 1)[-1] in cwd:
        tmp = None  # a path relative to cwd could name it too: only the very same link is the same
    key = (renamed(argv, tmp, "\0") if tmp else tuple(argv), driver, cwd)
    last = _last
    if last is not None and last[0] == key:
        request, was = last[1], last[2]
        paths = (request.output, request.rust_lld, request.own_linker)
        if was != tmp and (any(was in a for a in argv)
                           or any(s and was in s and _renamed(s, was, tmp) == s for s in paths)):
            # An argument names the kept link's directory for itself, or a path made from one holds
            # it elsewhere than at its start (a relative -o under it): parsed anew.
            last = None
        elif was != tmp:  # the same link but for rustc's directory
            output, rust_lld, own_linker = (_renamed(s, was, tmp) if s else s for s in paths)
            request = request._replace(argv=tuple(argv), args=renamed(request.args, was, tmp),
                                       inputs=renamed(request.inputs, was, tmp),
                                       removed=renamed(request.removed, was, tmp), output=output,
                                       rust_lld=rust_lld, own_linker=own_linker)
        if last is not None:
            if driver is None:
                from linkwrap.request import target as target_mod
                found = target_mod.driver_for(request.target, cwd, environ)[0]
                if found != request.driver:
                    request = request._replace(driver=found)
            return request
    request = _parse(argv, driver, environ, cwd)
    if not request.used_response_file and not any(a.startswith("-B") for a in request.args):
        _last = (key, request, tmp)  # -B and @file name files that may change: parsed anew each time
    return request


def _parse(argv, driver, environ, cwd) -> LinkRequest:
    used_response_file = any(a.startswith("@") for a in argv)
    expanded = expand_response_files(argv, cwd) if used_response_file else argv
    kept, removed = [], []
    fuse_ld = rust_lld = None
    # rustc writes its -fuse-ld=lld right after its -B…/gcc-ld (rustc_codegen_ssa's add_lld_args);
    # any other -fuse-ld= is the caller's, and the last one is the one gcc obeys.
    after_gcc_ld = rustcs = False
    # Most arguments are inputs: `arg[:1] != "-"` first spares each a row of startswith() calls
    # (a few hundred a link, in every loop below).
    for arg in expanded:
        if arg[:1] != "-":
            kept.append(arg)
        elif arg.startswith("-fuse-ld="):
            fuse_ld = arg[len("-fuse-ld="):]
            rustcs = after_gcc_ld and fuse_ld == "lld"
            removed.append(arg)
        elif arg.startswith("-B") and _is_rustc_gcc_ld(arg[2:]):
            # <sysroot>/lib/rustlib/<triple>/bin/gcc-ld -> ../rust-lld
            rust_lld = os.path.join(os.path.dirname(arg[2:].rstrip("/")), "rust-lld")
            removed.append(arg)
            after_gcc_ld = True
            continue
        else:
            kept.append(arg)
        after_gcc_ld = False
    output = output_path(kept)
    # Which machine the link is for decides the driver of a Cargo link (the launcher names its own).
    from linkwrap.request import target as target_mod
    if driver:
        target = target_mod.of_driver(driver)
    else:
        target = target_mod.of_args(kept)
        driver = target_mod.driver_for(target, cwd, environ)[0]
    own = None
    if fuse_ld and "/" in fuse_ld:
        own = f"-fuse-ld={fuse_ld}"
    for i, arg in enumerate(kept):
        if arg[:1] != "-":
            continue
        if arg.startswith("--ld-path="):
            own = arg
        elif arg.startswith("-B") and (len(arg) > 2 or i + 1 < len(kept)):
            prefix = arg[2:] or kept[i + 1]
            if _holds_linker(os.path.join(cwd, prefix), fuse_ld):
                own = f"-B{prefix} (holds a linker)"
    return LinkRequest(
        argv=tuple(argv),
        args=tuple(kept),
        driver=driver,
        output=os.path.join(cwd, output) if output else None,
        kind=output_kind(kept),
        inputs=tuple(_inputs(kept)),
        fuse_ld=fuse_ld,
        rust_lld=rust_lld,
        removed=tuple(removed),
        used_response_file=used_response_file,
        cwd=cwd,
        target=target,
        own_linker=own,
        overrides_rustc=bool(rust_lld and fuse_ld and not rustcs),
    )


def rustc_forces_lld(request) -> bool:
    """Whether the line asks for rustc's own default, its bundled rust-lld (the -B…/gcc-ld and
    -fuse-ld=lld it injects), rather than a -fuse-ld= of the caller's that follows them.
    Duck-typed: benchmarks build requests with only some fields set."""
    return bool(getattr(request, "rust_lld", None)) and not getattr(request, "overrides_rustc", False)


def _holds_linker(prefix, fuse_ld) -> bool:
    """gcc runs <prefix>ld (or <prefix>ld.<x> for -fuse-ld=<x>), a directory's slash added."""
    if os.path.isdir(prefix):
        prefix = os.path.join(prefix, "")
    names = ("ld", f"ld.{fuse_ld}") if fuse_ld and "/" not in fuse_ld else ("ld",)
    return any(os.access(prefix + n, os.X_OK) and not os.path.isdir(prefix + n) for n in names)


def _is_rustc_gcc_ld(path: str) -> bool:
    parts = path.rstrip("/").split("/")
    return len(parts) >= 5 and parts[-1] == "gcc-ld" and parts[-2] == "bin" and parts[-4] == "rustlib"


# --- does the command line link at all? ------------------------------------

# gcc and clang stop before the link with these: a compile, an assembly, a preprocess, a dependency
# list (-M/-MM imply -E; -MD/-MMD do not stop), a check, or a question to the driver.
_STOPS = frozenset("-c -S -E -M -MM -fsyntax-only -### --help --target-help --version -dumpversion "
                   "-dumpfullversion -dumpmachine -dumpspecs -print-search-dirs -print-libgcc-file-name "
                   "-print-multiarch -print-multi-directory -print-multi-lib -print-multi-os-directory "
                   "-print-sysroot -print-sysroot-headers-suffix --analyze".split())
_STOP_PREFIXES = ("-print-file-name=", "-print-prog-name=", "--help=")
# Flags whose next argument is a value (gcc's and clang's preprocessor ones too), so `-I -c` never reads as -c.
_SKIPS_VALUE = frozenset("-o -L -l -T -e -u -z -Xlinker -Xassembler -Xpreprocessor -Xclang -x -isystem -include "
                         "-imacros -iquote -idirafter -iprefix -iwithprefix -isysroot --sysroot -MF -MT -MQ -MJ "
                         "-B -I -D -U -aux-info --param -arch -target".split())


def _asks(joined) -> bool:
    """Whether an argument of the NUL-joined command line is a -print-…=/--help= question."""
    i = joined.find("=")
    while i != -1:
        if joined.startswith(_STOP_PREFIXES, joined.rfind("\0", 0, i) + 1):
            return True
        i = joined.find("=", i + 1)
    return False


def links(argv, cwd=None) -> bool:
    """False when this cc command line does not reach the linker (`-c`, `-S`, `-E`, `-M`, `-fsyntax-only`,
    `--version`…): such a command is passed through untouched, never chosen for, recorded or learnt from.
    An @file that cannot be read counts as a link: parse() and the driver say what is wrong."""
    # Every link asks, so the usual answer is found at C speed: a loop over rustc's hundreds of
    # arguments costs ~20 us, a set lookup and a memchr for "@" and each "=" about 2 us.
    joined = "\0".join(argv)
    if "@" in joined and any(a.startswith("@") for a in argv):
        try:
            argv = expand_response_files(argv, cwd or os.getcwd())
        except ArgsError:
            return True
        joined = "\0".join(argv)
    if _STOPS.isdisjoint(argv) and not _asks(joined):
        return True  # only a stop flag needs the walk below
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _SKIPS_VALUE:
            skip = True
        elif arg in _STOPS or arg.startswith(_STOP_PREFIXES):
            return False
    return True


# --- @response files -------------------------------------------------------

def expand_response_files(argv, cwd, _depth=0):
    """Expand @file arguments the way gcc (libiberty buildargv) does.

    rustc writes one argument per line and escapes only backslash and space,
    which is a subset of these rules. A missing @file stays a literal argument,
    as in gcc.
    """
    out = []
    for arg in argv:
        if not arg.startswith("@") or len(arg) == 1:
            out.append(arg)
            continue
        path = os.path.join(cwd, arg[1:])
        try:
            with open(path, "rb") as f:
                text = f.read().decode("utf-8", "surrogateescape")
        except FileNotFoundError:
            out.append(arg)
            continue
        except OSError as e:
            raise ArgsError(f"cannot read response file {arg[1:]}: {e.strerror}") from None
        if _depth > 10:
            raise ArgsError(f"response file {arg[1:]} includes itself too deeply")
        out.extend(expand_response_files(split_response_text(text), cwd, _depth + 1))
    return out


def split_response_text(text: str) -> list:
    """Split response-file text: whitespace (str.isspace) separates, a backslash takes the next
    character as it is (inside quotes too; a last lone one is kept), ' and " group (the other kind
    literal inside), '' is an empty argument, an unterminated quote runs to the end.

    At C speed whatever the text (a 100 MB file char by char in Python took 29 s): str.split() (the
    same whitespace as str.isspace) where nothing is quoted or escaped, a regex for each argument's
    text where something is, and those texts undone all at once (_unquoted)."""
    specials = text.count("\\") + text.count("'") + text.count('"')
    if not specials:
        return text.split()
    if specials * 128 < len(text):
        # A regex match costs ~0.5 us an argument, the sparse way ~1.6 us one that has a special
        # character and next to nothing one that has none (benchmarks/bench_overhead.py).
        return _split_sparse(text)
    return _unquoted(_response_patterns()[0].findall(text))  # dense: every argument's text by the regex


def _split_sparse(text) -> list:
    """split_response_text where few arguments have a quote or backslash (rustc's lines, a path with
    a space now and then): str.split() up to each, the regex for where it ends."""
    word, _, _, special = _response_patterns()
    out, raw, at, pos = [], [], [], 0
    while m := special.search(text, pos):
        start = m.start()
        before = text[pos:start].split()
        if before and not text[start - 1].isspace():
            start -= len(before.pop())  # its argument began there
        out += before
        m = word.match(text, start)  # it ends at whitespace or the end: pos is always between arguments
        at.append(len(out))
        out.append(None)
        raw.append(m.group())
        pos = m.end()
    out += text[pos:].split()
    for i, arg in zip(at, _unquoted(raw)):
        out[i] = arg
    return out


def _unquoted(words) -> list:
    """Arguments' texts (the word pattern's matches) without their quotes and escapes: joined by a
    NUL (which, as a rule, none has) and undone at once (one at a time in Python would be slower than
    the old parser on a file of short quoted arguments). Only the very last can end in a lone
    backslash or an open quote, and it is last in the joined text too."""
    joined = "\0".join(words)
    if joined.count("\0") >= len(words):  # a NUL of their own: one at a time
        return [_undo(w) for w in words]
    return _undo(joined).split("\0")


def _undo(text) -> str:
    """Delimiting quotes taken out, then every backslash takes the next character: the same pairs
    as in one pass, since no delimiter ever follows an escaping backslash. re.split and a join, not
    re.sub: Python 3.11 expands a sub's template in Python, match by match."""
    _, quotes, escape, _ = _response_patterns()
    if "'" in text or '"' in text:
        text = "".join(filter(None, quotes.split(text)))  # what precedes each quoted run, its inside
    return "".join(escape.split(text)) if "\\" in text else text  # a last lone backslash stays


_patterns = None  # compiled on the first @file with a quote or backslash (most links pass none)


def _response_patterns():
    """(word, quotes, escape, special): the text of an argument; a quoted run and what precedes it
    (escapes in both as they are, so that an escaped quote is no delimiter); an escape; what needs
    them. `\\s` is str.isspace's whitespace (both are Py_UNICODE_ISSPACE; tests/request/test_args.py
    checks every code point). Possessive repeats, each run stopping only where its alternatives
    end: nothing backtracks, nor keeps a state per repetition (a 90 MB argument of short quoted runs
    took 16 GB without). Each match starts where the last ended (quotes' at the end by its \\Z), so
    none ever starts inside an escape or a quoted run."""
    global _patterns
    if _patterns is None:
        import re
        single, double = r"(?:[^'\\]++|\\.?)*+", r'(?:[^"\\]++|\\.?)*+'  # a quote's inside
        plain, escaped = r"""[^\s'"\\]""", r"\\.?"  # .? : a last lone backslash is itself
        word = re.compile(rf"""(?=\S){plain}*+(?:(?:{escaped}|'{single}'?|"{double}"?){plain}*+)*+""", re.S)
        quotes = re.compile(rf"""((?:[^'"\\]++|{escaped})*+)(?:'({single})'?|"({double})"?|\Z)""", re.S)
        _patterns = (word, quotes, re.compile(r"\\(.)", re.S), re.compile(r"""[\\'"]"""))
    return _patterns


def quote_response_arg(arg: str) -> str:
    """The inverse of split_response_text for one argument (one per line): a backslash before each
    backslash, quote and whitespace character; '' for an empty one."""
    if not arg:
        return "''"
    if "\\" not in arg and "'" not in arg and '"' not in arg and arg.split() == [arg]:
        return arg  # nothing to escape (split() == [arg]: no whitespace), as nearly every argument
    import re
    # A split before each and a join, not re.sub: Python 3.11 expands a sub's template in Python.
    return "\\".join(re.split(r"""(?=[\\'"\s])""", arg))


# --- what the command line says about the output ---------------------------

def output_path(args) -> str | None:
    """The value of the last -o (gcc takes the last one)."""
    found = None
    for i, arg in enumerate(args):
        if arg[:2] != "-o":
            continue
        if arg == "-o" and i + 1 < len(args):
            found = args[i + 1]
        elif arg.startswith("-o") and len(arg) > 2 and not arg.startswith("-o-"):
            found = arg[2:]
    return found


def with_output(args, new_output: str) -> list:
    """The same arguments, linking to new_output instead (used for fresh writes)."""
    out, skip = [], False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg[:2] != "-o":
            out.append(arg)
        elif arg == "-o" and i + 1 < len(args):
            out += ["-o", new_output]
            skip = True
        elif arg.startswith("-o") and len(arg) > 2 and not arg.startswith("-o-"):
            out.append("-o" + new_output)
        else:
            out.append(arg)
    return out


def output_kind(args) -> str:
    flags = set(args)
    if "-r" in flags or "-Wl,-r" in flags or "-relocatable" in flags or "-Wl,--relocatable" in flags:
        return "relocatable"
    if "-shared" in flags or "-Wl,-shared" in flags:
        return "shared"
    if "-static-pie" in flags:
        return "static-pie"
    if "-static" in flags:
        return "static"
    if "-no-pie" in flags or "-nopie" in flags:
        return "exec"
    return "pie"  # rustc passes -pie; Debian's gcc defaults to PIE too


# Flags whose next argument is a value, not an input file.
_TAKES_VALUE = frozenset("-o -L -l -T -e -u -z -Xlinker -x -isystem -include -MF -MT -MQ -B".split())
_INPUT_SUFFIXES = (".o", ".a", ".so", ".rlib", ".obj", ".lo")


def _inputs(args):
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in _TAKES_VALUE:
            skip = True
        elif not arg.startswith("-") and (arg.endswith(_INPUT_SUFFIXES) or ".so." in arg):
            yield arg


# What a link's inputs end with: never a source the driver compiles (the quick answer of compiles()).
_LINKED = (".o", ".a", ".so", ".rlib", ".rmeta", ".lo", ".obj")
_compiled = (None, False)  # the last command line asked about, by identity, and its answer


# Inputs gcc would compile rather than link (compiles() here, direct.split() for its own start).
SOURCE_SUFFIXES = frozenset("c cc cp cpp cxx c++ C CPP i ii m mi mm M mii s S sx f for ftn f90 f95 f03 f08 "
                            "F FOR FTN F90 F95 F03 F08 go d di ads adb h hh hpp hxx H tcc rs".split())


def compiles(args) -> bool:
    """Whether the driver also compiles: the command line names a source file (`c++ -o app main.cpp`,
    make's one-step rule). Its time is then the compile's as well as the link's, so it is recorded as
    such and never taken for a linker's speed. An -x LANG makes every later file a source."""
    global _compiled
    if _compiled[0] is args:  # learn and record ask about the same link
        return _compiled[1]
    # Most links name only objects, libraries and flags: a join, a search and one filtering pass
    # say so in a fraction of the walk below (benchmarks/bench_record.py).
    found = "\0-x" in "\0" + "\0".join(args)
    if not found:
        for a in [a for a in args if a[:1] != "-" and not a.endswith(_LINKED)]:
            dot = a.rfind(".")
            if dot > a.rfind("/") and a[dot + 1:] in SOURCE_SUFFIXES:
                found = True
                break
    if found:
        found = _walk(args, SOURCE_SUFFIXES)  # is it an input, or the value of -o, -L, -I…?
    _compiled = (args, found)
    return found


def _walk(args, suffixes) -> bool:
    skip = expect_lang = lang = False
    for arg in args:
        if skip:
            skip = False
        elif expect_lang:
            lang, expect_lang = arg != "none", False
        elif arg[:1] == "-":
            if arg == "-x":
                expect_lang = True
            elif arg.startswith("-x"):
                lang = arg[2:] != "none"
            elif arg in _SKIPS_VALUE:
                skip = True
        elif lang:
            return True
        else:
            dot = arg.rfind(".")
            if dot > arg.rfind("/") and arg[dot + 1:] in suffixes:
                return True
    return False


def linker_flags(args):
    """The flags the command line passes to the linker itself (-Wl,a,b and -Xlinker a)."""
    out = []
    for i, arg in enumerate(args):
        if arg[:1] != "-":
            continue
        if arg.startswith("-Wl,"):
            out.extend(arg[4:].split(","))
        elif arg == "-Xlinker" and i + 1 < len(args):
            out.append(args[i + 1])
    return out
