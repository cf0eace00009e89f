"""Where linkwrap keeps its state, cache and configuration.

On Linux computed here with os.environ alone, because this runs on every link
and importing platformdirs costs ~20 ms; tests/test_paths.py checks that the
answers equal platformdirs'. Elsewhere platformdirs answers.
"""
import os
import sys

APP = "linkwrap"


def _xdg(var: str, default: str) -> str:
    if not sys.platform.startswith("linux"):
        import platformdirs
        return {"XDG_STATE_HOME": platformdirs.user_state_dir, "XDG_CACHE_HOME": platformdirs.user_cache_dir,
                "XDG_CONFIG_HOME": platformdirs.user_config_dir}[var](APP)
    value = os.environ.get(var, "")
    # platformdirs treats an empty or relative XDG variable as unset.
    if not value.strip() or not os.path.isabs(value):
        value = os.path.join(os.path.expanduser("~"), default)
    return os.path.join(value, APP)


def home_override() -> str | None:
    value = os.environ.get("LINKWRAP_HOME", "")
    return os.path.abspath(value) if value else None


def state_dir() -> str:
    """The link records: $LINKWRAP_HOME, else the user state dir."""
    return home_override() or _xdg("XDG_STATE_HOME", ".local/state")


def cache_dir() -> str:
    """Linker discovery cache and -B shim directories."""
    home = home_override()
    return os.path.join(home, "cache") if home else _xdg("XDG_CACHE_HOME", ".cache")


def config_dir() -> str:
    """The user's own linkwrap.toml lives here."""
    home = home_override()
    return os.path.join(home, "config") if home else _xdg("XDG_CONFIG_HOME", ".config")


def user_config_file() -> str:
    return os.path.join(config_dir(), "linkwrap.toml")


def log_file() -> str:
    """Tracebacks of linkwrap's own faults (never shown during a link)."""
    return os.path.join(state_dir(), "linkwrap.log")


def make_private_dir(path: str) -> None:
    """mkdir -p where every directory made is 0700 whatever the umask (os.makedirs gives
    the levels above the last 0777 & ~umask: world-writable under umask 000)."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if not os.path.isdir(path):
            raise NotADirectoryError(20, "Not a directory", path) from None
        return
    except FileNotFoundError:
        parent = os.path.dirname(path)
        if parent == path:
            raise
        make_private_dir(parent)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass


def open_private_dir(path: str, create: bool = False) -> int:
    """An fd (O_PATH-like, for dir_fd) of directory path, which must be this user's own, not a symlink,
    and writable by no one else; create: made 0700 first when missing (its parent must exist). Files
    opened and renamed through the fd stay in it, whatever is renamed over its path meanwhile.
    Raises PermissionError for a directory that is not private, FileNotFoundError when missing."""
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if others_can_write(os.fstat(fd)):
            raise PermissionError(13, "not this user's private directory: not used", path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def lock(path: str) -> int:
    """An fd holding the POSIX lock of file path (made 0600, and its directory 0700, when missing);
    closing it releases the lock. Another user's file, or not a regular file, is refused: its owner
    could hold the lock for ever."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except FileNotFoundError:
        make_private_dir(os.path.dirname(path))
        fd = os.open(path, flags, 0o600)
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or st.st_mode & 0o170000 != 0o100000:
            raise PermissionError(13, "not this user's regular file: not used", path)
        if st.st_mode & 0o077:
            os.fchmod(fd, 0o600)  # created under another umask by an older linkwrap
        os.lockf(fd, os.F_LOCK, 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


def others_can_write(st) -> bool:
    """Another user could change what this stat describes: it is theirs, writable by all, or by a
    group that is not this user's own (umask 002 with a group per user makes every file g+w)."""
    return bool(st.st_uid != os.geteuid() or st.st_mode & 0o002
                or st.st_mode & 0o020 and st.st_gid != os.getegid())


def state_problem() -> str | None:
    """What is wrong with the state directory's path itself (a file where it should be), or None."""
    state = state_dir()
    if not os.path.lexists(state) or os.path.isdir(state):
        return None
    where = f"LINKWRAP_HOME={os.environ['LINKWRAP_HOME']}" if home_override() else state
    return f"{where} is not a directory (linkwrap keeps its link records, cache and configuration there)"
