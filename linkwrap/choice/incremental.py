"""INCREMENTAL: whether linkwrap's own linker relinks this output by patching (`linkwrap ld
--incremental`) instead of the full linker the rest of the policy chose. Pure: no I/O at all.

What it reads comes in as arguments: the request (its kind, its arguments, its output path), the
linkers found, the Config (`incremental`: True forces, False turns off, None decides by
measurement), this output's relinks (learn.Learned: the incremental ones and the full linkers'
ones, each a median of load-adjusted times) and the linkers that failed on it.

An incremental link is for an edit loop: it leaves slack in the output and a state beside it, and
is byte-identical only to a link into its own layout, so it is never chosen for a build that looks
like a release or uses LTO, whatever asks for it (release_or_lto() says how that is told). It is
chosen by measurement when this output's incremental relinks (at least learn.NEED of them) have a
lower median than the best full linker's relinks of the same output (at least learn.NEED too;
a full linker with fewer is judged by its replay of this very output where one was measured, by_replay).
Those samples arise only where something asked for incremental links (LINKWRAP_INCREMENTAL=1,
LINKWRAP_LD_INCREMENTAL=1, `[incremental] enabled = true`): the policy never tries one on its own,
since the first incremental link of an output is a full link by linkwrap's own linker, many times
a fast linker's time, paid on the user's critical path. docs/policy.md 1.5 has the rules and why.
"""
from linkwrap.choice.rules import FUSE_LD, MIN_MEASURED_RUNS, joined_args
from linkwrap.records import record

# The kinds linkwrap's own linker patches: -shared and -r outputs it links in full every time
# (ld/incremental/main.py), so an incremental link of those only adds the state's cost.
KINDS = ("pie", "exec", "static", "static-pie")

# Strip options: a stripped output is a build to ship, not to debug. rustc passes --strip-debug for
# Cargo's release profile (`strip = "debuginfo"` is its default when it has no debug info), -s/
# --strip-all for `strip = "symbols"`; a C build gets them from its release flags.
STRIP = frozenset(("-s", "-S", "--strip-all", "-strip-all", "--strip-debug", "-strip-debug"))

# Output directories of optimised builds: Cargo's `release` profile (target/release/, target/<triple>/
# release/, their deps/ and examples/; `cargo bench` builds there too) and CMake's multi-config
# Release and MinSizeRel directories.
RELEASE_DIRS = frozenset(("release", "minsizerel"))
CARGO_SUBDIRS = frozenset(("deps", "examples"))


# What choose() says: chosen (linkwrap's own linker relinks this output incrementally); why (the
# reason, or None); patch_only (chosen, but only a patch: where the state cannot be patched the
# full linker links, and linkwrap's own full link never runs on the build's path); wants_base (a
# base to patch from is worth building in the background, from this link's saved inputs, because
# a ready base is what lets the next relink try a patch; the pipeline asks for one only where the
# link was saved, since the base is built from the saved inputs).
Verdict = record("Verdict", "chosen why patch_only wants_base", (False, False))


def choose(request, linkers, config, learned=None, failed=frozenset(), full=None, base=None, saved=False,
           measured=None):
    """The Verdict for this link; full: the LinkerInfo the rest of the policy chose (None: the link
    runs as asked, and nothing is said here). base: a base to patch is ready beside the output
    (ld/incremental/where.ready; None: not looked at). saved: this link is kept replayable, so a
    base can be built from it in the background. measured: evidence.measured.Measured, the replay
    results that apply to this link (only those of this very output stand in for relinks, by_replay).

    The cheap rules first; the command line is scanned (_scan) only where the link could otherwise
    be incremental: asked for, measured, or a base ready to try. A link with too few samples is said
    to be unmeasured, whatever its flags would say."""
    from linkwrap.evidence.learn import NEED
    if full is None:
        return Verdict(False, None)
    setting = getattr(config, "incremental", None)
    where = config.sources.get("incremental.enabled", "configuration") if config is not None else ""
    if setting is False:
        return Verdict(False, f"incremental relinking off ({_setting(where, False)})")
    if getattr(request, "kind", None) not in KINDS:
        return Verdict(False, (f"no incremental relinking for a {request.kind} output: linkwrap's own linker "
                       "relinks those in full every time"))
    release = release_dir(getattr(request, "output", None))
    if release:
        return Verdict(False, f"no incremental relinking for a release or LTO build: {release}")
    own = linkers.get("python")
    if own is None:
        return Verdict(False, "no incremental relinking: linkwrap's own linker (linkwrap-ld) is not installed")
    if "python" in failed:
        return Verdict(False, ("no incremental relinking: linkwrap's own linker failed on this output before, "
                       "where the link as asked passed"))
    target = getattr(request, "target", None)
    if target and not target.startswith("x86_64"):
        return Verdict(False, X86_64_ONLY)
    forced = getattr(config, "forced", None)
    if forced and forced != "python" and forced in linkers:
        return Verdict(False, f"no incremental relinking: LINKWRAP_LINKER={forced} names the linker")
    asked = _callers_choice(request)
    if asked and asked == full.name:
        return Verdict(False, f"no incremental relinking: the command line asks for -fuse-ld={request.fuse_ld}")
    inc = getattr(learned, "incremental", None) if learned is not None else None
    timed = f"{inc[1]:.0f} ms median of {inc[0]} timed" if inc else "none timed yet"
    trying = False
    if setting is None:
        if learned is None:
            return Verdict(False, "incremental relinking is chosen only by this output's relinks, not learnt "
                                  "here (LINKWRAP_LINKER, a configured prefer or [choice] learn = false)")
        if inc is None or inc[0] < NEED:
            if not base:
                # Built off the build's path: linkwrap's own full link costs many times the fast
                # linker's, so the first relinks never pay for it (issue 36 item 4).
                later = ("; its base to patch is built in the background" if saved else
                         " (LINKWRAP_INCREMENTAL=1 times them); a base to patch is built in the background "
                         "once the link is saved")
                return Verdict(False, f"incremental relinking not measured on this output: "
                                      f"{inc[0] if inc else 0} of {NEED} incremental relinks timed{later}",
                           False, _scan(request) == (None, False))
            trying = True
    why, narrow = _scan(request)
    if why:
        return Verdict(False, f"no incremental relinking for a release or LTO build: {why}")
    if narrow:
        return Verdict(False, X86_64_ONLY)
    if setting is True:
        return Verdict(True, f"{own.label}, incremental: {_setting(where, True)} asks for it ({timed})")
    instead = f"else {full.label} links"   # where it cannot patch
    if trying:
        # A patch costs a fraction of a full link and a refusal a few ms more than the full link:
        # trying is nearly free, and its times are the measurement that keeps it or takes it back.
        return Verdict(True, f"{own.label}, incremental: trying a patch, its base is ready ({timed}; "
                             f"{inc[0] if inc else 0} of {NEED}); {instead}", patch_only=True,
                       wants_base=True)
    judged = {n: med for n, (k, med) in learned.stats.items()
              if k >= NEED and n in linkers and n != "python" and n not in failed}
    # A full linker this output's relinks have not judged yet is judged by its replay of this very
    # output where one was measured (`linkwrap bench`, the background measurer): without it, the
    # relinks after the first patches would go to the full linker only to time it (issue 36 item 5).
    replayed = {n: med for n, med in by_replay(measured).items()
                if n not in judged and n in linkers and n != "python" and n not in failed}
    if not judged and not replayed:
        return Verdict(False, f"incremental relinking not chosen: {timed} incremental relinks, and no full "
                              f"linker has {NEED} timed relinks of this output to compare with")
    best = min((*judged, *replayed), key=lambda n: (judged.get(n, replayed.get(n)), n))
    if best in judged:
        vs = f"{linkers[best].label} {judged[best]:.0f} ms ({learned.stats[best][0]} timed)"
    else:
        vs = f"{linkers[best].label} {replayed[best]:.0f} ms (measured by replay)"
    if inc[1] < judged.get(best, replayed.get(best)):
        how = "'s relinks" if best in judged else ""
        adjusted = "; load-adjusted" if best in judged else ""
        return Verdict(True, f"{own.label}, incremental: measured faster than the best full linker on this "
                             f"output{how} ({timed} vs {vs}{adjusted}); {instead}",
                       patch_only=True, wants_base=True)
    return Verdict(False, f"incremental relinking not chosen: {timed} incremental relinks, not faster than {vs}")


def by_replay(measured) -> dict:
    """{full linker: median ms} of this very output's replays (fresh writes, enough rounds, not
    failed): what stands in for a full linker's relinks the output has not timed. The rows of
    another output of the project (Measured's wider scope) say nothing about this output's edits."""
    from linkwrap.evidence.measured import SCOPES
    if measured is None or measured.scope != SCOPES[0]:
        return {}
    return {r.linker: r.median_ms for r in measured.rows
            if r.variant == "fresh" and not r.failed and r.runs >= MIN_MEASURED_RUNS and r.median_ms}


X86_64_ONLY = "no incremental relinking: linkwrap's own linker links x86-64 programs only"


def release_or_lto(request):
    """Why this link is a release or LTO build, or None. Only what the command line and the output's
    path show: rustc's `-C opt-level` never reaches the linker, and the absence of debug sections
    would mean reading every input on every link (what the budget of issue 36 item 6 forbids)."""
    return release_dir(getattr(request, "output", None)) or _scan(request)[0]


def release_dir(out):
    """'the output is in a release/ directory' when the output's directory (or its deps/ or examples/
    under Cargo's profile directory) is a release build's, else None."""
    if not out:
        return None
    parts = out.replace("\\", "/").split("/")[:-1]
    for i in (len(parts) - 1, len(parts) - 2):
        if i >= 0 and parts[i].lower() in RELEASE_DIRS and (i == len(parts) - 1 or parts[-1] in CARGO_SUBDIRS):
            return f"the output is in a {parts[i]}/ directory"
    return None


def _scan(request):
    """(why the command line says release or LTO, or None; whether it asks for a 32-bit program)."""
    args = getattr(request, "args", ()) or ()
    # A rustc link has thousands of arguments, nearly all of them paths: one str.find per option over
    # the join policy.linker_options made (C speed) reaches the few options without a Python step
    # per argument.
    joined = joined_args(args)
    lto = plugin = strip = None
    narrow = False
    i = joined.find("\0-")
    while i >= 0:
        end = joined.index("\0", i + 1)
        a = joined[i + 1:end]
        if a == "-flto" or a.startswith("-flto="):
            lto = a                     # the last of -flto and -fno-lto counts, as gcc takes them
        elif a == "-fno-lto":
            lto = None
        elif a == "-fuse-linker-plugin":
            plugin = a
        elif a == "-s":
            strip = "-s (strip)"
        elif a == "-m32" or a == "-mx32":
            narrow = True
        elif a.startswith("-Wl,") or a == "-Xlinker":
            if a == "-Xlinker":         # its value is the next argument
                after = joined.find("\0", end + 1)
                flags, end = (joined[end + 1:after],), (after if after > 0 else end)
            else:
                flags = a[4:].split(",")
            for f in flags:
                if f in STRIP:
                    strip = strip or f"-Wl,{f} (strip)"
                elif f.startswith("-plugin") or f.startswith("--plugin"):
                    plugin = "a linker plugin (LTO)"
        i = joined.find("\0-", end)
    why = lto or plugin or strip
    return (f"{why} on the command line" if why else None), narrow


def _setting(where, value) -> str:
    """The setting that said it, as the user would write it."""
    if where == "env LINKWRAP_INCREMENTAL":
        return f"LINKWRAP_INCREMENTAL={int(value)}"
    if where == "env LINKWRAP_LD_INCREMENTAL":
        return "LINKWRAP_LD_INCREMENTAL=1"
    return f"[incremental] enabled = {'true' if value else 'false'} in {where}"


def _callers_choice(request):
    """The linker the caller's own -fuse-ld= names (not rustc's injected one)."""
    from linkwrap.request.args import rustc_forces_lld
    fuse = getattr(request, "fuse_ld", None)
    if not fuse or rustc_forces_lld(request):
        return None
    return FUSE_LD.get(fuse)
