"""A server's life: where it listens, how it starts alone, when it exits.

Owns: the run directory and the socket's name in it, computed as client.c computes them (run_dir,
world_key: the world a server serves), the start-up race between servers of one world (claim():
an flock on <socket>.lock for the server's lifetime; the loser exits), the socket itself (listen(),
let_go()), and the reasons to exit besides a signal: IDLE_S without a link (idle_over: up to IDLE_S
more while background work is pending), linkwrap's installed files changed (installed_stamp), the socket replaced (outdated()).
May import: the standard library and linkwrap's package alone (its version, its files): nothing of
linkwrap.server, so that `linkwrap server` and the launcher read these without the server's modules.
"""
import os
import sys

IDLE_S = 15 * 60
CHECK_S = 5.0
# Seconds: a shorter (or longer) life without links, for tests and scripts. Not LINKWRAP_SERVER*:
# start_detached() keeps the client's own LINKWRAP_SERVER* settings from the server it starts.
IDLE_ENV = "LINKWRAP_WARM_IDLE_S"


def idle_s(environ=os.environ) -> float:
    """IDLE_S, or LINKWRAP_WARM_IDLE_S where it is a positive number of seconds."""
    try:
        value = float(environ.get(IDLE_ENV, ""))
    except ValueError:
        return IDLE_S
    return value if 0 < value < 1e7 else IDLE_S   # (nan and inf are no number of seconds)


def idle_over(idle_for_s, pending, idle=IDLE_S) -> bool:
    """Whether idle_for_s seconds without a link end the server. pending(): the background work it
    hosts (the measurer, the base builder) has something to do that the machine is idle enough for;
    asked only once idle is reached. Then the server stays, at most idle seconds more, so that
    `linkwrap bench --wait` is not left waiting for a measurement the server's exit would cut off,
    and a measurer that never finishes cannot keep it up for ever."""
    if idle_for_s <= idle:
        return False
    return idle_for_s > 2 * idle or not pending()


# --- where: the same computation as client.c's -----------------------------------

def run_dir(environ=os.environ) -> str:
    home = environ.get("LINKWRAP_HOME", "")
    if home:
        return os.path.join(home, "run")
    rt = environ.get("XDG_RUNTIME_DIR", "")
    if rt.startswith("/"):
        return os.path.join(rt, "linkwrap")
    st = environ.get("XDG_STATE_HOME", "")
    if st.startswith("/"):
        return os.path.join(st, "linkwrap", "run")
    return os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".local", "state", "linkwrap", "run")


def open_run_dir(environ=os.environ, create=False) -> int:
    """An O_PATH-like fd of the run directory, after checking it is ours and 0700, and every directory above
    one no other user can change (paths.open_trusted_dir: made 0700 when create)."""
    from linkwrap import paths
    path = run_dir(environ)
    fd = paths.open_trusted_dir(path, create=create)
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o077:
        os.close(fd)
        raise PermissionError(f"{path} is not a private directory of this user")
    return fd


# The install a wheel's client named (client.c's wheel_paths(), handed on by the script it fell back to:
# LINKWRAP_SERVER_INSTALL): this server listens where that client looks.
_ADOPTED = []


def adopt_install(value) -> None:
    """Serve the install a wheel's client named (value: wheel_install_id()'s form, else ignored)."""
    if value and len(value) == 17 and value[0] == "w" and all(c in "0123456789abcdef" for c in value[1:]):
        _ADOPTED[:] = [value]


def wheel_install_id(client: str) -> str:
    """The install of the wheel's native client at path client: its directory's real path, hashed."""
    where = os.path.dirname(os.path.realpath(client)).encode("utf-8", "surrogateescape")
    return f"w{_fnv(where):016x}"


def _fnv(data: bytes, h=14695981039346656037) -> int:
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def install_id() -> str:
    """The install this interpreter and package are (launcher.py names its bin directory so), or the
    wheel client's that this server was started for (adopt_install)."""
    if _ADOPTED:
        return _ADOPTED[0]
    import binascii
    import linkwrap
    parent = os.path.dirname(os.path.dirname(os.path.abspath(linkwrap.__file__)))
    where = binascii.crc32(f"{os.path.realpath(sys.executable)}\0{parent}".encode("utf-8", "surrogateescape"))
    return f"{where:08x}"


def world_key(install=None) -> str:
    """FNV-1a 64 of uid, /proc/self/cgroup, mnt/pid/user namespace inodes and the install."""
    parts = [f"{os.geteuid()}\n".encode()]
    try:
        with open("/proc/self/cgroup", "rb") as f:
            parts.append(f.read())
    except OSError:
        pass
    inodes = []
    for ns in ("mnt", "pid", "user"):
        try:
            inodes.append(str(os.stat(f"/proc/self/ns/{ns}").st_ino))
        except OSError:
            inodes.append("0")
    parts.append(f"\n{chr(10).join(inodes)}\n{install or install_id()}".encode())
    return f"{_fnv(b''.join(parts)):016x}"


def socket_name(key) -> str:
    return f"s-{key}"


def installed_stamp():
    """Sizes and mtimes of linkwrap's installed files: the server stops when they change."""
    import linkwrap
    top = os.path.dirname(os.path.abspath(linkwrap.__file__))
    out = []
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if f.endswith((".py", ".c")):
                try:
                    st = os.stat(os.path.join(root, f))
                except OSError:
                    continue
                out.append((f, st.st_size, st.st_mtime_ns))
    return sorted(out)


# --- one server per world ------------------------------------------------------

def claim(dfd, name) -> int:
    """The lock of the socket name in the run directory (dfd), held for this server's lifetime. -> its fd;
    another server serving this world holds it: this process exits."""
    import fcntl
    lock = os.open(f"/proc/self/fd/{dfd}/{name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                   0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os._exit(0)  # another server serves this world
    return lock


def listen(dfd, name):
    """The socket name in the run directory, bound afresh, listening, non-blocking. -> (listener, its path)."""
    import socket
    path = f"/proc/self/fd/{dfd}/{name}"
    try:
        os.unlink(path)  # a stale socket of a server that died
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o077)
    try:
        listener.bind(path)
    finally:
        os.umask(old)
    listener.listen(128)
    listener.setblocking(False)
    return listener, path


def outdated(stamp, path, ino) -> bool:
    """Whether this server should exit now: linkwrap's files are not those of stamp, or the socket
    at path is not ours (inode ino) any more."""
    if installed_stamp() != stamp:
        return True  # a new linkwrap: the next link starts the new one
    try:
        if os.stat(path).st_ino != ino:
            return True  # our socket was replaced
    except OSError:
        return True
    return False


def let_go(path, ino) -> None:
    """Remove the socket at path, if it is still ours (inode ino): no new link reaches this server."""
    try:
        if os.stat(path).st_ino == ino:
            os.unlink(path)
    except OSError:
        pass
