"""`linkwrap run -- <build>` without `linkwrap install`: link through linkwrap for that child alone.

Input: the build's argv, the environment, and the project's files, read only. Output: the
environment for the child and the notes to show (a Trial). No file is written, unlike
install: what changes lives in the child's environment and ends with it.

- cargo: `CARGO_TARGET_<TRIPLE>_LINKER` (which wins over every config file) for the host and
  each target of the command line, `CARGO_BUILD_TARGET` and `[build] target`. A linker someone
  set stays: in the environment it is left alone; in a config file a compiler driver (clang,
  aarch64-linux-gnu-gcc) is kept as linkwrap's driver for that target (`LINKWRAP_CC_<TRIPLE>`),
  and a linker (mold, ld.lld) is left in charge.
- cmake configure: `CMAKE_<LANG>_LINKER_LAUNCHER` in the environment, which CMake ≥ 3.21 reads
  on a build directory's first configure (a launcher given with -D or already cached wins).
- cmake --build, ninja: nothing can be set from outside; when the build's files do not run
  linkwrap-launch, a note says how to install it.
"""
import os
import re

from linkwrap.errors import LinkwrapError

Trial = tuple  # (environ: dict, notes: list[str])


def prepare(argv, environ) -> Trial:
    """(the child's environment, notes for stderr) for this build command."""
    tool = os.path.basename(argv[0]) if argv else ""
    env = dict(environ)
    try:
        if tool == "cargo":
            return env, cargo(argv[1:], env)
        if tool == "cmake":
            return env, cmake(argv[1:], env)
        if tool in ("ninja", "samu"):
            return env, ninja(argv[1:])
    except LinkwrapError as e:  # the build runs anyway, as it would without linkwrap
        return dict(environ), [f"{e}".splitlines()[0] + "; this build runs without linkwrap"]
    return env, []


def env_key(triple: str) -> str:
    """Cargo's mangling of a triple in environment names: upper case, - and . as _."""
    return re.sub(r"[-.]", "_", triple).upper()


# ---- cargo ----

def cargo_targets(args, environ, configs) -> list[str]:
    """The --target triples of a cargo command line, else CARGO_BUILD_TARGET, else [build] target."""
    found = []
    i = 0
    while i < len(args) and args[i] != "--":
        a = args[i]
        if a == "--target" and i + 1 < len(args):
            found.append(args[i + 1])
            i += 1
        elif a.startswith("--target="):
            found.append(a[len("--target="):])
        i += 1
    if found:
        return found
    if environ.get("CARGO_BUILD_TARGET"):
        return [environ["CARGO_BUILD_TARGET"]]
    for _, data in configs:  # nearest first: the first one that says wins
        build = data.get("build") if isinstance(data.get("build"), dict) else {}
        target = build.get("target")
        if isinstance(target, str):
            return [target]
        if isinstance(target, list):
            return [t for t in target if isinstance(t, str)]
    return []


def cargo(args, env) -> list[str]:
    from linkwrap.install import cargo as cargo_mod
    from linkwrap.install import launcher
    try:
        root = cargo_mod.project_root(os.getcwd())
    except LinkwrapError:
        root = None  # `cargo new`, `cargo install`: the global config still counts
    from linkwrap.install import cargo_checks
    configs = cargo_checks.configs_read(root or os.getcwd(), env)
    # A target file (`--target my.json`) is named by its stem in Cargo's environment names.
    targets = [os.path.splitext(os.path.basename(t))[0] if t.endswith(".json") else t
               for t in cargo_targets(args, env, configs)]
    triples = [cargo_mod.host_triple()] + [t for t in targets if t]
    ours = launcher.entry_point(cargo_mod.SCRIPT)
    notes, set_for = [], []
    for triple in dict.fromkeys(triples):
        var = f"CARGO_TARGET_{env_key(triple)}_LINKER"
        if env.get(var):
            if os.path.basename(env[var]) != cargo_mod.SCRIPT:
                notes.append(f"{var}={env[var]} is set: {triple} links run it, not linkwrap")
            continue
        configured = next((cargo_mod.linker_of(data, triple) for _, data in configs
                           if cargo_mod.linker_of(data, triple) is not None), None)
        if configured is not None:
            if os.path.basename(str(configured)) == cargo_mod.SCRIPT:
                other = other_install(str(configured), env)  # installed, but is it this linkwrap?
                if other:
                    notes.append(f"the Cargo config's linker for {triple}: {other}; `linkwrap install` "
                                 "from this one makes it this one's")
                continue
            if not cargo_mod._is_driver(str(configured)):
                notes.append(f"the Cargo config sets linker = {configured!r} for {triple}: "
                             f"left in charge, its links do not go through linkwrap")
                continue
            env.setdefault(f"LINKWRAP_CC_{env_key(triple)}", str(configured))
        env[var] = ours
        set_for.append(triple)
    if set_for:
        notes.insert(0, f"Cargo links through linkwrap for this run only ({', '.join(set_for)}); "
                        f"`linkwrap install` makes it last")
    return notes


# ---- cmake ----

def cmake_mode(args):
    """('build', dir), ('configure', build dir or None) or (None, None) for -E, -P, --help…"""
    if not args:
        return None, None
    if args[0] == "--build":
        return ("build", args[1]) if len(args) > 1 else (None, None)
    if args[0].startswith(("-E", "-P", "--help", "--version", "--install", "--workflow", "--find-package")):
        return None, None
    build = None
    source = None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-B" and i + 1 < len(args):
            build, i = args[i + 1], i + 1
        elif a.startswith("-B") and len(a) > 2:
            build = a[2:]
        elif a in ("-S", "-G", "-D", "-C", "-U", "-T", "-A", "--preset", "--toolchain") and i + 1 < len(args):
            i += 1
        elif not a.startswith("-"):
            source = a
        i += 1
    if build is None and source is not None and os.path.isfile(os.path.join(source, "CMakeCache.txt")):
        build = source  # `cmake <build dir>` reconfigures it
    if build is None and source is not None:
        build = "."  # `cmake <source dir>` configures the current directory
    return "configure", build


def cmake(args, env) -> list[str]:
    from linkwrap.install import cmake as cmake_mod
    from linkwrap.install import launcher
    mode, folder = cmake_mode(args)
    if mode == "build":
        return _configured_without_us(os.path.abspath(folder))
    if mode != "configure":
        return []
    if folder and os.path.isfile(os.path.join(folder, "CMakeCache.txt")):
        return _configured_without_us(os.path.abspath(folder))
    ours = launcher.entry_point(cmake_mod.SCRIPT)
    version = cmake_mod.cmake_version()
    langs = [lang for lang, since in cmake_mod.LANGS if version >= since]
    for lang in langs:
        env.setdefault(f"CMAKE_{lang}_LINKER_LAUNCHER", ours)
    if not folder:
        return ["the new build directory links through linkwrap (CMAKE_<LANG>_LINKER_LAUNCHER, kept in its "
                "cache; `linkwrap uninstall --cmake DIR` takes it out)"]
    folder = os.path.abspath(folder)
    from linkwrap.install import marker
    marker.remember("cmake-cache", folder, how="run")  # the launcher outlives the run: status lists it
    return [f"the new build directory {folder} links through linkwrap (CMAKE_<LANG>_LINKER_LAUNCHER, "
            f"kept in its cache; `linkwrap uninstall --cmake {_q(folder)}` takes it out)"]


def _configured_without_us(builddir) -> list[str]:
    from linkwrap.install import cmake as cmake_mod
    found = cmake_mod.cache_installed(builddir)
    if found is not None:
        launcher = next(iter(sorted(found["entries"].values()))).split(";")[0]
        other = other_install(launcher)
        return [f"{builddir}'s linker launcher: {other}; `linkwrap install --cmake {_q(builddir)}` from this "
                "one makes it this one's"] if other else []
    return [f"{builddir} was configured without linkwrap, and its links cannot be redirected from outside: "
            f"`linkwrap install --cmake {_q(builddir)}` makes them run linkwrap (`linkwrap uninstall` undoes it)"]


# ---- ninja ----

def ninja_file(args) -> str:
    folder, name = ".", "build.ninja"
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-C", "-f") and i + 1 < len(args):
            if a == "-C":
                folder = os.path.join(folder, args[i + 1])
            else:
                name = args[i + 1]
            i += 1
        elif a.startswith("-C") and len(a) > 2:
            folder = os.path.join(folder, a[2:])
        elif a.startswith("-f") and len(a) > 2:
            name = a[2:]
        i += 1
    return os.path.abspath(os.path.join(folder, name))


def ninja(args) -> list[str]:
    from linkwrap.install import cmake as cmake_mod
    from linkwrap.install import ninja as ninja_mod
    path = ninja_file(args)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return []  # ninja says what is wrong
    commands = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    if ninja_mod.PREFIX_RE.search(commands):
        return []  # installed, or prefixed by hand
    generated = ninja_mod.generated_by(text)
    if generated is None:
        return [f"{path} does not run linkwrap, and a ninja file's link rules cannot be redirected from outside: "
                f"`linkwrap install --ninja {_q(path)}` makes them (`linkwrap uninstall --ninja` undoes it)"]
    who, hint = generated
    folder = os.path.dirname(path)
    if who == "CMake":
        if os.path.isfile(os.path.join(folder, "CMakeFiles", "rules.ninja")):
            with open(os.path.join(folder, "CMakeFiles", "rules.ninja"), encoding="utf-8", errors="replace") as f:
                if cmake_mod.SCRIPT in f.read():
                    return []
        return _configured_without_us(folder)
    return [f"{path} is written by {who} and does not run linkwrap: {hint}"]


# ---- which linkwrap an entry point runs ----

def install_of(path):
    """(the interpreter's directory, the directory linkwrap is imported from, or None when only pip
    knows) of the linkwrap the entry point at path runs; None when it is none of linkwrap's scripts."""
    import ast
    import shlex
    with open(path, "rb") as f:
        head = f.read(4)
    if head == b"\x7fELF":  # the native client: its server and its fall-back are the script beside it
        return install_of(os.path.join(os.path.dirname(path), "py", os.path.basename(path)))
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read(8192)
    python = parent = None
    def first_word(s):
        try:
            return (shlex.split(s) or [""])[0]
        except ValueError:  # an unbalanced quote: not a script linkwrap wrote
            return None
    for line in text.splitlines():
        if line.startswith("py=") and python is None:
            python = first_word(line[3:])
        elif line.startswith("sys.path.insert(0, ") and parent is None:
            try:
                parent = ast.literal_eval(line[len("sys.path.insert(0, "):].rstrip(")"))
            except (ValueError, SyntaxError):
                pass
        elif line.startswith("#!") and python is None and "python" in line:  # pip's console script
            python = first_word(line[2:])
    if python is None or "linkwrap" not in text:
        return None
    return os.path.dirname(os.path.abspath(python)), parent


def other_install(linker, environ=os.environ):
    """'runs the linkwrap of <python> (from <dir>), not this one (<python>)' when the entry point
    `linker` (a path, or a bare name found on PATH as Cargo finds it) belongs to another linkwrap
    install -- another virtual environment, another checkout -- else None (this one, or unknown)."""
    import shutil
    import sys
    import linkwrap
    path = linker if os.sep in linker else shutil.which(linker, path=environ.get("PATH", os.defpath))
    try:
        theirs = install_of(path) if path else None
    except OSError:
        return None
    if theirs is None:
        return None
    here = (os.path.dirname(os.path.abspath(sys.executable)),
            os.path.dirname(os.path.dirname(os.path.abspath(linkwrap.__file__))))
    if theirs[0] == here[0] and theirs[1] in (None, here[1]):
        return None
    where = f", linkwrap from {theirs[1]}" if theirs[1] and theirs[1] != here[1] else ""
    return (f"{path} runs another linkwrap install (Python in {theirs[0]}{where}), not this one "
            f"(Python in {here[0]}{', linkwrap from ' + here[1] if where else ''}), and its code links")


def _q(path) -> str:
    """A path as a shell would need it in a command the user copies (spaces, quotes)."""
    import shlex
    return shlex.quote(str(path))
