"""The errors linkwrap shows to people.

Each class's str() is the sentence the user sees (pypa/build style); the CLI
prints it after "linkwrap: error: " and exits 1 (2 for a UsageError). On the
link path these never reach the user: the pipeline falls back to the link
rustc asked for.
"""


class LinkwrapError(Exception):
    """Base class: str() is the user-facing message."""


class UsageError(LinkwrapError):
    """The linkwrap command line was wrong."""


class ConfigError(LinkwrapError):
    """A configuration file is malformed or unreadable, or LINKWRAP_LINKER names no linker: the message
    is one line naming the file and line (or the variable)."""


class InstallError(LinkwrapError):
    """install/uninstall refused; the message carries the hint."""


class StateError(LinkwrapError):
    """A directory of linkwrap's own state that another user could change (a symlink, another user's,
    writable by others): not used, said in one line."""


# --- what reaches a terminal ------------------------------------------------
# Paths, commands and linker messages come from files anyone can name: an output called
# "\x1b]0;pwned\x07" must not retitle, recolour or rewrite the user's terminal. Every line
# linkwrap prints goes through printable(); the HTML report escapes for HTML instead.

def printable(text, keep: str = "") -> str:
    """text with each character a terminal would act on (C0/C1 controls, DEL, bidi and other
    format characters) shown as a \\x.. or \\u.... escape; characters in `keep` stay as they are.
    Undecodable path bytes (surrogate escapes) stay raw, except 0x80-0x9f (C1 controls)."""
    text = str(text)
    if text.isprintable():
        return text
    out = []
    for c in text:
        o = ord(c)
        if c.isprintable() or c in keep or 0xDCA0 <= o <= 0xDCFF:
            out.append(c)
        elif 0xDC80 <= o < 0xDCA0:
            out.append(f"\\x{o - 0xDC00:02x}")
        elif o < 0x100:
            out.append(f"\\x{o:02x}")
        else:
            out.append(f"\\u{o:04x}")
    return "".join(out)


def printable_data(value):
    """printable() applied to every string in a structure of dicts, lists and tuples (a report)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {k: printable_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(printable_data(v) for v in value)
    return value


def os_error_text(exc: OSError) -> str:
    """'<file>: <reason>' for an OSError that names its file, else its reason: a message names the
    file that failed (a lock turned into a directory), not the one the caller was after."""
    reason = exc.strerror or str(exc)
    return f"{exc.filename}: {reason}" if exc.filename else reason


def error_line(message) -> str:
    """The one way linkwrap says an error: `linkwrap: error: <message>` and a newline."""
    return f"linkwrap: error: {printable(message, keep=chr(10))}\n"


def warning_line(message) -> str:
    return f"linkwrap: warning: {printable(message, keep=chr(10))}\n"
