"""TARGET: which machine a link is for, and so which cc driver and which per-target linkers it needs.

Input: the link's arguments, the launcher's driver (CMake, ninja) and the environment. Output: the
target (a Rust triple, or a cross driver's prefix such as `aarch64-linux-gnu`; None when nothing says)
and the driver to run for it.

rustc tells no linker its target, but every Rust link names the target's library directory
(`-L <sysroot>/lib/rustlib/<triple>/lib`, even when no std is installed for it), and build scripts
and proc-macros are linked for the host, so they name the host's. A CMake or ninja link names its
driver, whose prefix is the target's (`aarch64-linux-gnu-gcc`).

The driver of a Cargo link, first found wins:
1. `LINKWRAP_CC_<TRIPLE>` (Cargo's mangling: upper case, `-` and `.` as `_`);
2. the compiler driver the target had in `.cargo/config.toml` before `linkwrap install --force`
   (kept in linkwrap's marker on the linker line: `# linkwrap (ID: …) replaced: "linker = …"`);
3. for a target that is not this machine's: `<triple>-gcc` or `<arch>-linux-gnu-gcc` on PATH;
4. `LINKWRAP_CC`, else `cc` (for another machine's target that fails as it would have without linkwrap).
Runs on every link: standard library only, a few stat() calls and small reads.
"""
import os

_MARKER = "# linkwrap (ID: "
# What a triple's architecture is called by uname and by Debian's cross toolchains.
_ARCH_ALIASES = {"amd64": "x86_64", "arm64": "aarch64", "i386": "i686", "i486": "i686", "i586": "i686"}
_DRIVER_SUFFIXES = ("-gcc", "-g++", "-cc", "-c++", "-clang", "-clang++", "-gfortran")


def of_args(args):
    """The triple whose rustlib directory a Rust link names (not the gcc-ld one of rustc's -B), or None."""
    for arg in args:
        at = arg.find("/lib/rustlib/")
        if at < 0:
            continue
        rest = arg[at + len("/lib/rustlib/"):]
        triple, sep, tail = rest.partition("/")
        if sep and (tail == "lib" or tail.startswith("lib/")) and triple.count("-") >= 1:
            return triple
    return None


def of_driver(driver):
    """`aarch64-linux-gnu` for `…/aarch64-linux-gnu-g++-12`; None for an unprefixed driver (cc, clang)."""
    if not driver:
        return None
    name = os.path.basename(driver)
    # gcc-12, g++-12: a version suffix is not a target
    base, dash, version = name.rpartition("-")
    if dash and version.isdigit():
        name = base
    for suffix in _DRIVER_SUFFIXES:
        if name.endswith(suffix):
            prefix = name[:-len(suffix)]
            return prefix if prefix.count("-") >= 1 else None
    return None


def arch(target) -> str:
    first = target.split("-", 1)[0]
    return _ARCH_ALIASES.get(first, first)


_HERE = []


def is_foreign(target) -> bool:
    """True when target is for another architecture than this machine's (a cross link)."""
    if not target:
        return False
    if not _HERE:
        machine = os.uname().machine
        _HERE.append(_ARCH_ALIASES.get(machine, machine))
    return arch(target) != _HERE[0]


def env_key(triple: str) -> str:
    """Cargo's mangling of a triple in environment names."""
    return triple.upper().replace("-", "_").replace(".", "_")


def driver_for(triple, cwd, environ):
    """(driver, where it came from) for a Cargo link to triple (None: the host's, as far as one knows)."""
    if triple:
        own = environ.get(f"LINKWRAP_CC_{env_key(triple)}")
        if own:
            return own, f"LINKWRAP_CC_{env_key(triple)}"
        kept = replaced_driver(triple, cwd, environ)
        if kept:
            return kept
        if is_foreign(triple):
            guessed = guess_cross_driver(triple, environ)
            if guessed:
                return guessed, f"{os.path.basename(guessed)} for {triple}"
    if environ.get("LINKWRAP_CC"):
        return environ["LINKWRAP_CC"], "LINKWRAP_CC"
    return "cc", "default"


def guess_cross_driver(triple, environ):
    """<triple>-gcc, or the name Debian's and most distributions' cross compilers have
    (<arch>-linux-gnu-gcc for <arch>-unknown-linux-gnu), found on PATH."""
    parts = triple.split("-")
    names = [f"{triple}-gcc"]
    if len(parts) == 4:  # arch-vendor-os-env: the vendor is dropped
        names.append(f"{parts[0]}-{parts[2]}-{parts[3]}-gcc")
        first = arch(triple)
        if first.startswith("armv7"):
            names.append(f"arm-{parts[2]}-{parts[3]}-gcc")
    for d in environ.get("PATH", os.defpath).split(os.pathsep):
        if not d:
            continue
        for name in names:
            path = os.path.join(d, name)
            if os.access(path, os.X_OK):
                return name
    return None


def cargo_configs(cwd, environ):
    """The Cargo config files Cargo reads for a build run in cwd, nearest first."""
    out = []
    d = os.path.abspath(cwd)
    while True:
        # One stat per level (most directories have no .cargo), without os.path's checks: every link pays it.
        folder = f"{d.rstrip('/')}/.cargo"
        try:
            os.stat(folder)
        except OSError:
            pass
        else:
            for name in ("config", "config.toml"):  # the old name wins where both exist, as in Cargo
                p = f"{folder}/{name}"
                if os.path.isfile(p):
                    out.append(p)
                    break
        if d == "/":
            break
        d = d[:d.rindex("/")] or "/"
    home = environ.get("CARGO_HOME") or os.path.join(os.path.expanduser("~"), ".cargo")
    for name in ("config", "config.toml"):
        p = os.path.join(home, name)
        if os.path.isfile(p):
            if p not in out:
                out.append(p)
            break
    return out


def replaced_driver(triple, cwd, environ):
    """(driver, source) when linkwrap's marker in a Cargo config keeps the compiler driver that
    `install --force` took over for triple; None otherwise. Only files that carry a marker are read
    past a substring test, and no TOML parser is imported."""
    for path in cargo_configs(cwd, environ):
        try:
            with open(path, "rb") as f:
                data = f.read(1 << 20)
        except OSError:
            continue
        if b") replaced: " not in data:
            continue
        found = _replaced_in(data.decode("utf-8", "replace"), triple)
        if found:
            return found, f"the linker {path} had before linkwrap"
    return None


def _replaced_in(text, triple):
    table = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("[") and not s.startswith("[["):
            name = s[1:s.find("]")] if "]" in s else ""
            table = [p.strip().strip("\"'") for p in name.split(".")]
            continue
        if table != ["target", triple] or _MARKER not in s or ") replaced: " not in s:
            continue
        was = _json_string(s[s.index(") replaced: ") + len(") replaced: "):])
        if was is None:
            continue
        lhs, eq, value = was.partition("=")
        value = value.split("#", 1)[0].strip()
        if eq and value[:1] in "\"'" and value[-1:] == value[:1]:
            driver = value[1:-1]
            return driver if _is_driver(driver) else None
    return None


def _json_string(text):
    """The JSON string install/cargo.py wrote with json.dumps, without importing json (6 ms) for the
    usual line; None when it is not one."""
    text = text.strip()
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return None
    if "\\u" in text:
        import json
        try:
            return json.loads(text)
        except ValueError:
            return None
    out, i, body = [], 0, text[1:-1]
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append({"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _is_driver(linker: str) -> bool:
    """A compiler driver (clang, gcc, a cc wrapper), not a linker rustc runs as `ld`."""
    name = os.path.basename(linker)
    return not (name in ("ld", "rust-lld", "lld", "mold", "wild") or name.startswith(("ld.", "ld64"))
                or name.endswith(("-ld", "-ld.bfd", "-ld.gold")))


def tool_prefix(target, driver):
    """`aarch64-linux-gnu-` when a cross link's GNU tools carry a prefix (ld.bfd, ld.gold), else ''."""
    prefix = of_driver(driver)
    if prefix and is_foreign(prefix):
        return prefix + "-"
    if target and is_foreign(target):
        parts = target.split("-")
        return f"{parts[0]}-{parts[2]}-{parts[3]}-" if len(parts) == 4 else f"{target}-"
    return ""
