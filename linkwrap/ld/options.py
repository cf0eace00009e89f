"""Command line: the ld options gcc 12's collect2 passes -> Options.

Input: argv as ld receives it (with @file response files). Output: a frozen
Options whose `inputs` keeps the command line's order of files, libraries and
the state flags (-Bstatic, --as-needed, --whole-archive, groups) in force for
each. An option this linker does not implement raises Unsupported, so that
linkwrap falls back to a real linker instead of linking something different.
"""
import os
import shlex
from dataclasses import dataclass, field

from linkwrap.ld.diag import BadInput, Unsupported


@dataclass(frozen=True)
class InputArg:
    """One positional input: kind is 'file', 'lib', 'group-start' or 'group-end'."""
    kind: str
    name: str = ""
    as_needed: bool = False
    static: bool = False          # -Bstatic in force: -l finds only lib*.a
    whole_archive: bool = False


@dataclass(frozen=True)
class Options:
    output: str = "a.out"
    inputs: tuple = ()
    lib_dirs: tuple = ()
    pie: bool = False
    shared: bool = False
    static: bool = False          # -static given: no shared libraries at all
    dynamic_linker: str = "/lib64/ld-linux-x86-64.so.2"
    no_dynamic_linker: bool = False
    entry: str = "_start"
    build_id: str = ""            # '' (none), 'sha1', 'md5', 'uuid' or '0x...'
    eh_frame_hdr: bool = False
    gc_sections: bool = False
    print_gc_sections: bool = False
    z_now: bool = False
    z_relro: bool = True
    z_execstack: bool = False
    z_text: bool = False
    export_dynamic: bool = False
    strip_debug: bool = False
    strip_all: bool = False
    rpath: tuple = ()
    hash_style: str = "gnu"
    version: bool = False
    time_phases: bool = False     # --time: print each pass's wall time to stderr
    warnings: tuple = field(default=())


# Options that take no argument and change nothing for the links we make.
_IGNORED = {
    "-O0", "-O1", "-O2", "-O3", "--no-undefined-version", "--undefined-version", "--sort-common",
    "--warn-common", "--fatal-warnings", "--no-fatal-warnings", "--no-warn-mismatch",
    "--no-copy-dt-needed-entries", "-X", "--discard-locals", "--no-keep-memory", "--reduce-memory-overheads",
    "--disable-new-dtags", "--enable-new-dtags", "--no-undefined", "--allow-shlib-undefined",
    "--no-allow-shlib-undefined", "-nostdlib", "--relax", "--no-relax", "--color-diagnostics",
    "--warn-once", "--no-demangle", "--demangle", "-g", "--eh-frame-hdr=", "-EL", "--threads",
    "--no-threads", "--no-map-whole-files", "--build-id=none",
}
# Options whose next argument is ignored.
_IGNORED_WITH_ARG = {"-plugin", "--plugin", "-plugin-opt", "--plugin-opt", "-a", "--sysroot", "-Y", "--threads"}
_Z_IGNORED = {"noexecstack", "separate-code", "noseparate-code", "defs", "nodefs", "origin", "nodelete",
              "noexecheap", "combreloc", "nocombreloc", "max-page-size=4096", "common-page-size=4096",
              "nodlopen", "notext", "noextern-protected-data", "pack-relative-relocs=no", "nopack-relative-relocs",
              "ibt", "shstk", "cet-report=none", "keep-text-section-prefix"}


def expand_response_files(argv, depth=0):
    out = []
    for a in argv:
        if a.startswith("@") and len(a) > 1 and depth < 16:
            try:
                with open(a[1:], encoding="utf-8") as f:
                    out.extend(expand_response_files(shlex.split(f.read()), depth + 1))
            except OSError:
                out.append(a)  # GNU ld: an unreadable @file is an input file name
        else:
            out.append(a)
    return out


def parse_args(argv) -> Options:
    argv = expand_response_files(list(argv))
    kw = {}
    inputs = []
    lib_dirs = []
    rpath = []
    as_needed = static = whole = False
    stack = []
    i = 0

    def value(opt):
        nonlocal i
        i += 1
        if i >= len(argv):
            raise BadInput(f"missing argument to {opt}")
        return argv[i]

    while i < len(argv):
        a = argv[i]
        if not a.startswith("-") or a == "-":
            inputs.append(InputArg("file", a, as_needed, static, whole))
            i += 1
            continue
        # ld accepts long options with one or two dashes, and --opt=value.
        name, eq, val = a.partition("=")
        long = "-" + name.lstrip("-") if name.startswith("--") else name
        if a in _IGNORED or long in _IGNORED or name in ("--hash-style",) and val in ("gnu", "both", "sysv"):
            pass
        elif name in _IGNORED_WITH_ARG:
            if not eq:
                value(a)
        elif a.startswith("-plugin-opt") or a.startswith("--plugin-opt") or a.startswith("-flto"):
            pass
        elif a.startswith("-l"):
            inputs.append(InputArg("lib", a[2:] or value(a), as_needed, static, whole))
        elif a.startswith("-L"):
            lib_dirs.append(a[2:] or value(a))
        elif a == "-o" or name == "--output":
            kw["output"] = val if eq else value(a)
        elif a.startswith("-o"):
            kw["output"] = a[2:]
        elif long in ("-pie", "-pic-executable"):
            kw["pie"] = True
        elif long in ("-no-pie", "-no-pic-executable"):
            kw["pie"] = False
        elif long in ("-shared", "-Bshareable"):
            raise Unsupported("-shared (shared library output)")
        elif long in ("-r", "-relocatable", "-i"):
            raise Unsupported("-r (relocatable output)")
        elif long == "-static" or a in ("-Bstatic", "-dn", "-non_shared"):
            static = True
            if long == "-static":
                kw["static"] = True
        elif a in ("-Bdynamic", "-dy", "-call_shared"):
            static = False
        elif long == "-as-needed":
            as_needed = True
        elif long == "-no-as-needed":
            as_needed = False
        elif long == "-whole-archive":
            whole = True
        elif long == "-no-whole-archive":
            whole = False
        elif long == "-push-state":
            stack.append((as_needed, static, whole))
        elif long == "-pop-state":
            if not stack:
                raise BadInput("--pop-state without a matching --push-state")
            as_needed, static, whole = stack.pop()
        elif long == "-start-group" or a == "-(":
            inputs.append(InputArg("group-start"))
        elif long == "-end-group" or a == "-)":
            inputs.append(InputArg("group-end"))
        elif name in ("-dynamic-linker", "--dynamic-linker", "-I"):
            kw["dynamic_linker"] = val if eq else value(a)
            kw["no_dynamic_linker"] = False
        elif a.startswith("-I") and len(a) > 2:
            kw["dynamic_linker"] = a[2:]
        elif long == "-no-dynamic-linker":
            kw["no_dynamic_linker"] = True
        elif a == "-m":
            em = value(a)
            if em != "elf_x86_64":
                raise Unsupported(f"emulation {em} (only elf_x86_64)")
        elif a.startswith("-m"):
            if a[2:] != "elf_x86_64":
                raise Unsupported(f"emulation {a[2:]} (only elf_x86_64)")
        elif a == "-e" or name == "--entry":
            kw["entry"] = val if eq else value(a)
        elif a.startswith("-e") and len(a) > 2 and not a.startswith("-export") and not a.startswith("-eh"):
            kw["entry"] = a[2:]
        elif long == "-build-id":
            style = val if eq else "sha1"
            if style == "none":
                kw["build_id"] = ""
            elif style in ("sha1", "md5", "uuid") or style.startswith("0x"):
                kw["build_id"] = style
            else:
                raise Unsupported(f"--build-id={style}")
        elif long == "-eh-frame-hdr":
            kw["eh_frame_hdr"] = True
        elif long == "-no-eh-frame-hdr":
            kw["eh_frame_hdr"] = False
        elif long == "-gc-sections":
            kw["gc_sections"] = True
        elif long == "-no-gc-sections":
            kw["gc_sections"] = False
        elif long == "-print-gc-sections":
            kw["print_gc_sections"] = True
        elif a == "-z" or (a.startswith("-z") and len(a) > 2):
            _z(kw, a[2:] if len(a) > 2 else value(a))
        elif long in ("-export-dynamic",) or a == "-E":
            kw["export_dynamic"] = True
        elif long == "-no-export-dynamic":
            kw["export_dynamic"] = False
        elif a in ("-S",) or long == "-strip-debug":
            kw["strip_debug"] = True
        elif a in ("-s",) or long == "-strip-all":
            kw["strip_all"] = True
        elif name in ("-rpath", "--rpath", "-R"):
            rpath.append(val if eq else value(a))
        elif long == "-hash-style":
            style = val if eq else value(a)
            if style not in ("gnu", "both", "sysv"):
                raise Unsupported(f"--hash-style={style}")
        elif a in ("-v", "-V", "--version", "-version"):
            kw["version"] = True
        elif long == "-time":
            kw["time_phases"] = True
        elif name in ("--sysroot",):
            pass
        else:
            raise Unsupported(f"option {a}")
        i += 1
    if stack:
        pass  # ld itself does not complain about an unbalanced --push-state
    return Options(inputs=tuple(inputs), lib_dirs=tuple(lib_dirs), rpath=tuple(rpath), **kw)


# -z keyword -> (Options field, value). Anything not here and not ignored is named as unsupported.
_Z_WORDS = {
    "now": ("z_now", True), "lazy": ("z_now", False),
    "relro": ("z_relro", True), "norelro": ("z_relro", False),
    "execstack": ("z_execstack", True), "noexecstack": ("z_execstack", False),
    "text": ("z_text", True),
}


def _z(kw, word):
    if word in _Z_WORDS:
        field_name, value = _Z_WORDS[word]
        kw[field_name] = value
    elif word in _Z_IGNORED or word.startswith(("max-page-size=", "common-page-size=")) and word.endswith("=4096"):
        pass
    else:
        raise Unsupported(f"-z {word}")


def find_library(name: str, opts: Options, static: bool, script_dir: str = ""):
    """-lname -> path, the way GNU ld searches: each -L dir in order, .so before .a per dir."""
    if name.startswith(":"):
        candidates = [name[1:]]
    elif static:
        candidates = [f"lib{name}.a"]
    else:
        candidates = [f"lib{name}.so", f"lib{name}.a"]
    for d in opts.lib_dirs:
        for c in candidates:
            p = os.path.join(d, c)
            if os.path.isfile(p):
                return p
    return None
