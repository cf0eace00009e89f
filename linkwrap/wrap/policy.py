"""POLICY: (request, probe, linkers, config) -> Decision. Pure: no I/O at all.

Every rule adds a short sentence to Decision.reasons, so `linkwrap explain`
and the link records can say why.
"""
from collections import namedtuple

IN_PLACE = "in-place"  # the linker may overwrite the existing inode: every hard link sees the new binary
FRESH = "fresh"        # a new inode: the old one, and every other name for it, stays untouched


class Decision(namedtuple("Decision", [
    "linker",        # LinkerInfo | None: None = link exactly as the caller asked
    "linker_flags",  # tuple[str]: flags for the linker itself (run passes them as -Wl,<flag>)
    "driver_flags",  # tuple[str]: extra flags for the cc driver
    "write_mode",    # IN_PLACE | FRESH
    "reasons",       # tuple[str]: short sentences, in the order the rules fired
])):
    """What to run, how to write the output, and why."""
    __slots__ = ()

    @property
    def changes_anything(self) -> bool:
        return self.linker is not None or bool(self.linker_flags or self.driver_flags)


def as_asked(reason: str) -> Decision:
    """The link exactly as the caller asked for it (fail-open and LINKWRAP_DISABLE)."""
    return Decision(None, (), (), FRESH, (reason,))


def decide(request, probe, linkers, config) -> Decision:
    raise NotImplementedError("filled in by the policy work (issue #3)")
