"""BUILD: which build a link belongs to, without Cargo's help -> Build.

Input: the environment and /proc. Output: Build(key, tool, pid, command, cwd).
Cargo and ninja give the linker no build id (cargo#10643), so:
1. `linkwrap run -- <build command>` exports LINKWRAP_BUILD_ID: that wins;
2. else the nearest ancestor process named cargo, ninja or make (walking up
   /proc/<pid>/stat via ppid: a few small reads) is the build; its key is
   "<tool>:<pid>:<start time in clock ticks since boot>:<boot id prefix>",
   unique across pid reuse and reboots;
3. else the process that ran the link (rustc, or the shell that ran cc),
   so that links outside any build still group sensibly.
Runs on every link: standard library only, never raises.
"""
import os
from linkwrap.records import record

BUILD_TOOLS = frozenset(("cargo", "ninja", "make", "gmake", "samu"))
ENV = "LINKWRAP_BUILD_ID"
_MAX_DEPTH = 32


class Build(record("Build", [
    "key",      # str: stable id of this build
    "tool",     # str: "cargo" | "ninja" | "make" | "linkwrap run" | the caller's name
    "pid",      # int | None
    "command",  # str | None: the build process's command line, space-joined
    "cwd",      # str | None: the build process's working directory
])):
    __slots__ = ()


def identify(environ=os.environ, caller_pid=None) -> Build:
    """caller_pid: the process the build started for this link (the server's client); else this one."""
    key = environ.get(ENV)
    if key:
        return Build(key, "linkwrap run", None, None, environ.get("LINKWRAP_BUILD_CWD"))
    parent = os.getppid()
    if caller_pid and caller_pid != os.getpid():
        stat = read_stat(caller_pid)
        parent = stat[1] if stat else parent
    try:
        boot = _boot_id()
        pid, fallback = parent, None
        for depth in range(_MAX_DEPTH):
            if pid <= 1:
                break
            stat = read_stat(pid)
            if stat is None:
                break
            name, ppid, start = stat
            if name in BUILD_TOOLS:
                return _build(name, pid, start, boot)
            if depth == 0:
                fallback = (name, pid, start)  # whoever ran the linker: rustc, a shell
            pid = ppid
        if fallback:
            return _build(fallback[0], fallback[1], fallback[2], boot)
    except Exception:
        pass
    return Build(f"pid:{parent}", "unknown", None, None, None)


# The build tools' builds this process has seen (a server's child serves many links of one build):
# a build tool's command line and working directory are read once, at its first link. Keyed by pid
# and start time, which no other process has; ninja -C and make -C change directory before they run
# anything, so what was read stays true. Not a fallback's (a shell or a script may cd between links).
_seen = {}
_SEEN_MAX = 16


def _build(name, pid, start, boot) -> Build:
    key = f"{name}:{pid}:{start}:{boot}"
    hit = _seen.get(key)
    if hit is None:
        hit = Build(key, name, pid, _cmdline(pid), _cwd(pid))
        if name in BUILD_TOOLS:
            if len(_seen) >= _SEEN_MAX:
                _seen.clear()
            _seen[key] = hit
    return hit


def read_stat(pid):
    """(comm, ppid, starttime) from /proc/<pid>/stat, or None."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)  # no io layer: a read per ancestor
        try:
            data = os.read(fd, 4096)
        finally:
            os.close(fd)
        # comm may contain spaces and parentheses: it ends at the last ')'.
        close = data.rfind(b")")
        name = data[data.find(b"(") + 1:close].decode("utf-8", "replace")
        fields = data[close + 2:].split()
        # fields[0] is state (field 3); ppid is field 4, starttime field 22.
        return name, int(fields[1]), int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            parts = f.read().rstrip(b"\0").split(b"\0")
        return " ".join(p.decode("utf-8", "replace") for p in parts)[:4000]
    except OSError:
        return None


def _cwd(pid):
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


_boot = []  # no process outlives its boot


def _boot_id():
    if _boot:
        return _boot[0]
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as f:
            _boot.append(f.read(8).decode())
            return _boot[0]
    except OSError:
        return "noboot"


def new_run_key() -> str:
    """The key `linkwrap run` exports: like an ancestor's, for this process."""
    pid = os.getpid()
    stat = read_stat(pid)
    return f"run:{pid}:{stat[2] if stat else 0}:{_boot_id()}"


# --- the project a build belongs to -------------------------------------------
# Not on the link path: the reading commands call project_of() once per new build
# when they ingest the spool, and `linkwrap run` once for its own build.

CMAKE_CACHE = "CMakeCache.txt"


def project_of(cwd, argv=None, tool=None, output=None, moved=False):
    """-> (project_dir, build_dir): the project a build command run in cwd builds.

    project_dir is the Cargo workspace root, the CMake source directory, or the
    directory of the ninja or make file; build_dir is where the build writes:
    Cargo's target directory, the CMake build directory, the ninja file's
    directory. argv (the build command, a list) moves the start as the tool
    would: `cargo --manifest-path P`, `ninja -C DIR`, `make -C DIR`,
    `ninja -f FILE`, `cmake --build DIR`. output, a linked file, finds Cargo's
    target directory when CARGO_TARGET_DIR moved it. Either may be None.
    moved: cwd is the build tool's own, read from /proc after it obeyed its -C DIR
    (`ninja -C build` run in a CMake source directory is already in build/).
    """
    argv = list(argv or ())
    tool = tool or (os.path.basename(argv[0]) if argv else None)
    start = _start_dir(cwd, argv, tool, moved)
    if start is None:
        return None, None
    if tool in ("ninja", "samu", "make", "gmake", "cmake"):
        source = cmake_source(start)
        return (source or start), start
    root = cargo_root(start)
    if root is not None:
        return root, cargo_target(root, output)
    source = cmake_source(start)
    if source is not None:
        return source, start
    return start, start


def _start_dir(cwd, argv, tool, moved=False):
    if not cwd:
        return None
    start = cwd
    for i, a in enumerate(argv[1:], 1):
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if moved and a.startswith("-C"):
            continue
        if tool == "cargo" and a == "--manifest-path" and nxt:
            start = os.path.dirname(os.path.join(cwd, nxt))
        elif tool == "cargo" and a.startswith("--manifest-path="):
            start = os.path.dirname(os.path.join(cwd, a.split("=", 1)[1]))
        elif tool in ("ninja", "samu", "make", "gmake") and a == "-C" and nxt:
            start = os.path.join(start, nxt)
        elif tool in ("ninja", "samu", "make", "gmake") and a.startswith("-C") and len(a) > 2:
            start = os.path.join(start, a[2:])
        elif tool in ("ninja", "samu") and a == "-f" and nxt and "/" in nxt:
            start = os.path.dirname(os.path.join(start, nxt))
        elif tool == "cmake" and a == "--build" and nxt:
            start = os.path.join(cwd, nxt)
    return os.path.normpath(start)


def cargo_root(start):
    """The Cargo workspace root for a command run in start, as cargo finds it: the
    nearest Cargo.toml upward is the package; the nearest one at or above it with a
    [workspace] table is the root, else the package is. None outside any package."""
    package = None
    d = start
    while True:
        manifest = os.path.join(d, "Cargo.toml")
        if os.path.isfile(manifest):
            if package is None:
                package = d
            if _has_workspace(manifest):
                return d
        parent = os.path.dirname(d)
        if parent == d:
            return package
        d = parent


def _has_workspace(manifest) -> bool:
    try:
        with open(manifest, "rb") as f:
            text = f.read(1 << 20)
    except OSError:
        return False
    return any(line.strip().startswith(b"[workspace") for line in text.splitlines())


def cargo_target(root, output=None):
    """Cargo's target directory: the one holding CACHEDIR.TAG above a linked output
    (cargo writes it there), else <root>/target."""
    d = os.path.dirname(output) if output else None
    for _ in range(6):
        if not d or d == "/":
            break
        if os.path.isfile(os.path.join(d, "CACHEDIR.TAG")):
            return d
        d = os.path.dirname(d)
    return os.path.join(root, "target")


def cmake_source(build_dir):
    """The source directory a CMake build directory was configured from, or None."""
    try:
        with open(os.path.join(build_dir, CMAKE_CACHE), "rb") as f:
            for line in f:
                if line.startswith(b"CMAKE_HOME_DIRECTORY:"):
                    value = line.split(b"=", 1)[1].strip().decode("utf-8", "surrogateescape")
                    return os.path.normpath(value) if value else None
    except (OSError, IndexError):
        pass
    return None
