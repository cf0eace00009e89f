"""CONFIG: linkwrap.toml (project, then user) and LINKWRAP_* variables -> Config."""
from collections import namedtuple


class Config(namedtuple("Config", [
    "prefer",        # tuple[str]: linker names, most preferred first
    "forbid",        # frozenset[str]
    "forced",        # str | None: LINKWRAP_LINKER
    "extra_flags",   # dict[str, tuple[str]]: linker name -> extra linker flags
    "in_place",      # bool: allow in-place writes when every safety rule holds
    "record",        # bool: keep per-link records
    "sources",       # dict[str, str]: key -> where its value came from
])):
    __slots__ = ()


DEFAULT_PREFER = ("mold", "wild", "lld", "rust-lld", "bfd", "gold")


def load(request=None, environ=None) -> Config:
    raise NotImplementedError("filled in by the policy work (issue #3)")
