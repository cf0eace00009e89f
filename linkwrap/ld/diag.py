"""Diagnostics for the linker: GNU ld-style messages, collected, reported at checkpoints.

Link errors (undefined symbols, relocation overflows, ...) are collected so
that one run reports all of them; checkpoint() then raises LinkFailed whose
str() is every message, one per line. Unsupported means "this linker cannot
do that yet": one line naming what, so that linkwrap falls back to a real one.
where() names a place in an input section the way GNU ld's messages do.
"""
from linkwrap.errors import LinkwrapError
from linkwrap.ld import elf


class LinkFailed(LinkwrapError):
    """The link has errors; str() is all of them, one per line."""


class BadInput(LinkwrapError):
    """An input file is malformed or unreadable (names the file)."""


class Unsupported(LinkwrapError):
    """A feature this linker does not implement yet (names it)."""

    def __str__(self):
        return f"not supported yet: {self.args[0]}"


def warn(msg: str) -> None:
    """A problem the link goes on past, as GNU ld's "warning:" lines (stderr, one line)."""
    import sys
    print(f"linkwrap-ld: warning: {msg}", file=sys.stderr)


def where(sec, off, syms):
    """'obj.o: in function `f': (.text+0x1c)' like GNU ld (the function when one covers the offset).

    syms: the Symbols of sec's object (Resolution.syms)."""
    fn = None
    for s in syms or ():
        if s.section is sec and s.type == elf.STT_FUNC and s.value <= off < s.value + max(s.size, 1):
            fn = s.name
            break
    head = f"{sec.file.name}: in function `{fn}':" if fn else f"{sec.file.name}:"
    return f"{head}({sec.name}+0x{off:x})"


def read_text(path, what) -> str:
    """A small text input named on the command line (a version script, a dynamic list): its text, or
    one line naming it as GNU ld would."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise BadInput(f"cannot open {what} {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise BadInput(f"{path}: {what} is not text") from None


class Diagnostics:
    """Collects error lines; checkpoint() stops the link if any error was seen."""

    def __init__(self):
        self.errors = []

    def error(self, msg: str) -> None:
        self.errors.append(msg)

    def checkpoint(self) -> None:
        if self.errors:
            raise LinkFailed("\n".join(self.errors))
