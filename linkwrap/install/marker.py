"""What every install path shares: the marker ID, our scripts' paths, templates,
atomic writes, and the list of places linkwrap was installed into.

Input: paths and texts from cargo.py / cmake.py / ninja.py. Output: marker
strings, files written by temp + rename, and JSON entries under
<state dir>/installs/ that `linkwrap status` lists. The marker in the edited
file is what uninstall trusts; the list is only an index of where to look.
"""
import hashlib
import json
import os
import re
import sys
import sysconfig
import time

from linkwrap.errors import InstallError, warning_line

# pre-commit style: every line or block linkwrap writes carries this ID, so
# uninstall removes only what it wrote. Older IDs go into PRIOR_IDS when the
# written format changes, so upgrades still recognise (and remove) old installs.
ID = "4c1a7e0b9d2f6a35"
PRIOR_IDS = ()
ID_RE = re.compile(r"linkwrap \(ID: ([0-9a-f]{16})\)")


def tag() -> str:
    return f"linkwrap (ID: {ID})"


def is_ours(text: str) -> bool:
    m = ID_RE.search(text)
    return bool(m) and m.group(1) in (ID, *PRIOR_IDS)


def script_path(name: str) -> str:
    """Absolute path of one of our console scripts, next to the running `linkwrap`.

    Never a pyenv shim: a shim re-resolves the interpreter on every call
    (~60 ms per link), so it must not be what a build runs.
    """
    candidates = []
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else ""
    if os.sep in argv0:
        candidates.append(os.path.dirname(os.path.abspath(argv0)))
    candidates.append(sysconfig.get_path("scripts"))
    for folder in candidates:
        path = os.path.join(folder, name)
        if _is_shim(path):
            continue
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise InstallError(f"cannot find the {name} script next to linkwrap (looked in {', '.join(candidates)})\n"
                       f"hint: reinstall it: {install_command()}")


def install_command() -> str:
    """How linkwrap is installed, as a hint says it: from its checkout (README: `pip install .`), as no
    package index carries it; this one's own checkout when it runs from one (an editable install)."""
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if os.path.isfile(os.path.join(checkout, "pyproject.toml")):
        return f"pip install {checkout}"
    return "pip install . in a checkout of linkwrap"


def _is_shim(path: str) -> bool:
    parts = os.path.abspath(path).split(os.sep)
    return "shims" in parts and any(p in (".pyenv", ".asdf", ".rbenv") for p in parts)


def template(name: str, **values) -> str:
    """templates/<name> with every @key@ replaced (CMake configure_file style:
    `${...}` and `$var` mean something in presets and ninja files)."""
    from linkwrap.resources import template_text
    # One pass, so a value that happens to contain @x@ is left alone.
    return re.sub(r"@([a-z_]+)@", lambda m: values[m.group(1)], template_text(name))


class Change:
    """One file to write (or delete), with what to tell the user.

    new is None: delete the file. drop_dir: a directory linkwrap created,
    removed after the file if it is then empty.
    """

    def __init__(self, path, old, new, said=(), drop_dir=None):
        self.path, self.old, self.new, self.said, self.drop_dir = path, old, new, list(said), drop_dir

    @property
    def changes_anything(self) -> bool:
        return self.old != self.new

    def apply(self) -> None:
        if not self.changes_anything:
            return
        if self.new is None:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
            if self.drop_dir:
                try:
                    os.rmdir(self.drop_dir)
                    self.said.append(f"removed {self.drop_dir}: linkwrap had created it, and it is empty now")
                except OSError:
                    pass  # not empty (someone else's files): it stays
        else:
            make_dirs(os.path.dirname(os.path.abspath(self.path)))
            write_atomic(self.path, self.new)


def _folders_owner(st):
    """(uid, gid) a new file or directory in a folder of stat st is given, else None: root installing
    into another user's project (no .cargo/ yet) makes them theirs, as they would be had its owner run
    install, so they can still edit and remove them. Anyone else's new files are theirs by the kernel's rule."""
    if os.geteuid() == 0 and st.st_uid != 0:
        return st.st_uid, st.st_gid
    return None


def make_dirs(folder: str) -> None:
    """os.makedirs, each directory made owned as _folders_owner says. The chown is on a descriptor
    opened O_NOFOLLOW in the parent's: the folder's owner may swap what was made for a symlink, and a
    chown by name would follow it (root giving them any file)."""
    if os.path.isdir(folder):
        return
    parent, name = os.path.split(folder)
    make_dirs(parent)
    try:
        pfd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            owner = _folders_owner(os.fstat(pfd))
            try:
                os.mkdir(name, 0o777, dir_fd=pfd)
            except FileExistsError:
                return  # made in between: not ours to give away
            if owner:
                fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=pfd)
                try:
                    os.fchown(fd, *owner)
                finally:
                    os.close(fd)
        finally:
            os.close(pfd)
    except OSError as e:
        raise InstallError(f"{folder}: cannot create: {e.strerror}") from e


def read_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise InstallError(f"{path}: cannot read: {e.strerror}") from e


def write_atomic(path: str, data: bytes) -> None:
    """Replace path's contents all at once: a crash leaves the old file or the
    new one, never half of it. Keeps the old file's owner, group and mode (root
    editing another user's config must not leave it root's), and a symlink stays a
    symlink (dotfile managers link ~/.cargo/config.toml): its target is written."""
    path = os.path.realpath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    tmp = None
    try:
        tmp, fd = _new_temp(path)
        with open(fd, "wb") as f:
            # Owner and mode on the descriptor, before the data: by name they would follow whatever
            # the folder's owner put there since, and the data is never readable by more than the old file's.
            if st is not None:
                if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                    os.fchown(fd, st.st_uid, st.st_gid)  # before chmod: chown clears setuid/setgid bits
                os.fchmod(fd, st.st_mode & 0o7777)
            else:  # a new file: the folder owner's, as make_dirs' directories (open()'s mode, less the umask)
                owner = _folders_owner(os.stat(os.path.dirname(path)))
                if owner:
                    os.fchown(fd, *owner)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise InstallError(f"{path}: cannot write: {e.strerror}") from e


def _new_temp(path: str):
    """(name, descriptor) of a new file beside path, made by us: the folder may be another user's
    (root installing into their project), who could have put a symlink at a name it can guess, for
    root to write, chown and chmod a file of their choosing. O_EXCL|O_NOFOLLOW never opens one, and
    a random part makes the name no guess. A new file's mode is open()'s (0666 less the umask)."""
    folder, base = os.path.split(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(8):
        tmp = os.path.join(folder, f".{base}.linkwrap-{os.getpid()}-{os.urandom(6).hex()}.tmp")
        try:
            return tmp, os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
    return tmp, os.open(tmp, flags, 0o666)  # raises FileExistsError: a clear "cannot write"


def diff(path: str, old: bytes | None, new: bytes | None) -> str:
    """A unified diff for --dry-run."""
    import difflib
    a = (old or b"").decode("utf-8", "replace").splitlines(keepends=True)
    b = (new or b"").decode("utf-8", "replace").splitlines(keepends=True)
    return "".join(difflib.unified_diff(a, b, fromfile=path if old is not None else "/dev/null",
                                        tofile=path if new is not None else "/dev/null"))


# ---- the index of installs (for `linkwrap status`) ----

def _index_dir() -> str:
    from linkwrap import paths
    return os.path.join(paths.state_dir(), "installs")


def _index_file(kind: str, path: str) -> str:
    key = hashlib.sha256(os.fsencode(f"{kind}\0{os.path.abspath(path)}")).hexdigest()[:20]
    return os.path.join(_index_dir(), f"{kind}-{key}.json")


def remember(kind: str, path: str, **details) -> None:
    """Note that linkwrap is installed at path (kind: cargo, cmake-cache, cmake-presets, ninja).

    Only an index for `linkwrap status`: the edited file's marker is what counts, so a
    state dir that cannot take the note costs a warning, not the install."""
    entry = {"kind": kind, "path": os.path.abspath(path), "id": ID,
             "installed_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **details}
    try:
        from linkwrap import paths
        paths.make_private_dir(_index_dir())
        write_atomic(_index_file(kind, path), (json.dumps(entry, indent=2, sort_keys=True) + "\n").encode())
    except (OSError, InstallError) as e:
        _index_warning(e)


def forget(kind: str, path: str) -> None:
    try:
        os.unlink(_index_file(kind, path))
    except FileNotFoundError:
        pass
    except OSError as e:
        _index_warning(e)


def _index_warning(e) -> None:
    why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
    sys.stderr.write(warning_line(f"cannot note this in {_index_dir()} ({why}); "
                                  "the change itself is done, `linkwrap status` may not list it"))


def remembered() -> list[dict]:
    """Every install linkwrap has noted, oldest first; unreadable entries are skipped."""
    try:
        names = sorted(os.listdir(_index_dir()))
    except FileNotFoundError:
        return []
    entries = []
    for name in names:
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(_index_dir(), name), encoding="utf-8") as f:
                entries.append(json.load(f))
        except (OSError, ValueError):
            continue
    return sorted(entries, key=lambda e: (e.get("installed_utc", ""), e.get("path", "")))
