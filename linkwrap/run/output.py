"""Output-file safety: how the chosen write mode is carried out.

Input: the output path and the write mode the policy chose. Output: a Plan
(what path the linker is told to write) and, after the link, the output moved
into place or removed.

Every link works in a private directory next to the output:

    <dir>/.linkwrap-tmp/<pid>-<start>-<space>/<name of the output>

FRESH: the linker writes a new file there; on success it is renamed over the
output, so the old inode, and every other hard link to it (Cargo's
target/debug/foo), is never touched. On failure the output name is removed,
as GNU ld and lld do; the other hard links keep the last good binary.
IN_PLACE: the existing output (a regular file with one link) is renamed into
that directory first, so mold/wild still reuse its inode, and renamed back on
success. (FRESH with a big output that has no other name drops it at the start,
as GNU ld and lld do, and frees its blocks on a thread during the link.)

Why a directory per link: whatever is killed (the linker, linkwrap-cc, by
SIGKILL too) can only leave debris inside it -- ours and the linkers' own
temporaries (mold's .mold-XXXXXX, lld's <out>.tmpXXXXXXX) alike -- never a
partial file under the output name. The next link in that directory removes
the private directories of dead owners (sweep()); in the usual case
.linkwrap-tmp does not exist and that check is one failed listdir(), since
each link removes its own directory and then .linkwrap-tmp when it is empty.
The owner's name holds its pid, its start time (pid reuse) and a hash of host
name and pid namespace (a container or NFS client sharing the directory: its
pids mean nothing here, so its directories are only removed after a day).

The output's directory may be shared with other users (/tmp, a group build
tree): anyone who can write there could plant a symlink named like a dead
link's directory, or make .linkwrap-tmp a symlink, and have us delete or write
through it. So .linkwrap-tmp is used only when it is a real directory this user
owns that nobody else can write, in a directory nobody else can write; it is
opened with O_NOFOLLOW and everything under it is removed relative to directory
fds, never following a symlink, never touching what another user owns.
Otherwise the linker writes the output itself, as it would unwrapped.
"""
import os
import stat  # already imported by os: free
from linkwrap.records import record
from linkwrap import libc

from linkwrap.choice.policy import FRESH, IN_PLACE

TMP_DIR = ".linkwrap-tmp"
FOREIGN_STALE_S = 24 * 3600  # a directory from another pid space is left alone this long
FREE_ASYNC_MIN_BYTES = 16 << 20  # smaller old outputs are freed in the rename: a few ms at most


class Plan(record("Plan", "final link_path mode work_dir")):
    """final: the output path (None: no -o); link_path: what the linker writes;
    mode: the write mode applied; work_dir: this link's private directory, or
    None when the linker writes the output path directly (special files)."""
    __slots__ = ()


_owner = None
_owners = {}  # by pid: a server's child forgets _owner (server.settle) and is the spare it was


def owner_tag() -> str:
    """<pid>-<start time in clock ticks>-<pid space hash>; computed once per process."""
    global _owner
    if _owner is None:
        pid = os.getpid()
        _owner = _owners.get(pid) or f"{pid}-{_start_time(pid) or 0}-{_space()}"
        _owners[pid] = _owner
    return _owner


def _start_time(pid):
    """The process's start (clock ticks since boot), or None when it is gone."""
    from linkwrap.facts.build import read_stat
    stat = read_stat(pid)
    return stat[2] if stat else None


def _space() -> str:
    """Which pid space this process lives in: host name + pid namespace (FNV-1a)."""
    try:
        ns = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        ns = 0
    h = 0x811C9DC5
    for b in f"{os.uname().nodename}/{ns}".encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return f"{h:08x}"


def prepare(request, write_mode, owner=None) -> Plan:
    """Make this link's private directory; for IN_PLACE move the old output into it.

    owner: the directory's owner tag (a server's child names itself), else this process's."""
    final = request.output
    if not final:
        return Plan(None, None, write_mode, None)
    d, base = os.path.split(final)
    try:
        st = os.lstat(final)
    except OSError:
        st = None
    import stat as S
    if base in ("", "-") or (st is not None and not (S.S_ISREG(st.st_mode) or S.S_ISLNK(st.st_mode))):
        # /dev/null, a FIFO, a directory: renaming over them would be wrong (or
        # fatal, as root); the linker writes them itself, as it would unwrapped.
        return Plan(final, final, FRESH, None)
    if base == TMP_DIR or not _private_parent(d or "."):
        # An output named .linkwrap-tmp, or a directory others can write: no private directory.
        return _direct(final, st)
    top = os.path.join(d, TMP_DIR)
    owner = owner or owner_tag()
    work = _make_work(top, owner)
    if work is None:
        return _direct(final, st)
    link_path = os.path.join(work, base)
    mode = FRESH
    lone = st is not None and S.S_ISREG(st.st_mode) and st.st_nlink == 1
    if write_mode == IN_PLACE and lone:
        try:
            os.rename(final, link_path)
            mode = IN_PLACE
        except OSError:
            pass
    elif lone and st.st_size >= FREE_ASYNC_MIN_BYTES:
        _free_in_background(final)
    return Plan(final, link_path, mode, work)


def _make_work(top, owner):
    """<top>/<owner>, made 0700 (top too when missing); None when that cannot be done safely."""
    for _ in range(5):
        made = []
        top_fd = _open_top(top, made)
        if top_fd is None:
            return None
        try:
            if not made:  # made just now, it holds no dead link's directory: nothing to sweep
                _sweep_fd(top_fd, owner)
            try:
                os.mkdir(owner, 0o700, dir_fd=top_fd)
            except FileExistsError:
                _remove_at(top_fd, owner)  # ours from an earlier attempt of this same process
                os.mkdir(owner, 0o700, dir_fd=top_fd)
            return os.path.join(top, owner)
        except FileNotFoundError:
            continue  # another link removed the empty .linkwrap-tmp after we opened it
        except OSError:
            return None
        finally:
            os.close(top_fd)
    return None


def _free_in_background(path):
    """Drop a big old output that no other name shares, and free its blocks on a
    thread while the linker runs, as lld's unlinkAsync does: freeing takes 0.1-0.4 s
    per GiB here, paid otherwise inside the final rename(). GNU ld and lld drop
    the old output at this point too; an interrupted link then leaves no output."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return
    try:
        os.unlink(path)
    except OSError:
        os.close(fd)
        return
    import _thread  # built in; `threading` would cost an import
    try:
        _thread.start_new_thread(os.close, (fd,))
    except RuntimeError:
        os.close(fd)


def _direct(final, st) -> Plan:
    """No private directory possible: the linker writes the output path itself,
    after the old file is unlinked as GNU ld does, so mold cannot reuse its inode."""
    if st is not None:
        _unlink(final)
    return Plan(final, final, FRESH, None)


def commit(plan, ok: bool, held=False):
    """Finish the write. -> (ok, output_bytes | None, error message | None).

    held: hold(plan) gave the old output its second name already (while the linker ran)."""
    if plan.final is None:
        return ok, None, None
    if plan.work_dir is None:
        return ok, _size(plan.final) if ok else None, None
    if not ok:
        discard(plan)
        return False, None, None
    # In the server's child the old output's removal waits for tidy(): swapped with the new one, it
    # stays in the work directory under the new one's name.
    swapped = _later is not None and plan.mode == FRESH and libc.exchange(plan.link_path, plan.final)
    if swapped and _is_dir(plan.link_path) and libc.exchange(plan.link_path, plan.final):
        # A directory came to the output's name since prepare(): swapped back whole, it keeps its
        # name and contents (tidy() would remove it with the work directory), and rename() below
        # fails on it with one line, as it always did.
        swapped = False
    if not swapped:
        if _later is not None and not held:
            _hold_old(plan)
        try:
            os.rename(plan.link_path, plan.final)
        except OSError as e:
            discard(plan)
            from linkwrap.errors import error_line
            return False, None, error_line(f"cannot move the output into place: {plan.final}: {e.strerror}")
    # Files the link made next to its output (<out>.map, <out>.time-trace, ...)
    # would have been created beside the real output: they go there too.
    keep = (os.path.basename(plan.final), os.path.dirname(plan.final))
    if _later is None:
        _remove_work_dir(plan.work_dir, keep=keep)
    else:
        _move_kept(plan.work_dir, keep, swapped)
        _later.append((plan.work_dir, keep, swapped))
    return True, _size(plan.final), None


def _is_dir(path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


# Work directories whose removal waits for tidy(): a list in the server's child, which answers the
# client first (defer()); None in the script, which removes each as soon as its link is committed.
_later = None
# The old output's second name in the work directory while the new one is renamed over it.
OLD = ".linkwrap-old-output"


def defer() -> None:
    """From now on, committed links leave their work directory (and the old output) to tidy()."""
    global _later
    _later = []


def tidy() -> None:
    """Remove the work directories commit() left: the old output's last name goes with them.

    What the link wrote there after its commit goes beside the output first: a forking linker's
    worker may still write once its first process has ended (mold >= 2.33's detached separate
    debug file, named after the output), and tidy() comes after the worker's reap."""
    global _later
    later, _later = _later or [], None
    for work, keep, swapped in later:
        _move_kept(work, keep, swapped)
        _remove_work_dir(work)


def hold(plan) -> bool:
    """While the linker runs: the old output's second name, when its removal waits for tidy()
    (the server's child). -> True when commit() need not try again."""
    if _later is None or plan.work_dir is None or plan.final is None or plan.mode != FRESH:
        return False
    if libc.can_exchange():
        return False  # commit() swaps the old output into the work directory: no second name needed
    _hold_old(plan)
    return True


def _hold_old(plan) -> None:
    """Give the old output a second name in the work directory (same filesystem, ours, 0700).

    rename() over an output's last name frees its pages on the spot: 3.6 ms for a 4 MB binary here,
    inside the link. With this name it frees nothing; the name goes in tidy(), after the answer.
    mold unlinks its old output on a thread for the same reason. Other hard links are not
    touched, nor is the old file's content: it is only one more name."""
    if os.path.basename(plan.final) == OLD:
        return
    try:
        os.link(plan.final, os.path.join(plan.work_dir, OLD), follow_symlinks=False)
    except OSError:
        pass  # no old output (a first link, Cargo's deps/), or no hard links here: freed in the rename


def _move_kept(work, keep, swapped=False) -> None:
    """Move the entries of work named keep[0]* to keep[1] (the link's files beside its output);
    swapped: keep[0] itself is the old output (libc.exchange) and stays."""
    try:
        fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        for n in os.listdir(fd):
            if n.startswith(keep[0]) and n != OLD and not (swapped and n == keep[0]):
                try:
                    os.rename(n, os.path.join(keep[1], n), src_dir_fd=fd)
                except OSError:
                    pass
    finally:
        os.close(fd)


def discard(plan) -> None:
    """A failed link: nothing of it stays, and no output under its name (as GNU ld, lld)."""
    if plan.work_dir is None:
        return
    _remove_work_dir(plan.work_dir)
    _unlink(plan.final)


def abort(plan, linker_ran: bool) -> None:
    """An interrupted or broken attempt: remove its debris, keep the old output when we can.

    FRESH never touched the output. IN_PLACE moved it aside: before the linker
    ran it is put back; after, it may be half overwritten, so it goes.
    """
    if plan.work_dir is None:
        return
    if plan.mode == IN_PLACE and not linker_ran:
        try:
            os.rename(plan.link_path, plan.final)
        except OSError:
            pass
    _remove_work_dir(plan.work_dir)


def _remove_work_dir(work, keep=None):
    top = os.path.dirname(work)
    # Never made here: after the answer the caller may be removing the output's directory (make
    # clean, CMake's try_compile), and a .linkwrap-tmp made again then fails its rm -rf.
    fd = _open_existing(top)
    if fd is None:
        return
    try:
        _remove_at(fd, os.path.basename(work), keep)
    finally:
        os.close(fd)
    try:
        os.rmdir(top)  # .linkwrap-tmp, when no other link uses it
    except OSError:
        pass


def _private_parent(d) -> bool:
    """True when nobody but this user (and root) can create or rename entries in d."""
    try:
        st = os.stat(d)
    except OSError:
        return False
    from linkwrap.paths import others_can_write
    return st.st_uid == 0 and not st.st_mode & 0o022 or not others_can_write(st)


def _open_top(top, made=None):
    """An fd of .linkwrap-tmp, made if missing (then True is appended to made); None unless
    it is a real directory, this user's, that nobody else can write."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        os.mkdir(top, 0o700)
        if made is not None:
            made.append(True)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        fd = os.open(top, flags)
    except OSError:
        return None  # a symlink (ELOOP), a file (ENOTDIR), gone
    if not _owned(os.fstat(fd)):
        os.close(fd)
        return None
    return fd


def _owned(st) -> bool:
    from linkwrap.paths import others_can_write
    return not others_can_write(st)


def sweep(top) -> int:
    """Remove private directories of links whose owner is gone. -> how many."""
    fd = _open_existing(top)
    if fd is None:
        return 0  # the usual case: no .linkwrap-tmp at all
    try:
        removed = _sweep_fd(fd)
    finally:
        os.close(fd)
    if removed:
        try:
            os.rmdir(top)
        except OSError:
            pass
    return removed


def _open_existing(top):
    try:
        fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    if not _owned(os.fstat(fd)):
        os.close(fd)
        return None
    return fd


def _sweep_fd(top_fd, mine=None) -> int:
    try:
        names = os.listdir(top_fd)
    except OSError:
        return 0
    mine = mine or owner_tag()
    space = mine.rsplit("-", 1)[1]
    removed = 0
    for n in names:
        if n != mine and _is_stale(top_fd, n, space):
            _remove_at(top_fd, n)
            removed += 1
    return removed


def _is_stale(top_fd, name, space) -> bool:
    import stat as S
    try:
        st = os.lstat(name, dir_fd=top_fd)
    except OSError:
        return False
    if not S.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        return False  # not a link's directory, or not ours to remove
    parts = name.split("-")
    try:
        pid, start = int(parts[0]), int(parts[1])
        their_space = parts[2]
    except (ValueError, IndexError):
        their_space = None  # not ours to judge by pid
    if their_space != space:
        import time
        return time.time() - st.st_mtime > FOREIGN_STALE_S
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, another user's
    except OSError:
        return False
    now = _start_time(pid)
    # the pid was reused, or its owner is a zombie (killed, not yet reaped): the owner is gone
    return now is not None and (now != start or _zombie(pid))


def _zombie(pid) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False


def _remove_at(dir_fd, name, keep=None):
    """rm -rf of the directory `name` in dir_fd, without shutil (import cost); never
    raises, never follows a symlink, never enters a directory another user owns.

    keep=(prefix, dest): entries whose name starts with prefix are moved to dest instead.
    """
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        try:
            os.unlink(name, dir_fd=dir_fd)  # a symlink or file: removed, never followed
        except OSError:
            pass
        return
    try:
        if os.fstat(fd).st_uid != os.geteuid():
            return
        with os.scandir(fd) as it:
            entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
        for n, is_dir in entries:
            try:
                if keep and n.startswith(keep[0]) and n != OLD:
                    os.rename(n, os.path.join(keep[1], n), src_dir_fd=fd)
                elif is_dir:
                    _remove_at(fd, n)
                else:
                    os.unlink(n, dir_fd=fd)
            except OSError:
                pass
    except OSError:
        return
    finally:
        os.close(fd)
    try:
        os.rmdir(name, dir_fd=dir_fd)
    except OSError:
        pass


def _size(path):
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass
