"""Where an output's incremental state lives, and whether a base to patch is ready there.

Standard library only, and no reading of the state: the wrapper asks `ready()` on the link path
(two lstat calls) to decide whether a relink may try a patch, so it must cost what a stat costs.
state.py reads and writes what is inside.
"""
import os
import stat

STATE, BASE = "state", "base"
# `linkwrap ld --incremental-patch-only`'s exit status where the state cannot be patched: nothing
# was written, and the caller (the wrapper) links with a full linker instead.
CANNOT_PATCH = 3
# The environment's way of asking (a -B shim can pass no flag): LINKWRAP_LD_INCREMENTAL=<mode>.
ENV = "LINKWRAP_LD_INCREMENTAL"
FULL_OR_PATCH, PATCH_ONLY, BASE_ONLY = "1", "patch-only", "base-only"
# LINKWRAP_LD_NAMES=<file>: for BASE_ONLY from saved inputs, the names the state records them by:
# NUL-separated pairs "saved path", "real name" (an input not in it keeps its own path).
NAMES_ENV = "LINKWRAP_LD_NAMES"


def beside(output):
    """<dir>/.<name>.lwinc: the state directory of the output at this (final) path."""
    d, name = os.path.split(os.path.abspath(output))
    return os.path.join(d, f".{name}.lwinc")


def ready(output) -> bool:
    """A state and its base beside output, both this user's, in a directory nobody else can write:
    what a relink patches from (the output on disk may be another linker's). Not whether the
    state's inputs still match: the relink says that, and a patch it cannot make costs one refusal."""
    d = beside(output)
    uid = os.getuid()
    try:
        sd = os.lstat(d)
        if not stat.S_ISDIR(sd.st_mode) or sd.st_uid != uid or sd.st_mode & 0o022:
            return False
        for name in (STATE, BASE):
            s = os.lstat(os.path.join(d, name))
            if not stat.S_ISREG(s.st_mode) or s.st_uid != uid:
                return False
    except OSError:
        return False
    return True
