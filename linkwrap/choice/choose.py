"""config → linkers → probe → policy: the one sequence that turns a link request into a decision.

The link path (pipeline.py), `linkwrap explain`, the tests and the benchmarks all call choose(), so
what explain shows is what a link does, fault handling included. Each step may fail on its own:

- a ConfigError or other LinkwrapError (a malformed linkwrap.toml, an unknown LINKWRAP_LINKER) is the
  user's to fix: it comes back as `config_error`, and the decision is "as asked";
- any other exception is a linkwrap fault: it comes back in `faults` as (what was being done, the
  exception), and the decision is "as asked" with faults.describe()'s reason.

The probe runs even after a configuration fault, so the link's record and explain still show the
facts. Nothing here logs or prints: the caller decides who hears of a fault (the link log, a warning,
explain's output).
"""
import os

from linkwrap.records import record

# memory: what the link is predicted to add to its memory group (predict.Prediction); None only when
# predicting it failed (a fault in `faults`: the link then runs without admission).
# measured, learned: what `linkwrap bench` measured and this output's relinks taught (None: nothing).
# failed: the linkers that failed on this output where the link as asked then passed; consulted by
# every choice but a forced one, whether or not learning is on.
# prior: other projects' like links measured on this machine (evidence/prior.py; None: not read, or
# a fault reading it); replayable: this output's link is saved, so a replay can measure it.
# base: a base to patch from is ready beside the output (ld/incremental/where.ready; None: not looked).
Choice = record("Choice", "settings found facts decision config_error faults memory measured learned failed "
                "prior replayable base", (frozenset(), None, False, None))


def choose(request, environ, memory=True, later=False, reaps=False) -> Choice:
    """memory=False leaves the memory prediction to with_memory(), later=True the facts no choice
    depends on to probe.complete(): a link that admission does not hold back needs them only for its
    record, learnt while its linker runs or after the answer (pipeline.py). reaps: the process that
    runs the link is a child subreaper that waits for a forking linker's worker after the answer
    (the server's child, invocation.reaps), so mold and wild may fork (policy.decide)."""
    from linkwrap.errors import LinkwrapError
    from linkwrap.faults import describe
    from linkwrap.request import config
    from linkwrap.facts import linkers, probe
    from linkwrap.choice import policy
    settings = facts = config_error = measured = learned = prior = base = None
    replayable = False
    failed = frozenset()
    found = {}
    faults = []
    try:
        settings = config.load(request, environ)
        found = linkers.discover(request, environ)
    except LinkwrapError as e:
        config_error = e
    except Exception as e:
        faults.append(("reading configuration or finding linkers", e))
    try:
        # Facts about this machine and this output; each may be unknown.
        facts = probe.snapshot(request, environ, later)
    except Exception as e:
        faults.append(("probing", e))

    if config_error is not None:
        decision = policy.as_asked(f"configuration error: {config_error}")
    elif faults:
        decision = policy.as_asked("; ".join(describe(doing, e) for doing, e in faults))
    else:
        # What `linkwrap bench` measured on this machine for links like this one. Measurements are
        # hints: any fault reading them leaves the static order to decide, never the link to fail.
        try:
            from linkwrap.evidence import measured as measured_mod
            measured = measured_mod.applicable(request, facts, found)
        except Exception:
            measured = None
        # Before this output or its project is measured: what was measured here for other links.
        # (Not where the policy would not look: LINKWRAP_LINKER, a configured `prefer`.)
        if (measured is None or len(measured.rows) < 2) and not settings.forced \
                and settings.sources.get("prefer") == "default":   # fewer rows: no measured pick
            try:
                from linkwrap.evidence import prior as prior_mod
                prior = prior_mod.applicable(request, facts, found)
            except Exception:   # a hint too: without it the static order decides
                prior = None
        try:
            from linkwrap.evidence import saved
            replayable = saved.replayable(request, settings, environ)
        except Exception:
            replayable = False
        base = _base_ready(request)
        # A linker that failed here is remembered for every choice but LINKWRAP_LINKER (the caller's
        # -fuse-ld wins in the policy), or it would be tried, and fall back, on every link. Relinks'
        # times teach only where linkwrap chooses: not under a configured `prefer` or `learn = false`.
        if not settings.forced:
            try:
                from linkwrap.evidence import learn
                learned = learn.evidence(request)
            except Exception:  # evidence is a hint: without it the static order decides
                learned = None
            if learned is not None:
                failed = learned.failed
            if not (settings.learn and settings.sources.get("prefer") == "default"):
                learned = None
        try:
            # Pure: which linker, which flags, how to write the output, and why.
            callers_ld = driver_ld(request, found, environ)
            decision = policy.decide(request, facts, found, settings, measured, callers_ld, learned, failed, reaps,
                                     prior, replayable, base)
            if learned is not None and not policy.learns(request, facts, callers_ld):
                # Its evidence was not consulted: nor is its time kept (a file rewritten every link
                # for nothing); a linker's failure still is (learn.note(learning=False)).
                learned = None
        except Exception as e:
            faults.append(("choosing a linker", e))
            decision = policy.as_asked(describe("choosing a linker", e))
    choice = Choice(settings, found, facts, decision, config_error, tuple(faults), None, measured, learned, failed,
                    prior, replayable, base)
    return with_memory(choice, request) if memory else choice


def _base_ready(request):
    """Whether linkwrap's own linker has a base to patch beside this output (three lstat calls), for
    the outputs it could relink incrementally; None where it could not or the answer is unknown."""
    from linkwrap.choice.incremental import KINDS
    if request.kind not in KINDS or not request.output:
        return None
    try:
        from linkwrap.ld.incremental import where
        return where.ready(os.path.join(request.cwd, request.output))
    except Exception:   # a hint: without it no patch is tried
        return None


def with_memory(choice, request) -> Choice:
    """choice with what its linker will add to the memory group (admission.py waits on it); a fault
    predicting it joins choice.faults and leaves memory None."""
    try:
        from linkwrap.evidence import predict
        decision, facts = choice.decision, choice.facts
        linker = decision.linker.name if decision.linker else None
        history, model = predict.load(linker, request.output)
        memory = predict.predict(request.output, linker, facts.input_bytes if facts is not None else None,
                                 history, model)
    except Exception as e:
        return choice._replace(faults=choice.faults + (("predicting memory", e),))
    return choice._replace(memory=memory)



def driver_ld(request, found, environ):
    """Which of the found linkers `ld` on PATH is, for a link rustc did not force to rust-lld.

    gcc runs its own `ld` (on Debian GNU ld unless the user replaced it); a machine where `ld` is
    mold or lld has chosen that linker as its default, and the static order keeps it first.
    """
    from linkwrap.request.args import rustc_forces_lld
    if rustc_forces_lld(request):
        return None
    for d in environ.get("PATH", "").split(os.pathsep):
        ld = os.path.join(d, "ld") if d else ""
        try:
            st = os.stat(ld) if ld else None
        except OSError:
            continue
        if st is None:
            continue
        # The same file, by device and inode (a stat each; realpath's lstat per component cost
        # a fifth of choose()).
        for name, info in found.items():
            try:
                other = os.stat(info.path)
            except (OSError, TypeError, ValueError):
                continue
            if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                return name
        return None
    return None

