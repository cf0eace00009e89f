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
"""
import os
from linkwrap.records import record

from linkwrap.wrap.policy import FRESH, IN_PLACE

TMP_DIR = ".linkwrap-tmp"
FOREIGN_STALE_S = 24 * 3600  # a directory from another pid space is left alone this long
FREE_ASYNC_MIN_BYTES = 16 << 20  # smaller old outputs are freed in the rename: a few ms at most


class Plan(record("Plan", "final link_path mode work_dir")):
    """final: the output path (None: no -o); link_path: what the linker writes;
    mode: the write mode applied; work_dir: this link's private directory, or
    None when the linker writes the output path directly (special files)."""
    __slots__ = ()


_owner = None


def owner_tag() -> str:
    """<pid>-<start time in clock ticks>-<pid space hash>; computed once per process."""
    global _owner
    if _owner is None:
        _owner = f"{os.getpid()}-{_start_time(os.getpid()) or 0}-{_space()}"
    return _owner


def _start_time(pid):
    """The process's start (clock ticks since boot), or None when it is gone."""
    from linkwrap.wrap.build import read_stat
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

    owner: the directory's owner tag (a server's child names its client), else this process's."""
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
    top = os.path.join(d, TMP_DIR)
    owner = owner or owner_tag()
    sweep(top, owner)
    work = os.path.join(top, owner)
    for _ in range(5):
        try:
            os.mkdir(top, 0o755)
        except FileExistsError:
            pass
        except OSError:
            return _direct(final, st)
        try:
            os.mkdir(work, 0o700)
            break
        except FileExistsError:
            _remove_tree(work)  # ours from an earlier attempt of this same process
        except FileNotFoundError:
            continue  # another link removed the empty .linkwrap-tmp in between
        except OSError:
            return _direct(final, st)
    else:
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


def commit(plan, ok: bool):
    """Finish the write. -> (ok, output_bytes | None, error message | None)."""
    if plan.final is None:
        return ok, None, None
    if plan.work_dir is None:
        return ok, _size(plan.final) if ok else None, None
    if not ok:
        discard(plan)
        return False, None, None
    try:
        os.rename(plan.link_path, plan.final)
    except OSError as e:
        discard(plan)
        return False, None, f"linkwrap: error: cannot move the output into place: {plan.final}: {e.strerror}\n"
    # Files the link made next to its output (<out>.map, <out>.time-trace, ...)
    # would have been created beside the real output: they go there too.
    _remove_work_dir(plan.work_dir, keep=(os.path.basename(plan.final), os.path.dirname(plan.final)))
    return True, _size(plan.final), None


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
    _remove_tree(work, keep)
    try:
        os.rmdir(os.path.dirname(work))  # .linkwrap-tmp, when no other link uses it
    except OSError:
        pass


def sweep(top, mine=None) -> int:
    """Remove private directories of links whose owner is gone. -> how many."""
    try:
        names = os.listdir(top)
    except OSError:
        return 0  # the usual case: no .linkwrap-tmp at all
    mine = mine or owner_tag()
    space = mine.rsplit("-", 1)[1]
    removed = 0
    for n in names:
        if n != mine and _is_stale(top, n, space):
            _remove_tree(os.path.join(top, n))
            removed += 1
    if removed:
        try:
            os.rmdir(top)
        except OSError:
            pass
    return removed


def _is_stale(top, name, space) -> bool:
    parts = name.split("-")
    try:
        pid, start = int(parts[0]), int(parts[1])
        their_space = parts[2]
    except (ValueError, IndexError):
        their_space = None  # not ours to judge by pid
    if their_space != space:
        import time
        try:
            return time.time() - os.lstat(os.path.join(top, name)).st_mtime > FOREIGN_STALE_S
        except OSError:
            return False
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


def _remove_tree(path, keep=None):
    """rm -rf without shutil (import cost); never raises, never follows symlinks.

    keep=(prefix, dest): entries whose name starts with prefix are moved to dest instead.
    """
    try:
        it = os.scandir(path)
    except NotADirectoryError:
        _unlink(path)
        return
    except OSError:
        return
    with it:
        for e in it:
            try:
                if keep and e.name.startswith(keep[0]):
                    os.rename(e.path, os.path.join(keep[1], e.name))
                elif e.is_dir(follow_symlinks=False):
                    _remove_tree(e.path)
                else:
                    os.unlink(e.path)
            except OSError:
                pass
    try:
        os.rmdir(path)
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
