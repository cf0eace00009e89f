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


def _build(name, pid, start, boot) -> Build:
    return Build(f"{name}:{pid}:{start}:{boot}", name, pid, _cmdline(pid), _cwd(pid))


def read_stat(pid):
    """(comm, ppid, starttime) from /proc/<pid>/stat, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
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


def _boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as f:
            return f.read(8).decode()
    except OSError:
        return "noboot"


def new_run_key() -> str:
    """The key `linkwrap run` exports: like an ancestor's, for this process."""
    pid = os.getpid()
    stat = read_stat(pid)
    return f"run:{pid}:{stat[2] if stat else 0}:{_boot_id()}"
