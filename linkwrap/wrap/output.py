"""Output-file safety: how the chosen write mode is carried out.

FRESH: the linker writes a temporary name in the output's directory, renamed
over the output only when the link succeeded, so the old inode (and every
other hard link to it, such as Cargo's target/debug/foo) is never touched.
IN_PLACE: the linker gets the output path itself (mold/wild then reuse the inode).
"""
import os
from collections import namedtuple

from linkwrap.wrap.policy import FRESH, IN_PLACE


class Plan(namedtuple("Plan", "final link_path mode")):
    """final: the output path; link_path: what the linker is told to write."""
    __slots__ = ()


def prepare(request, write_mode) -> Plan:
    final = request.output
    if not final or write_mode == IN_PLACE:
        return Plan(final, final, write_mode)
    d, base = os.path.split(final)
    return Plan(final, os.path.join(d, f".{base}.linkwrap-{os.getpid()}.tmp"), FRESH)


def commit(plan, ok: bool):
    """Finish the write; -> size of the output, or None."""
    if plan.final is None:
        return None
    if plan.mode == FRESH and plan.link_path != plan.final:
        if ok:
            os.rename(plan.link_path, plan.final)
        else:
            abort(plan)
            # As GNU ld and lld do: a failed link leaves no output under its name.
            _unlink(plan.final)
            return None
    try:
        return os.stat(plan.final).st_size if ok else None
    except OSError:
        return None


def abort(plan) -> None:
    if plan.final is not None and plan.link_path != plan.final:
        _unlink(plan.link_path)


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass
