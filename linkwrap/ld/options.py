"""Command line: the ld options gcc 12's collect2 passes -> Options.

Input: argv as ld receives it (with @file response files). Output: a frozen
Options whose `inputs` keeps the command line's order of files, libraries and
the state flags (-Bstatic, --as-needed, --whole-archive, groups) in force for
each. An option this linker does not implement raises Unsupported, so that
linkwrap falls back to a real linker instead of linking something different.
"""
import os
import shlex
from dataclasses import dataclass

from linkwrap.ld.diag import BadInput, Unsupported
from linkwrap.ld.symbol_lists import read_dynamic_list


@dataclass(frozen=True)
class InputArg:
    """One positional input: kind is 'file', 'lib', 'just-symbols' (-R FILE), 'group-start' or 'group-end'."""
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
    static: bool = False          # -static given: no shared libraries at all
    relocatable: bool = False     # -r: one relocatable object out (relocatable.py)
    dynamic_linker: str = "/lib64/ld-linux-x86-64.so.2"
    no_dynamic_linker: bool = False
    entry: str = "_start"
    build_id: str = ""            # '' (none), 'sha1', 'md5', 'uuid' or '0x...'
    eh_frame_hdr: bool = False
    gc_sections: bool = False
    print_gc_sections: bool = False
    z_now: bool = False
    z_relro: bool = True
    z_execstack: object = None    # None: as the inputs' .note.GNU-stack say; True/False: -z (no)execstack
    z_text: bool = False
    # -z nodynamic-undefined-weak: an executable's undefined weak symbols are 0, not left to the loader
    z_dynamic_undefined_weak: bool = True
    z_ibt: bool = False
    z_shstk: bool = False
    z_isa: int = 0                # -z x86-64-v2/v3/v4: bits of GNU_PROPERTY_X86_ISA_1_NEEDED
    dt_flags: int = 0             # DF_* bits -z keywords ask for (DF_ORIGIN)
    dt_flags_1: int = 0           # DF_1_* bits -z keywords ask for (origin, nodefaultlib, nodelete ...)
    max_page_size: int = 0x1000
    export_dynamic: bool = False
    dynamic_list: tuple = ()      # symbol patterns of --dynamic-list files (exported)
    dynamic_list_given: bool = False  # a --dynamic-list file was read (in -shared: only the listed interpose)
    hash_style: str = "both"      # 'gnu', 'sysv' or 'both' (GNU ld's default here, unless gcc says gnu)
    auxiliary: tuple = ()         # -f / --auxiliary: DT_AUXILIARY names (shared objects only)
    filter: str = ""              # -F / --filter: the DT_FILTER name (the last one given, as GNU ld)
    package_metadata: str = ""    # --package-metadata=JSON: the .note.package note's text
    trace: bool = False           # -t / --trace: print each input file as it is opened
    verbose: bool = False         # --verbose: the version, the layout used, then as -t
    help: bool = False            # --help
    export_symbols: tuple = ()    # --export-dynamic-symbol(-list) patterns: exported as a dynamic list's
    exclude_libs: tuple = ()      # --exclude-libs names ('ALL', 'libx.a', 'libx'): their members export nothing
    strip_debug: bool = False
    strip_all: bool = False
    rpath: tuple = ()
    new_dtags: bool = True        # -rpath as DT_RUNPATH (GNU ld's default here); --disable-new-dtags: DT_RPATH
    sysroot: str = ""
    nostdlib: bool = False        # -nostdlib: -l searches only the -L directories, not GNU ld's defaults
    defsym: tuple = ()            # (name, expression text) of --defsym, in order
    undefined: tuple = ()         # -u / --undefined names: pull archive members that define them
    require_defined: tuple = ()   # --require-defined: an error when not defined
    init: str = "_init"
    fini: str = "_fini"
    allow_multiple_definition: bool = False
    unresolved: str = "report-all"
    version: bool = False
    time_phases: bool = False     # --time: print each pass's wall time to stderr
    stats: bool = False           # --stats: print the counts that explain the times to stderr
    shared: bool = False          # -shared: a shared object
    soname: str = ""              # -soname / -h: DT_SONAME
    version_script: tuple = ()    # --version-script files, in order
    no_undefined_version: bool = False   # a version script naming an undefined symbol is an error
    no_undefined: bool = False    # --no-undefined / -z defs: a shared object's undefined symbols are errors
    bsymbolic: str = ""           # '' / 'all' (-Bsymbolic) / 'functions' (-Bsymbolic-functions)
    # which input locals .symtab keeps (GNU ld's link_info.discard): 'merge' (its default: local
    # labels in SHF_MERGE sections go), 'labels' (-X: every local label), 'all' (-x), 'none'
    discard: str = "merge"
    emit_relocs: bool = False     # --emit-relocs / -q: the inputs' relocations kept in the output (emit_relocs.py)
    section_start: tuple = ()     # --section-start=NAME=ADDR: (name, address) of sections placed there (layout.py)
    just_symbols: tuple = ()      # -R FILE / --just-symbols=FILE: ELF files whose symbols are taken, absolute


# --- GNU ld's command-line grammar (ld/lexsup.c), as one table --------------------------------
# Every long option GNU ld 2.40 knows, with one or two dashes: name -> (takes an argument, action).
# An action is a handler name below, IGNORE (changes nothing for the links this linker makes),
# or None: GNU ld knows it, this linker does not implement it -> "not supported yet".
# Knowing every GNU name matters as much as the ones handled: `-emit-relocs` must be read as the
# long option it is, never as `-e mit-relocs`.
IGNORE = "ignore"
_LONG = {}


def _opts(names, arg, action):
    for n in names.split():
        _LONG[n] = (arg, action)


_opts("output", True, "output")
_opts("library", True, "lib")
_opts("library-path", True, "libdir")
_opts("entry", True, "entry")
_opts("pie pic-executable", False, "pie")
_opts("no-pie no-pic-executable", False, "no_pie")
_opts("static Bstatic dn non_shared", False, "bstatic")
_opts("Bdynamic dy call_shared", False, "bdynamic")
_opts("as-needed", False, "as_needed")
_opts("no-as-needed", False, "no_as_needed")
_opts("whole-archive", False, "whole")
_opts("no-whole-archive", False, "no_whole")
_opts("push-state", False, "push")
_opts("pop-state", False, "pop")
_opts("start-group", False, "group_start")
_opts("end-group", False, "group_end")
_opts("dynamic-linker", True, "interp")
_opts("no-dynamic-linker", False, "no_interp")
_opts("build-id", "?", "build_id")
_opts("eh-frame-hdr", False, "eh_frame_hdr")
_opts("no-eh-frame-hdr", False, "no_eh_frame_hdr")
_opts("gc-sections", False, "gc")
_opts("no-gc-sections", False, "no_gc")
_opts("print-gc-sections", False, "print_gc")
_opts("no-print-gc-sections", False, IGNORE)
_opts("export-dynamic", False, "export_dynamic")
_opts("no-export-dynamic", False, "no_export_dynamic")
_opts("strip-debug", False, "strip_debug")
_opts("strip-all", False, "strip_all")
_opts("rpath", True, "rpath")
_opts("hash-style", True, "hash_style")
_opts("version", False, "version")
_opts("time", False, "time")
_opts("stats", False, "stats")
_opts("sysroot", True, "sysroot")
_opts("nostdlib", False, "nostdlib")
_opts("defsym", True, "defsym")
_opts("undefined", True, "undefined")
_opts("require-defined", True, "require_defined")
_opts("init", True, "init")
_opts("fini", True, "fini")
_opts("allow-multiple-definition", False, "muldefs")
_opts("unresolved-symbols", True, "unresolved")
_opts("dynamic-list", True, "dynamic_list")
_opts("export-dynamic-symbol", True, "export_symbol")
_opts("export-dynamic-symbol-list", True, "export_symbol_list")
_opts("exclude-libs", True, "exclude_libs")
_opts("auxiliary", True, "auxiliary")
_opts("filter", True, "filter")
_opts("package-metadata", "?", "package_metadata")
_opts("trace", False, "trace")
_opts("verbose", "?", "verbose")
_opts("help", False, "help")
# --unique[=SECTION] gives each orphan (or each SECTION) input section an output section of its own:
# not done here (named)
_opts("unique", "?", None)
# the LTO plugin gcc always passes: what matters is whether an input needs it (parse names those)
_opts("plugin plugin-opt", True, IGNORE)
_opts("flto flto-partition", "?", IGNORE)
_opts("shared Bshareable", False, "shared")
_opts("soname", True, "soname")
_opts("version-script", True, "version_script")
_opts("no-undefined-version", False, "no_undefined_version")
_opts("undefined-version", False, "undefined_version")
_opts("no-undefined", False, "no_undefined")
_opts("Bsymbolic", False, "bsymbolic")
_opts("Bsymbolic-functions", False, "bsymbolic_functions")
_opts("Bno-symbolic", False, "bno_symbolic")
_opts("sort-common warn-common no-fatal-warnings "
      "no-warn-mismatch no-copy-dt-needed-entries no-keep-memory reduce-memory-overheads "
      "allow-shlib-undefined no-allow-shlib-undefined relax no-relax warn-once "
      "no-demangle demangle no-map-whole-files map-whole-files no-warn-execstack warn-execstack "
      "no-warn-rwx-segments warn-rwx-segments no-warn-search-mismatch warn-textrel warn-constructors "
      "warn-alternate-em warn-section-align warn-multiple-gp no-ld-generated-unwind-info "
      "ld-generated-unwind-info check-sections no-check-sections no-print-map-discarded "
      "print-map-discarded ignore-unresolved-symbol-not-used", False, IGNORE)
# the default; it only undoes --warn-unresolved-symbols, which is named (this linker prints no warnings)
_opts("error-unresolved-symbols", False, IGNORE)
_opts("discard-all", False, "discard_all")
_opts("discard-locals", False, "discard_labels")
_opts("discard-none", False, "discard_none")
_opts("enable-new-dtags", False, "new_dtags")
_opts("disable-new-dtags", False, "old_dtags")
_opts("color-diagnostics threads", "?", IGNORE)
_opts("no-threads", False, IGNORE)
_opts("error-handling-script", True, IGNORE)
# Known to GNU ld, not implemented here (each named when used): ------------------------------
_opts("relocatable", False, "relocatable")
_opts("EL", False, IGNORE)
_opts("emit-relocs", False, "emit_relocs")
_opts("just-symbols", True, "just_symbols")
_opts("section-start", True, "section_start")
_opts("Bgroup EB Qy Ur accept-unknown-input-arch "
      "add-stdcall-alias compat-implib cref ctf-share-types ctf-variables dT dc dp default-imported-symver "
      "default-symver disable-auto-image-base disable-auto-import disable-large-address-aware "
      "disable-long-section-names disable-multiple-abs-defs disable-reloc-section "
      "disable-runtime-pseudo-reloc disable-stdcall-fixup dll "
      "dynamic-list-cpp-new dynamic-list-cpp-typeinfo dynamic-list-data embedded-relocs "
      "enable-auto-image-base enable-auto-import enable-extra-pe-debug enable-extra-pep-debug "
      "enable-long-section-names enable-non-contiguous-regions enable-non-contiguous-regions-warnings "
      "enable-reloc-section enable-runtime-pseudo-reloc enable-stdcall-fixup "
      "exclude-all-symbols export-all-symbols force-exe-suffix force-group-allocation gc-keep-exported "
      "kill-at large-address-aware mri-script nmagic no-accept-unknown-input-arch no-ctf-variables "
      "no-define-common no-omagic no-strip-discarded no-warnings noinhibit-exec omagic print-map "
      "print-memory-usage print-output-format print-sysroot qmagic strip-discarded support-old-code "
      "target-help traditional-format warn-duplicate-exports warn-unresolved-symbols "
      "split-by-file copy-dt-needed-entries fatal-warnings", False, None)
_opts("architecture assert audit base-file compress-debug-sections default-script "
      "dependency-file depaudit dll-search-prefix exclude-modules-for-implib "
      "exclude-symbols file-alignment format "
      "fuse-ld gpsize hash-size heap image-base major-image-version major-os-version "
      "major-subsystem-version max-cache-size minor-image-version minor-os-version "
      "minor-subsystem-version oformat orphan-handling out-implib output-def "
      "retain-symbols-file rpath-link script section-alignment sort-section "
      "spare-dynamic-tags split-by-reloc stack subsystem task-link thumb-entry trace-symbol "
      "version-exports-section wrap Map Tbss Tdata Ttext Trodata-segment "
      "Tldata-segment Ttext-segment ignore-unresolved-symbol", True, None)
_LONG_NAMES = tuple(_LONG)

# Single-letter options: letter -> (takes an argument, action); an argument may be glued (-lc, -ofoo).
_SHORT = {
    "o": (True, "output"), "l": (True, "lib"), "L": (True, "libdir"), "e": (True, "entry"),
    "I": (True, "interp"), "m": (True, "emulation"), "z": (True, "z"), "u": (True, "undefined"),
    "R": (True, "R"), "O": (True, IGNORE), "a": (True, "a"), "Y": (True, None), "y": (True, None),
    "T": (True, None), "A": (True, None), "b": (True, None), "c": (True, None), "f": (True, "auxiliary"),
    "F": (True, "filter"), "G": (True, None), "h": (True, "soname"), "P": (True, None),
    "E": (False, "export_dynamic"), "S": (False, "strip_debug"), "s": (False, "strip_all"),
    "v": (False, "version"), "V": (False, "version"), "X": (False, "discard_labels"), "g": (False, IGNORE),
    "(": (False, "group_start"), ")": (False, "group_end"), "r": (False, "relocatable"),
    "i": (False, "relocatable"),
    "d": (False, None), "M": (False, None), "n": (False, None), "N": (False, None), "q": (False, "emit_relocs"),
    "t": (False, "trace"), "x": (False, "discard_all"), "w": (False, IGNORE),
}
# Letters whose glued form GNU ld takes even when the word also starts a long option (-lib is -l ib).
_ALWAYS_GLUED = "lL"


def expand_response_files(argv, depth=0):
    out = []
    for a in argv:
        if a.startswith("@") and len(a) > 1 and depth < 16:
            try:
                with open(a[1:], encoding="utf-8") as f:
                    out.extend(expand_response_files(shlex.split(f.read()), depth + 1))
            except OSError:
                out.append(a)  # GNU ld: an unreadable @file is an input file name
            except ValueError as e:
                raise BadInput(f"{a[1:]}: {e}") from None
        else:
            out.append(a)
    return out


def _split(argv, i):
    """argv[i] (an option) -> (action, the word as typed, argument or None, index of the next word)."""
    a = argv[i]
    if a.startswith("--"):
        body, dashes = a[2:], "--"
    else:
        body, dashes = a[1:], "-"
    name, eq, val = body.partition("=")
    if dashes == "-" and len(body) >= 1 and body in _SHORT and len(body) == 1:
        takes, action = _SHORT[body]
        return _take(argv, i, a, takes, action, None)
    if name in _LONG:
        takes, action = _LONG[name]
        if eq and not takes:
            raise BadInput(f"option '{dashes}{name}' doesn't allow an argument")
        return _take(argv, i, f"{dashes}{name}", takes, action, val if eq else None)
    if dashes == "-" and body:
        letter = body[0]
        if letter in _SHORT and _SHORT[letter][0]:
            if letter in _ALWAYS_GLUED or not any(n.startswith(name) for n in _LONG_NAMES):
                return _SHORT[letter][1], f"-{letter}", body[1:], i + 1
    if any(n.startswith(name) for n in _LONG_NAMES) and name:
        raise Unsupported(f"option {a} (an abbreviation of a long option)")
    raise Unsupported(f"option {a}")


def _take(argv, i, word, takes, action, val):
    if takes is True and val is None:
        if i + 1 >= len(argv):
            raise BadInput(f"option requires an argument -- '{word.lstrip('-')}'")
        return action, word, argv[i + 1], i + 2
    return action, word, val, i + 1


def parse_args(argv) -> Options:
    argv = expand_response_files(list(argv))
    kw = {}
    inputs = []
    lib_dirs = []
    rpath = []
    defsym, undefined, required, dynlist, exported, excluded = [], [], [], [], [], []
    as_needed = static = whole = False
    stack = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if not a.startswith("-") or a == "-":
            inputs.append(InputArg("file", a, as_needed, static, whole))
            i += 1
            continue
        start = i
        action, word, val, i = _split(argv, i)
        if action is None:
            raise Unsupported(f"option {' '.join(argv[start:i])}")
        if action == IGNORE:
            pass
        elif action == "lib":
            inputs.append(InputArg("lib", val, as_needed, static, whole))
        elif action == "libdir":
            lib_dirs.append(val)
        elif action == "output":
            kw["output"] = val
        elif action == "entry":
            kw["entry"] = val
        elif action == "pie":
            kw["pie"] = True
        elif action == "no_pie":
            kw["pie"] = False
        elif action == "bstatic":
            static = True
            if word.lstrip("-") == "static":
                kw["static"] = True
        elif action == "bdynamic":
            static = False
        elif action == "as_needed":
            as_needed = True
        elif action == "no_as_needed":
            as_needed = False
        elif action == "whole":
            whole = True
        elif action == "no_whole":
            whole = False
        elif action == "push":
            stack.append((as_needed, static, whole))
        elif action == "pop":
            if not stack:
                raise BadInput("--pop-state without a matching --push-state")
            as_needed, static, whole = stack.pop()
        elif action == "group_start":
            inputs.append(InputArg("group-start"))
        elif action == "group_end":
            inputs.append(InputArg("group-end"))
        elif action == "interp":
            kw["dynamic_linker"] = val
            kw["no_dynamic_linker"] = False
        elif action == "no_interp":
            kw["no_dynamic_linker"] = True
        elif action == "emulation":
            if val != "elf_x86_64":
                raise Unsupported(f"emulation {val} (only elf_x86_64)")
        elif action == "build_id":
            style = val if val is not None else "sha1"
            if style == "none":
                kw["build_id"] = ""
            elif style in ("sha1", "md5", "uuid") or (style.startswith("0x") and _is_hex(style[2:])):
                kw["build_id"] = style
            else:
                raise Unsupported(f"--build-id={style}")
        elif action in _SETS:
            field_name, value = _SETS[action]
            kw[field_name] = val if value is None else value
        elif action == "z":
            _z(kw, val)
        elif action == "rpath":
            rpath.append(val)
        elif action == "R":
            # -R DIR is -rpath (GNU ld's rule, for Solaris compatibility); -R FILE is --just-symbols
            if os.path.isdir(val):
                rpath.append(val)
            else:
                inputs.append(InputArg("just-symbols", val))
                kw["just_symbols"] = kw.get("just_symbols", ()) + (val,)
        elif action == "section_start":
            name, eq, org = val.rpartition("=")
            try:
                # GNU ld reads ORG as hexadecimal, with or without its 0x
                address = int(org, 16)
            except ValueError:
                raise BadInput(f"invalid hex number `{org}' in --section-start") from None
            if not eq or not name:
                raise BadInput(f"invalid argument to option \"--section-start\": {val}")
            kw["section_start"] = tuple(p for p in kw.get("section_start", ()) if p[0] != name) + ((name, address),)
        elif action == "just_symbols":
            inputs.append(InputArg("just-symbols", val))
            kw["just_symbols"] = kw.get("just_symbols", ()) + (val,)
        elif action == "hash_style":
            if val not in ("gnu", "both", "sysv"):
                raise BadInput(f"invalid hash style `{val}'")
            kw["hash_style"] = val
        elif action == "sysroot":
            kw["sysroot"] = val
        elif action == "defsym":
            name, eq, expr = val.partition("=")
            if not eq or not name.strip():
                raise BadInput(f"--defsym {val}: expected SYMBOL=EXPRESSION")
            defsym.append((name.strip(), expr.strip()))
        elif action == "undefined":
            undefined.append(val)
        elif action == "require_defined":
            undefined.append(val)
            required.append(val)
        elif action == "init":
            kw["init"] = val
        elif action == "fini":
            kw["fini"] = val
        elif action == "unresolved":
            if val not in ("ignore-all", "report-all", "ignore-in-object-files", "ignore-in-shared-libs"):
                raise BadInput(f"bad --unresolved-symbols option: {val}")
            kw["unresolved"] = val
        elif action == "dynamic_list":
            dynlist.extend(read_dynamic_list(_script_file(val, lib_dirs, kw.get("sysroot", ""))))
            kw["dynamic_list_given"] = True
        elif action == "export_symbol":
            exported.append(val)
        elif action == "export_symbol_list":
            # the file is a dynamic list (GNU ld reads it with the same grammar)
            exported.extend(read_dynamic_list(_script_file(val, lib_dirs, kw.get("sysroot", ""))))
        elif action == "auxiliary":
            kw["auxiliary"] = kw.get("auxiliary", ()) + (val,)
        elif action == "filter":
            kw["filter"] = val
        elif action == "package_metadata":
            kw["package_metadata"] = _package_metadata(val or "")
        elif action == "verbose":
            kw["verbose"] = kw["trace"] = True
        elif action == "exclude_libs":
            # GNU ld's list: names separated by commas or colons
            excluded.extend(n for n in val.replace(":", ",").split(",") if n)
        elif action == "version_script":
            val = _script_file(val, lib_dirs, kw.get("sysroot", ""))
            kw["version_script"] = kw.get("version_script", ()) + (val,)
        elif action == "a":
            if val not in ("archive", "default", "shared"):
                raise Unsupported(f"-a {val}")
            static = val == "archive"
        else:  # pragma: no cover - every action of the tables is handled above
            raise AssertionError(f"option action {action} has no handler")
    if stack:
        pass  # ld itself does not complain about an unbalanced --push-state
    for name, letter in (("auxiliary", "f"), ("filter", "F")):
        if kw.get(name) and not kw.get("shared"):
            raise BadInput(f"-{letter} may not be used without -shared")
    if kw.get("sysroot"):
        lib_dirs = [_sysrooted(d, kw["sysroot"]) for d in lib_dirs]
    return Options(inputs=tuple(inputs), lib_dirs=tuple(lib_dirs), rpath=tuple(rpath), defsym=tuple(defsym),
                   undefined=tuple(undefined), require_defined=tuple(required), dynamic_list=tuple(dynlist),
                   export_symbols=tuple(exported), exclude_libs=tuple(excluded), **kw)


_SETS = {
    "eh_frame_hdr": ("eh_frame_hdr", True), "no_eh_frame_hdr": ("eh_frame_hdr", False),
    "gc": ("gc_sections", True), "no_gc": ("gc_sections", False), "print_gc": ("print_gc_sections", True),
    "export_dynamic": ("export_dynamic", True), "no_export_dynamic": ("export_dynamic", False),
    "strip_debug": ("strip_debug", True), "strip_all": ("strip_all", True), "version": ("version", True),
    "time": ("time_phases", True), "muldefs": ("allow_multiple_definition", True), "stats": ("stats", True),
    "relocatable": ("relocatable", True), "new_dtags": ("new_dtags", True), "old_dtags": ("new_dtags", False),
    "shared": ("shared", True), "soname": ("soname", None), "no_undefined": ("no_undefined", True),
    "no_undefined_version": ("no_undefined_version", True), "undefined_version": ("no_undefined_version", False),
    "bsymbolic": ("bsymbolic", "all"), "bsymbolic_functions": ("bsymbolic", "functions"),
    "bno_symbolic": ("bsymbolic", ""), "nostdlib": ("nostdlib", True),
    "trace": ("trace", True), "help": ("help", True), "emit_relocs": ("emit_relocs", True),
    "discard_all": ("discard", "all"), "discard_labels": ("discard", "labels"), "discard_none": ("discard", "none"),
}


def _package_metadata(text):
    """--package-metadata=JSON -> the note's text, '' for none. GNU ld 2.40 (with jansson) ignores,
    with a warning, a text that is not a JSON object or array: this linker writes no note either.
    What Python reads as JSON and jansson does not (NaN, Infinity) is named."""
    if not text:
        return ""
    import json

    def odd(word):
        raise Unsupported(f"--package-metadata with {word} (jansson reads no such JSON)")
    try:
        value = json.loads(text, parse_constant=odd)
    except ValueError:
        return ""
    return text if isinstance(value, (dict, list)) else ""


def _is_hex(s):
    try:
        return bool(s) and len(s) % 2 == 0 and bytes.fromhex(s) is not None
    except ValueError:
        return False


def _sysrooted(d, sysroot):
    """-L=DIR and -L$SYSROOT/DIR search DIR under the sysroot (GNU ld's rule)."""
    if d.startswith("="):
        return sysroot.rstrip("/") + d[1:]
    if d.startswith("$SYSROOT"):
        return sysroot.rstrip("/") + d[8:]
    return d


def _script_file(name, lib_dirs, sysroot):
    """A version script or dynamic list named on the command line, where GNU ld opens it
    (ldfile_open_command_file): the name as given (a relative one from the current directory), else
    under each -L given so far. Not found: the name, for the reader to say so."""
    if os.path.isabs(name) or os.path.exists(name):
        return name
    for d in lib_dirs:
        p = os.path.join(_sysrooted(d, sysroot) if sysroot else d, name)
        if os.path.isfile(p):
            return p
    return name


# -z keyword -> (Options field, value), or an int: DF_1_* bits it adds to DT_FLAGS_1.
_Z_WORDS = {
    "now": ("z_now", True), "lazy": ("z_now", False),
    "relro": ("z_relro", True), "norelro": ("z_relro", False),
    "execstack": ("z_execstack", True), "noexecstack": ("z_execstack", False),
    "text": ("z_text", True),
    "dynamic-undefined-weak": ("z_dynamic_undefined_weak", True),
    "nodynamic-undefined-weak": ("z_dynamic_undefined_weak", False), "ibt": ("z_ibt", True), "shstk": ("z_shstk", True),
    "muldefs": ("allow_multiple_definition", True), "defs": ("no_undefined", True),
    "global": 0x2, "loadfltr": 0x10, "origin": 0x80, "interpose": 0x400, "nodefaultlib": 0x800,
    "nodump": 0x1000,
    "nodelete": 0x8, "initfirst": 0x20, "nodlopen": 0x40,   # set in shared objects only (as GNU ld)
}
# -z keywords that change nothing in the executables this linker makes (its layout is already
# -z separate-code's; -z defs/notext only change what is reported for shared libraries; GNU ld
# sets DF_1_NODELETE/INITFIRST/NOOPEN in shared objects only).
_Z_IGNORED = {"separate-code", "noseparate-code", "separate-loadable-segments", "nodefs",
              "undefs", "combreloc", "nocombreloc", "notext", "textoff", "noextern-protected-data",
              "nopack-relative-relocs", "cet-report=none", "keep-text-section-prefix",
              "nokeep-text-section-prefix", "noexecheap", "start-stop-gc", "nostart-stop-gc",
              "lam-report=none", "lam-u48-report=none", "lam-u57-report=none", "report-relative-reloc"}
_ISA_LEVELS = {"x86-64-baseline": 1, "x86-64-v2": 2, "x86-64-v3": 4, "x86-64-v4": 8}


def _z(kw, word):
    z = _Z_WORDS.get(word)
    if isinstance(z, int):
        kw["dt_flags_1"] = kw.get("dt_flags_1", 0) | z
        if word == "origin":
            kw["dt_flags"] = kw.get("dt_flags", 0) | 0x1    # DF_ORIGIN, as GNU ld sets both
    elif z is not None:
        kw[z[0]] = z[1]
    elif word in _Z_IGNORED:
        pass
    elif word in _ISA_LEVELS:
        kw["z_isa"] = kw.get("z_isa", 0) | _ISA_LEVELS[word]
    elif word.startswith(("max-page-size=", "common-page-size=")):
        key, _, num = word.partition("=")
        try:
            size = int(num, 0)
        except ValueError:
            raise BadInput(f"invalid {key}: {num}") from None
        if size <= 0 or size & (size - 1):
            raise BadInput(f"invalid {key}: {num} (not a power of two)")
        if key == "max-page-size":
            if size < 0x1000:
                raise Unsupported(f"-z {word} (below the 4 KiB page)")
            kw["max_page_size"] = size
        elif size != 0x1000:
            raise Unsupported(f"-z {word}")
    else:
        raise Unsupported(f"-z {word}")
