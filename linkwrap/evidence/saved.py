"""SAVED: whether this output's latest link is kept replayable, so that a replay can measure it.

record/save.py writes the saved links; what the choice needs to know of them sits here, below the
policy: where a saved link lives (its manifest's name) and whether this link has one. While it has,
a replay (`linkwrap bench`, the background measurer) can time the candidates off the link path, so
the policy does not try slower linkers on the user's real links (docs/policy.md 1.4).
"""
import os


def saved_dir(state=None) -> str:
    from linkwrap import paths
    return os.path.join(state or paths.state_dir(), "saved")


def manifest_id(cwd, output) -> str:
    import zlib
    from linkwrap.evidence.measured import output_key
    key = "\0".join((cwd, output_key(output))).encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(key):08x}"


def manifest_path(cwd, output, state=None) -> str:
    return os.path.join(saved_dir(state), "links", manifest_id(cwd, output) + ".marshal")


def saving(settings, environ) -> bool:
    """Whether links are saved at all: LINKWRAP_SAVE=1, or `[bench] save` not "off" (the default is
    "largest"; LINKWRAP_SAVE=0 and CI make it "off", request/config.py)."""
    if environ.get("LINKWRAP_SAVE") == "1":
        return True
    return getattr(settings, "save", "off") != "off"


def replayable(request, settings, environ, state=None) -> bool:
    """This output's latest link is saved (one stat) and saving is on: a replay can measure it."""
    if not request.output or not saving(settings, environ):
        return False
    from linkwrap.request.args import compiles
    if compiles(request.args):   # never saved: a replay would time the compile
        return False
    try:
        return os.path.isfile(manifest_path(request.cwd, request.output, state))
    except (OSError, ValueError):
        return False
