"""linkwrap's own faults: kept in a log file, never shown during a link.

note() returns the one-line reason that goes into the link's record; the
traceback goes to <state dir>/linkwrap.log (`linkwrap log status` names it).
note_config() logs a configuration error there too, as the user's, apart from faults.
warn_once() is for what the user must fix (a malformed linkwrap.toml): one
line on stderr the first time, remembered by a marker file.
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


def warn_once(kind: str, message: str) -> None:
    """Print `linkwrap: warning: <message>` unless this kind of warning was said before."""
    if UNHEARD:
        return
    try:
        if first_time(kind):
            from linkwrap.errors import warning_line
            os.write(2, warning_line(message).encode("utf-8", "surrogateescape"))
    except BaseException:
        pass


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
            return False
        except OSError:
            continue
    return True


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
