"""linkwrap's own faults: kept in a log file, never shown during a link.

note() returns the one-line reason that goes into the link's record; the
traceback goes to <state dir>/linkwrap.log (`linkwrap log status` names it).
note_config() logs a configuration error there too, as the user's, apart from faults.
warn_once() is for what the user must fix (a malformed linkwrap.toml): one
line the first time, remembered by a marker file, on stderr -- or, in a link rustc runs, on the
build's terminal (terminal_of()), since rustc keeps a successful linker's stderr to itself.
"""
import os

LOG_MAX_BYTES = 1 << 20  # [records] max_log_kb; past it the log keeps its newer half


def describe(doing: str, exc: BaseException) -> str:
    """The one-line reason a fault leaves in the decision and the link's record."""
    return f"linkwrap fault while {doing}: {type(exc).__name__}: {exc}"


# Why the last note() could not be kept in the log (an OSError: the log a directory, the disk full),
# or None: a command that points the user at the log must not point at nothing.
unkept = None


def note(doing: str, exc: BaseException) -> str:
    global unkept
    reason = describe(doing, exc)
    try:
        import traceback
        from linkwrap.errors import LinkwrapError
        # A LinkwrapError is a message for the user, not a bug: no traceback to keep.
        text = "" if isinstance(exc, LinkwrapError) else "".join(traceback.format_exception(exc))
        _append(reason, text)
        unkept = None
    except Exception as e:
        unkept = e  # the log is a courtesy; the link goes on regardless
    return reason


CONFIG_ERROR = "configuration error: "  # how the log (and a link's record) tells the user's errors from faults


def note_config(exc: BaseException) -> str:
    """A configuration error (the user's to fix, not linkwrap's fault): logged as one, without traceback."""
    reason = f"{CONFIG_ERROR}{exc}"
    try:
        _append(reason, "")
    except Exception:
        pass
    return reason


def _append(reason: str, text: str) -> None:
    import time
    from linkwrap import __version__, paths
    path = paths.log_file()
    paths.make_private_dir(os.path.dirname(path))
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with open(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600), "a",
              encoding="utf-8") as f:
        f.write(f"--- {stamp} linkwrap {__version__} pid {os.getpid()}\n{reason}\n{text}\n")
        size = f.tell()
    if LOG_MAX_BYTES and size > LOG_MAX_BYTES:
        _keep_newer_half(path)


def counts(text: str) -> tuple:
    """(faults, configuration errors, the last configuration error) in the log's text."""
    n_faults = n_config = 0
    last = None
    for entry in ("\n" + text).split("\n--- ")[1:]:
        reason = (entry.split("\n", 2) + ["", ""])[1]
        if reason.startswith(CONFIG_ERROR):
            n_config, last = n_config + 1, reason[len(CONFIG_ERROR):]
        else:
            n_faults += 1
    return n_faults, n_config, last


def _keep_newer_half(path) -> None:
    """Cut the log to its newer half, at an entry's start; concurrent writers lose at most an entry."""
    with open(path, "rb") as f:
        f.seek(-(LOG_MAX_BYTES // 2), os.SEEK_END)
        tail = f.read()
    start = tail.find(b"\n--- ")
    tail = tail[start + 1:] if start >= 0 else b""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with open(fd, "wb") as f:
        f.write(tail)
    os.replace(tmp, path)


# Set in a server's child once it has answered its client: stderr is /dev/null then, so a warning
# would be marked as said without anyone hearing it; it waits for a link that can say it.
UNHEARD = False


# (pid, $TERM) of the process whose controlling terminal takes warnings instead of stderr: set by
# the pipeline for a link rustc runs (its temporary directory on the line). rustc shows a successful linker's stderr
# only under `-W linker-messages` (rustc 1.95: nothing by default), so a warning there would be
# marked as said and never read; the build's terminal, where there is one, is where the user looks.
TERMINAL_OF = None


def warn_once(kind: str, message: str) -> None:
    """Print `linkwrap: warning: <message>` unless this kind of warning was said before: on the
    terminal of TERMINAL_OF when that is set and has one, else on stderr."""
    try:
        fd = terminal_of(TERMINAL_OF[0]) if TERMINAL_OF else None
        if fd is None and UNHEARD:
            return
        try:
            if first_time(kind):
                from linkwrap.errors import warning_line
                line = warning_line(message)
                if fd is not None and (TERMINAL_OF[1] or "dumb") != "dumb":
                    line = "\r\x1b[K" + line  # over Cargo's progress line, as Cargo's own messages are
                os.write(2 if fd is None else fd, line.encode("utf-8", "surrogateescape"))
        finally:
            if fd is not None:
                os.close(fd)
    except BaseException:
        pass


def terminal_of(pid):
    """An fd open for writing on the controlling terminal of process pid, or None: none, not a
    terminal device this user owns (never another user's: root's build must not write to it), or
    not found. From /proc/<pid>/stat's tty_nr, so it works in the server's child too, which has no
    terminal of its own: the build's client process does."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            text = f.read()
        tty_nr = int(text[text.rindex(b")") + 2:].split()[4])  # state ppid pgrp session tty_nr
    except (OSError, ValueError, IndexError):
        return None
    major, minor = (tty_nr >> 8) & 0xFFF, (tty_nr & 0xFF) | ((tty_nr >> 12) & 0xFFF00)
    if 136 <= major <= 143:   # Unix98 pseudo-terminals: /dev/pts/N
        path = f"/dev/pts/{(major - 136) * 256 + minor}"
    elif major == 4 and 0 < minor < 64:  # virtual consoles
        path = f"/dev/tty{minor}"
    else:
        return None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (st.st_mode & 0o170000 == 0o020000 and st.st_rdev == os.makedev(major, minor)
                and st.st_uid == os.geteuid()):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def first_time(kind: str) -> bool:
    """Create the once-marker for `kind`; False when it was already there.

    The marker lives in the state dir, or in $TMPDIR when the state dir cannot
    take it (read-only, full): better said again than never.
    """
    from linkwrap import paths
    state = paths.state_dir()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    for marker in (os.path.join(state, f".warned-{kind}"), fallback_marker(state, kind)):
        try:
            os.close(os.open(marker, flags, 0o600))
            return True
        except FileExistsError:
            # In $TMPDIR another user can plant the name: only our own file says "already said".
            return not _ours(marker)
        except OSError:
            continue
    return True


def _ours(path: str) -> bool:
    import stat
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return st.st_uid == os.geteuid() and stat.S_ISREG(st.st_mode)


def fallback_marker(state: str, kind: str) -> str:
    """Where the once-marker goes when the state dir cannot hold it."""
    import binascii
    crc = binascii.crc32(state.encode("utf-8", "surrogateescape"))
    tmp = os.environ.get("TMPDIR") or "/tmp"
    return os.path.join(tmp, f"linkwrap-{os.getuid()}-warned-{kind}-{crc:08x}")


def fallback_markers(state: str) -> list:
    """Every once-marker of any kind that fallback_marker() gave state, sorted."""
    tmp, name = os.path.split(fallback_marker(state, "\0"))
    head, tail = name.split("\0")
    try:
        names = sorted(os.listdir(tmp))
    except OSError:
        return []
    return [os.path.join(tmp, n) for n in names
            if n.startswith(head) and n.endswith(tail) and len(n) > len(head) + len(tail)]
