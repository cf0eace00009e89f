"""Where linkwrap keeps its state, cache and configuration.

On Linux computed here with os.environ alone, because this runs on every link
and importing platformdirs costs ~20 ms; tests/test_paths.py checks that the
answers equal platformdirs'. Elsewhere platformdirs answers.
"""
import os
import stat  # os imports it: free
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
    """mkdir -p through open_trusted_dir: every directory made is 0700 whatever the umask (os.makedirs
    gives the levels above the last 0777 & ~umask: world-writable under umask 000), and one on the way
    that another user could change is refused (UntrustedDir)."""
    os.close(open_trusted_dir(path, create=True))


def open_private_dir(path: str, create: bool = False) -> int:
    """open_trusted_dir(path, create), under the name its callers know: an fd (for dir_fd) of
    directory path, this user's own and writable by no one else, as is every directory on the way
    (UntrustedDir, a PermissionError, when not); FileNotFoundError when missing. Files opened and
    renamed through the fd stay in it, whatever is renamed over its path meanwhile."""
    return open_trusted_dir(path, create)


class UntrustedDir(PermissionError):
    """A directory on the way to one of linkwrap's that another user could change: str() names it
    and why in one line ("/shared is owned by user bob and writable by them")."""

    def __init__(self, directory: str, why: str):
        super().__init__(13, f"{directory} {why}", directory)  # strerror: the whole line, for "cannot …: <it>"
        self.directory, self.why = directory, why

    def __str__(self):
        return f"{self.directory} {self.why}"


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_SYMLINKS = 40  # the kernel's


def open_trusted_dir(path: str, create: bool = False, own_from: str | None = None, mend: bool = False) -> int:
    """An fd of directory path, walked from / one component at a time, each opened from the one
    before with O_NOFOLLOW, so nothing another user can change decides where it ends (the attack of
    issue 31: a shared directory's owner renames bin/<hash> away and puts their own linkwrap-cc there).

    Every directory on the way is root's or this user's and writable by no one else (others_can_write's
    rule) -- except a sticky one such as /tmp, where only an entry's owner (root or us: checked at the
    next step) can rename it. From own_from (a directory path is in; default: the state, cache or
    config root path is in, else path itself) down every directory is this user's own and none is a symlink. Above it a symlink
    (root's or ours, in a directory already checked) is followed: its target is walked and checked the
    same way -- rather than realpath() first, because builds are then given path as written, which is
    only as safe as the directories its symlinks sit in. create: missing directories are made 0700
    through the fd of the one above (never through a planted link). mend (install, which rewrites what
    they hold): a directory of ours below own_from that others could write (made under umask 000 by
    an older linkwrap) is made 0700, through its fd, instead of refused. Raises UntrustedDir (a
    PermissionError) naming the directory, FileNotFoundError, NotADirectoryError."""
    path = os.path.abspath(path)
    names = [n for n in path.split("/") if n]
    own, followed = (os.path.abspath(own_from), False) if own_from else _own_root(path)
    own_at = len([n for n in own.split("/") if n]) - 1
    walk = _Walk(create)
    try:
        for i, name in enumerate(names):
            walk.step(name, ours=i >= own_at, may_link=i < own_at or i == own_at and followed,
                      mend=mend and i > own_at)
        return walk.take()
    finally:
        walk.close()


def trusted_chain_problem(path: str) -> str | None:
    """Why open_trusted_dir(path) refuses the part of path that exists (one line), or None: a missing
    directory is no problem, open_trusted_dir(create=True) makes it; nor is a file where a directory
    goes (LINKWRAP_HOME a file): nothing can be read or written below it, and state_problem() says it
    where it costs the records, once."""
    try:
        os.close(open_trusted_dir(path))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except UntrustedDir as e:
        return str(e)
    except OSError as e:
        return f"{e.filename or path}: {e.strerror}"
    return None


def untrusted_state() -> str | None:
    """trusted_chain_problem() of the state, cache or config directory (the first found), or None:
    every link and install asks, before anything is read from or written there."""
    dirs = (state_dir(), cache_dir(), config_dir())
    for d in dict.fromkeys(dirs):
        if any(e.startswith(d.rstrip("/") + "/") for e in dirs):
            continue  # walked on the way to one below it
        problem = trusted_chain_problem(d)
        if problem:
            return problem
    return None


def _own_root(path: str) -> tuple:
    """(the outermost of the state, cache and config roots that holds path, True), else (path, False):
    the part linkwrap makes and owns starts there."""
    roots = [r for r in map(os.path.abspath, (state_dir(), cache_dir(), config_dir()))
             if path == r or path.startswith(r.rstrip("/") + "/")]
    return (min(roots, key=len), True) if roots else (path, False)


class _Walk:
    """The directories from / to where the walk is, each opened from the one before."""

    def __init__(self, create: bool):
        self.create, self.links = create, 0
        self.fds, self.names = [os.open("/", _DIR_FLAGS)], []
        self._check(ours=False)

    def where(self, name: str | None = None) -> str:
        return "/" + "/".join(self.names + ([name] if name else []))

    def step(self, name: str, ours: bool, may_link: bool, mend: bool = False) -> None:
        if name in ("", "."):
            return
        if name == "..":  # the directory we came from: the same as the kernel's where none can be renamed
            if len(self.fds) > 1:
                os.close(self.fds.pop())
                self.names.pop()
            return
        fd = self._open(name)
        if fd is None:
            self._follow(name, ours, may_link)
            return
        self.fds.append(fd)
        self.names.append(name)
        self._check(ours, mend)

    def _open(self, name: str):
        """The fd of name in the current directory (made 0700 first when create); None: a symlink."""
        import errno
        parent = self.fds[-1]
        for _ in range(2):
            try:
                return os.open(name, _DIR_FLAGS, dir_fd=parent)
            except FileNotFoundError:
                if not self.create:
                    raise FileNotFoundError(errno.ENOENT, "No such file or directory", self.where(name)) from None
                try:
                    os.mkdir(name, 0o700, dir_fd=parent)
                except FileExistsError:
                    pass  # made meanwhile (by whom: the check says)
            except OSError as e:
                if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                if not stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                    raise NotADirectoryError(errno.ENOTDIR, "Not a directory", self.where(name)) from None
                return None
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", self.where(name))

    def _follow(self, name: str, ours: bool, may_link: bool) -> None:
        here = self.where(name)
        if not may_link:
            raise UntrustedDir(here, "is a symbolic link, where linkwrap makes directories: not followed")
        st = os.stat(name, dir_fd=self.fds[-1], follow_symlinks=False)
        if st.st_uid not in (0, os.geteuid()):  # in a sticky directory its owner may re-point it
            raise UntrustedDir(here, f"is a symbolic link owned by user {_user_name(st.st_uid)}")
        self.links += 1
        if self.links > _MAX_SYMLINKS:
            import errno
            raise OSError(errno.ELOOP, "Too many levels of symbolic links", here)
        target = os.readlink(name, dir_fd=self.fds[-1])
        if target.startswith("/"):
            while len(self.fds) > 1:
                os.close(self.fds.pop())
                self.names.pop()
        for part in target.split("/"):
            self.step(part, ours=False, may_link=True)
        if ours:
            self._check(ours)

    def _check(self, ours: bool, mend: bool = False) -> None:
        st = os.fstat(self.fds[-1])
        if st.st_uid != os.geteuid() and (ours or st.st_uid != 0):
            raise UntrustedDir(self.where(), f"is owned by user {_user_name(st.st_uid)} and writable by them")
        if mend and _writable_by_others(st):
            os.fchmod(self.fds[-1], 0o700)
        elif _writable_by_others(st) and not (st.st_mode & stat.S_ISVTX and not ours):  # sticky: see above
            who = "all users" if st.st_mode & 0o002 else f"group {_group_name(st.st_gid)}"
            raise UntrustedDir(self.where(), f"is writable by {who}")

    def take(self) -> int:
        """The last directory's fd, at the lowest free number once the ones above it are closed: the
        walk leaves no holes below it (a server's fds keep the numbers they had without it)."""
        while len(self.fds) > 1:   # the last stays listed until it is returned: a ^C here closes it too
            os.close(self.fds.pop(0))
        low = os.dup(self.fds[0])
        if low < self.fds[0]:
            os.close(self.fds.pop())
            return low
        os.close(low)
        return self.fds.pop()

    def close(self) -> None:
        # One at a time, off the list first: a ^C (KeyboardInterrupt) between two closes must not leave
        # closed fds listed, or the finally's second close() fails with EBADF, and that OSError replaces
        # the interrupt (the link ran on, warning "Bad file descriptor": CI, 2026-12-04).
        while self.fds:
            os.close(self.fds.pop())


def _user_name(uid: int) -> str:
    import pwd
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group_name(gid: int) -> str:
    import grp
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


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
    return st.st_uid != os.geteuid() or _writable_by_others(st)


def _writable_by_others(st) -> bool:
    """Its mode lets all users, or a group that is not this user's own, write."""
    return bool(st.st_mode & 0o002 or st.st_mode & 0o020 and st.st_gid != os.getegid())


def state_problem() -> str | None:
    """What is wrong with the state directory's path itself (a file where it should be), or None."""
    state = state_dir()
    if not os.path.lexists(state) or os.path.isdir(state):
        return None
    where = f"LINKWRAP_HOME={os.environ['LINKWRAP_HOME']}" if home_override() else state
    return f"{where} is not a directory (linkwrap keeps its link records, cache and configuration there)"
