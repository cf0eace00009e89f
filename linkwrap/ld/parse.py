"""PARSE: command-line inputs -> Inputs (objects, archives, shared libraries, in order).

Input: Options. Output: a frozen Inputs whose `items` list the command line's
files in order, with glibc's linker scripts (libc.so: GROUP, AS_NEEDED, INPUT,
OUTPUT_FORMAT) expanded in place. Relocatable objects get their section
headers and symbol table read; archives only their index (members are parsed
when resolution pulls them in); shared libraries their dynamic symbols and
version definitions. Section bytes and relocations stay in the mmap until
later passes ask for them.
"""
import mmap
import os
from dataclasses import dataclass

from linkwrap.ld import elf
from linkwrap.ld.diag import BadInput, Unsupported
from linkwrap.ld.objects import ObjectFile
from linkwrap.ld.libraries import Archive, SharedFile, find_library, search_dirs


@dataclass(frozen=True)
class InputItem:
    """One entry of the link order: kind is 'object', 'archive', 'shared', 'group-start' or 'group-end'."""
    kind: str
    file: object = None


@dataclass(frozen=True)
class Inputs:
    items: tuple


def read_inputs(opts, diag) -> Inputs:
    items = []
    for arg in opts.inputs:
        if arg.kind in ("group-start", "group-end"):
            items.append(InputItem(arg.kind))
        elif arg.kind == "just-symbols":
            # -R FILE: its symbols where it stands on the command line, nothing else (just_symbols.py)
            from linkwrap.ld.just_symbols import read
            if opts.trace:
                print(arg.name)
            items.append(InputItem("just-symbols", read(arg.name)))
        elif arg.kind == "lib":
            path = find_library(arg.name, opts, arg.static or opts.static)
            if path is None:
                diag.error(f"cannot find -l{arg.name}: No such file or directory")
                continue
            _read_file(path, arg, opts, items, diag, 0)
        elif not os.path.exists(arg.name):
            diag.error(f"cannot find {arg.name}: No such file or directory")
        else:
            _read_file(arg.name, arg, opts, items, diag, 0)
    diag.checkpoint()
    return Inputs(tuple(items))


def _map(path):
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return memoryview(b"")
            return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory") from None
    except FileNotFoundError:
        raise BadInput(f"cannot find {path}: No such file or directory") from None
    except OSError as e:
        raise BadInput(f"cannot open {path}: {e.strerror}") from None


def _read_file(path, arg, opts, items, diag, depth):
    view = _map(path)
    if opts.trace:
        # -t: each file as it is opened, as GNU ld prints it (a group is not read again here, so
        # GNU ld's second print of a group's archives, when it rescans the group, is not repeated)
        print(path)
    head = bytes(view[:8])
    if head[:4] == elf.ELFMAG:
        if len(view) < 64:
            raise BadInput(f"{path}: file truncated")
        if head[4] != 2 or head[5] != 1:
            raise BadInput(f"{path}: file in wrong format (not 64-bit little-endian ELF)")
        if head[7] not in (0, 3):   # ELFOSABI_NONE, ELFOSABI_GNU
            raise Unsupported(f"{path}: ELF OS ABI {head[7]}")
        etype = elf.U16.unpack_from(view, 16)[0]
        if etype == elf.ET_REL:
            items.append(InputItem("object", ObjectFile(path, view)))
        elif etype == elf.ET_DYN:
            if opts.static:
                raise BadInput(f"attempted static link of dynamic object `{path}'")
            needed_name = os.path.basename(path) if arg.kind == "lib" and depth == 0 else path
            items.append(InputItem("shared", SharedFile(path, view, arg.as_needed, needed_name)))
        else:
            raise BadInput(f"{path}: file format not recognized (ELF type {etype} is no object or library)")
    elif head == b"!<arch>\n":
        items.append(InputItem("archive", Archive(path, view, arg.whole_archive)))
    elif head == b"!<thin>\n":
        raise Unsupported(f"thin archive {path}")
    elif head[:4] == b"BC\xc0\xde" or head[:4] == b"\xde\xc0\x17\x0b":
        raise Unsupported(f"{path}: LLVM bitcode (LTO object) needs the LTO plugin")
    else:
        _read_script(path, bytes(view), arg, opts, items, diag, depth)


# --- linker scripts: only the subset glibc and gcc ship -------------------------


def _tokens(text):
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace() or c == ",":
            i += 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c in "();":
            out.append(c)
            i += 1
        elif c == '"':
            j = text.find('"', i + 1)
            if j < 0:
                j = n
            out.append(text[i + 1:j])
            i = j + 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in '(),;"':
                j += 1
            out.append(text[i:j])
            i = j
    return out


def _read_script(path, data, arg, opts, items, diag, depth):
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise BadInput(f"{path}: file format not recognized") from None
    if "\0" in text:
        raise BadInput(f"{path}: file format not recognized")
    toks = _tokens(text)
    if not toks or toks[0] not in ("GROUP", "INPUT", "OUTPUT_FORMAT", "SEARCH_DIR", "OUTPUT_ARCH", "AS_NEEDED"):
        if toks and toks[0] in ("SECTIONS", "MEMORY", "PHDRS", "ENTRY", "VERSION", "INCLUDE", "PROVIDE"):
            raise Unsupported(f"linker script command {toks[0]} in {path}")
        raise BadInput(f"{path}: file format not recognized")
    if depth > 8:
        raise BadInput(f"{path}: linker scripts nested too deeply")
    i = 0

    def parens():
        nonlocal i
        if i >= len(toks) or toks[i] != "(":
            raise BadInput(f"{path}: syntax error in linker script near '{toks[i - 1]}'")
        depth_ = 0
        start = i + 1
        while i < len(toks):
            if toks[i] == "(":
                depth_ += 1
            elif toks[i] == ")":
                depth_ -= 1
                if depth_ == 0:
                    i += 1
                    return toks[start:i - 1]
            i += 1
        raise BadInput(f"{path}: syntax error in linker script: unbalanced parentheses")

    base = os.path.dirname(path)
    while i < len(toks):
        cmd = toks[i]
        i += 1
        if cmd == ";":
            continue
        if cmd in ("OUTPUT_FORMAT", "OUTPUT_ARCH", "SEARCH_DIR"):
            parens()
        elif cmd in ("GROUP", "INPUT"):
            body = parens()
            if cmd == "GROUP":
                items.append(InputItem("group-start"))
            _script_inputs(path, base, body, arg, opts, items, diag, depth, False)
            if cmd == "GROUP":
                items.append(InputItem("group-end"))
        else:
            raise Unsupported(f"linker script command {cmd} in {path}")


def _script_inputs(path, base, body, arg, opts, items, diag, depth, as_needed):
    from dataclasses import replace
    j = 0
    while j < len(body):
        t = body[j]
        if t == "AS_NEEDED":
            k = j + 2
            level = 1
            while k < len(body) and level:
                level += {"(": 1, ")": -1}.get(body[k], 0)
                k += 1
            _script_inputs(path, base, body[j + 2:k - 1], arg, opts, items, diag, depth, True)
            j = k
            continue
        sub = replace(arg, as_needed=arg.as_needed or as_needed)
        if t.startswith("-l"):
            p = find_library(t[2:], opts, arg.static or opts.static)
            if p is None:
                diag.error(f"cannot find {t}: No such file or directory")
            else:
                _read_file(p, sub, opts, items, diag, depth + 1)
        else:
            p = t
            if os.path.isabs(t) and opts.sysroot and _inside(path, opts.sysroot):
                p = t = opts.sysroot.rstrip("/") + t     # a sysroot's script names files in the sysroot
            elif t.startswith("=") and opts.sysroot:
                p = t = opts.sysroot.rstrip("/") + t[1:]
            if not os.path.isabs(t) and not os.path.exists(t):
                cands = [os.path.join(base, t)] + [os.path.join(d, t) for d in search_dirs(opts)]
                p = next((c for c in cands if os.path.exists(c)), t)
            if not os.path.exists(p):
                diag.error(f"cannot find {t} (named in {path})")
            else:
                _read_file(p, sub, opts, items, diag, depth + 1)
        j += 1


def _inside(path, root):
    root = os.path.realpath(root)
    return os.path.realpath(path).startswith(root.rstrip("/") + "/")


# --- ELF relocatable objects -----------------------------------------------------
