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
