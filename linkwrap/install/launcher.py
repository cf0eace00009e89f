"""The entry points builds run, written next to linkwrap's state.

pip's console scripts start Python with site-packages processing and import
`re` before our code runs: 10-30 ms per link, more than the whole wrapper's
budget. `linkwrap install` therefore writes the linker / launcher path as a
small script of its own (templates/launcher.py) that runs the same
interpreter with -I -S and finds linkwrap by the path it has now, and that
links as asked when that interpreter or linkwrap is gone. Each interpreter and
package location gets its own directory, so an install from another virtual
environment never rewrites (or, deleted, breaks) this one's. The script keeps
the console script's name, so Cargo's and CMake's settings still read
`…/linkwrap-cc` and `…/linkwrap-launch`. `--console-script` writes pip's
script instead.
"""
import binascii
import os
import shlex
import sys

from linkwrap import paths
from linkwrap.install import marker

ENTRIES = {"linkwrap-cc": "main", "linkwrap-launch": "launch_main"}


def fast_script(name: str, write: bool = True) -> str:
    """Write (or refresh) the entry point `name` builds run; -> its absolute path.

    It is the native client (linkwrap/server/client.c, compiled here with the system's
    cc) when that compiles, else the Python script itself (script_path())."""
    path = os.path.join(_bin_dir(), name)
    if not write:
        return path
    script = _write_script(name, script_path(name))
    if not _native_client(name, script, path):
        _write(path, _read(script), 0o755)
    return path


def script_path(name: str) -> str:
    """The Python entry point `name` (the client execs it when no server takes the link)."""
    return os.path.join(_bin_dir(), "py", name)


def _bin_dir() -> str:
    import linkwrap
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(linkwrap.__file__)))
    where = binascii.crc32(f"{os.path.realpath(sys.executable)}\0{package_parent}".encode("utf-8", "surrogateescape"))
    return os.path.join(paths.state_dir(), "bin", f"{where:08x}")


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _write(path, data: bytes, mode) -> None:
    """Replace path with data (temp + rename: a build running it meanwhile sees old or new), through
    the fd of its directory: every directory from / down is one no other user can change (a shared
    LINKWRAP_HOME's owner could else swap bin/<hash> for their own between this and the next build)."""
    where, name = os.path.split(path)
    try:
        dfd = paths.open_trusted_dir(where, create=True, mend=True)
    except paths.UntrustedDir as e:
        raise untrusted(str(e)) from None
    except OSError as e:
        raise _cannot_write(path, e) from None
    try:
        if _is_ours(dfd, name, data, mode):
            return
        tmp = f"{name}.{os.getpid()}.tmp"
        try:
            os.unlink(tmp, dir_fd=dfd)  # O_EXCL below: never a file someone left under that name
        except FileNotFoundError:
            pass
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dfd)
        with os.fdopen(fd, "wb") as f:
            os.fchmod(fd, mode)  # whatever the umask
            f.write(data)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except OSError as e:
        raise _cannot_write(path, e) from None
    finally:
        os.close(dfd)


def _is_ours(dfd, name, data, mode) -> bool:
    """name in dfd's directory is already data, with that mode, and only this user can change it."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        return (not paths.others_can_write(st) and st.st_mode & 0o7777 == mode and st.st_size == len(data)
                and f.read() == data)


def _cannot_write(path, e):
    from linkwrap.errors import InstallError
    return InstallError(f"cannot write linkwrap's entry point {path}: {e.strerror}\n"
                        "hint: set LINKWRAP_HOME to a writable directory, or use --console-script")


def untrusted(problem: str):
    """install's refusal of a state directory on a path another user could change (issue 31)."""
    from linkwrap.errors import InstallError
    return InstallError(f"{problem}: not used for linkwrap's state (set LINKWRAP_HOME to a directory of your own)")


def check_state() -> None:
    """Refuse (InstallError) before anything is written when the state, cache or config directory
    sits where another user could change it: every build would run what they put there."""
    problem = paths.untrusted_state()
    if problem:
        raise untrusted(problem)


def _c_string(text: str) -> str:
    return '"' + "".join(chr(b) if chr(b).isalnum() or chr(b) in "/._-+ " else f"\\{b:03o}"
                         for b in text.encode("utf-8", "surrogateescape")) + '"'


# No answer from a server in this time: the client runs the script. A burst of links (make -j64)
# may wait for spares to be forked on a busy machine; only a wedged server takes this long.
CLIENT_TIMEOUT_S = 10


def _native_client(name: str, script: str, path: str) -> bool:
    """Compile client.c for this script into path with the system's cc. -> False: none compiled."""
    import shutil
    from linkwrap import __version__
    from linkwrap.server.lifetime import install_id
    cc = shutil.which("cc")
    if cc is None:
        return False
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "server", "client.c")
    body = _read(here)
    if body is None:
        return False
    source = (f"#define LW_SCRIPT {_c_string(script)}\n#define LW_VERSION {_c_string(__version__)}\n"
              f"#define LW_INSTALL {_c_string(install_id())}\n#define LW_TIMEOUT_S {CLIENT_TIMEOUT_S}\n"
              ).encode() + body
    saved = os.path.join(os.path.dirname(script), f"{name}.c")
    if _read(saved) == source and is_elf(path):
        return True
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory(prefix="linkwrap-client-") as tmp:
        src, out = os.path.join(tmp, "client.c"), os.path.join(tmp, name)
        with open(src, "wb") as f:
            f.write(source)
        # Static first: every link execs the client, and a static one skips the dynamic loader
        # (~0.1 ms here); a toolchain without a static C library links it dynamically.
        for static in (["-static"], []):
            try:
                done = subprocess.run([cc, "-O2", *static, "-o", out, src], capture_output=True, timeout=120,
                                      env={k: v for k, v in os.environ.items() if not k.startswith("LINKWRAP_")})
            except (OSError, subprocess.SubprocessError):
                return False
            if done.returncode == 0 and is_elf(out):
                break
        else:
            return False
        _write(path, _read(out), 0o755)
    _write(saved, source, 0o644)
    return True


def is_elf(path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _write_script(name: str, path: str) -> str:
    """Write (or refresh) the Python entry point `name` at path; -> path."""
    import linkwrap
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(linkwrap.__file__)))
    launcher = name == "linkwrap-launch"
    fallback = '[ "$1" = "--" ] && shift; exec "$@"' if launcher else 'exec "${LINKWRAP_CC:-cc}" "$@"'
    text = marker.template("launcher.py", python_sh=shlex.quote(sys.executable), tag=marker.tag(), script=name,
                           package_parent=repr(package_parent), entry=ENTRIES[name],
                           is_launcher=str(launcher), sh_fallback=fallback)
    # Every link runs this file: 0700 directories and a 0700 script whatever the umask.
    _write(path, text.encode("utf-8", "surrogateescape"), 0o700)
    return path


def entry_point(name: str, console_script: bool = False, write: bool = True) -> str:
    """What a build should run for `name`: the installed native client (the wheel's, a stable path a
    reinstall rewrites in place), else the fast script compiled under the state dir, or pip's console
    script. The state dir's bin/<hash>/ is named by the interpreter and the package's location, so a
    venv rebuilt with another Python, or an editable install made a regular one, moves it (issue 34:
    a pasted PATH line or written absolute path went stale); the wheel's client names its install by
    its own directory, the environment's bin/, which none of those change."""
    if console_script:
        return marker.script_path(name)
    if os.environ.get("LINKWRAP_INSTALL_ENTRY") != "state":
        client = installed_client(name)
        if client:
            return client
    return fast_script(name, write)


def installed_client(name: str):
    """The wheel's native client `name` beside the running linkwrap, when it is one that would run
    linkwrap (its Python entry point there, nobody else able to change either), else None."""
    path = marker.script_path(name)
    script = wheel_script(path)
    if script is None or problem(path):
        return None
    return path if _imports_this_linkwrap(script) else None


def _imports_this_linkwrap(script: str) -> bool:
    """Whether the Python entry point `script` (pip's console script) imports the linkwrap that is
    running: a linkwrap run from a checkout on PYTHONPATH, with another installed in its interpreter,
    must not write that one's client, whose builds would run the other code. Asked of the script's
    interpreter in this environment, as a build from here starts it (install and status only)."""
    import subprocess
    import linkwrap
    try:
        with open(script, encoding="utf-8", errors="replace") as f:
            python = _interpreter(f.read(8192))
    except OSError:
        return False
    if python is None:
        return False
    # -c puts the current directory first on sys.path, where a script run puts its own: drop it.
    ask = "import sys; sys.path.pop(0); import linkwrap; sys.stdout.write(linkwrap.__file__)"
    try:
        done = subprocess.run([python, "-c", ask], capture_output=True, text=True, timeout=60, cwd="/")
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and os.path.realpath(done.stdout) == os.path.realpath(linkwrap.__file__)


def in_state_dir(path: str) -> bool:
    """True when path is one linkwrap wrote under its state directory (it lasts while that is kept)."""
    state = os.path.join(paths.state_dir(), "")
    return os.path.abspath(path).startswith(state)


def wheel_script(path: str):
    """The Python entry point beside the wheel's native client at path (client.c's wheel_paths():
    <path>-python, pip's console script), or None when path is not the wheel's client."""
    script = os.path.realpath(path) + "-python"
    return script if is_elf(path) and os.path.isfile(script) else None


def problem(path: str):
    """Why the entry point at `path` would not run linkwrap, or None when it would.

    Builds still link when it is broken (it links as asked), so `linkwrap status`
    is where this is said."""
    import ast
    if is_elf(path):  # the native client: what matters is the script it falls back to
        script = wheel_script(path) or os.path.join(os.path.dirname(path), "py", os.path.basename(path))
        return problem(script) if os.path.exists(script) else f"{script} is gone"
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(8192)
    except OSError as e:
        return f"{path}: {e.strerror}"
    if not os.access(path, os.X_OK):
        return f"{path} is not executable"
    if not _private(path):
        return f"{path} or its directory can be written by other users (`linkwrap install` again makes it 0700)"
    chain = paths.trusted_chain_problem(os.path.dirname(path))
    if chain:  # the native client then links without it (client.c's trusted_dir)
        return f"{chain}: its owner could put their own program there"
    python = _interpreter(text)
    if python and not os.access(python, os.X_OK):  # pip's console script: its environment rebuilt or gone
        return f"its Python {python} is gone"
    for line in text.splitlines():
        if line.startswith("py="):
            python = shlex.split(line[3:])[0] if line[3:].strip() else ""
            if not os.access(python, os.X_OK):
                return f"its Python {python} is gone"
        elif line.startswith("sys.path.insert(0, "):
            try:
                parent = ast.literal_eval(line[len("sys.path.insert(0, "):].rstrip(")"))
            except (ValueError, SyntaxError):
                continue
            if not os.path.isfile(os.path.join(parent, "linkwrap", "__init__.py")):
                return f"linkwrap is no longer in {parent}"
    return None


def _interpreter(text: str):
    """The interpreter a pip console script names: its `#!` line, or, for a path too long for one,
    the exec line (three quotes, exec, PYTHON "$0" "$@") pip writes under `#!/bin/sh`; None for
    other scripts."""
    lines = text.splitlines()
    first = lines[0] if lines else ""
    if not first.startswith("#!"):
        return None
    try:
        parts = shlex.split(first[2:])
        if parts and os.path.basename(parts[0]).startswith("python"):
            return parts[0]
        if parts == ["/bin/sh"] and len(lines) > 1 and lines[1].startswith(PIP_EXEC):
            return shlex.split(lines[1][len(PIP_EXEC):])[0]
    except (ValueError, IndexError):
        pass
    return None


PIP_EXEC = "'''exec' "  # pip's second line under #!/bin/sh, before the interpreter


def _private(path) -> bool:
    """Nobody else can change the script or the directories it is in."""
    try:
        return not any(paths.others_can_write(os.lstat(p))
                       for p in (path, os.path.dirname(path), os.path.dirname(os.path.dirname(path))))
    except OSError:
        return False
