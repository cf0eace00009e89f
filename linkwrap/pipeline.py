"""The link path: args -> probe -> policy -> run -> record. Read this file first.

Everything here runs once per link, inside the build, so two rules hold:
- a fault of linkwrap's own never fails a link the caller's own command would
  have passed: it is noted in the log and the link runs exactly as asked;
- on success nothing is printed (rustc >= 1.97 shows linker output as warnings).
"""
import os
import time

from linkwrap import faults, paths
from linkwrap.request import args, inputs, invocation
from linkwrap.choice import policy
from linkwrap.record import record
from linkwrap.run import run
from linkwrap.choice.choose import choose, with_memory


# In a server's child: called with the Invocation while its linker runs, to hand the request to the
# server, whose next spares rehearse it (server/warm.hand_off()). None elsewhere.
HANDOFF = None


def main(argv, driver=None, environ=os.environ) -> int:
    """The link this process was started for; exec and dying of a signal happen here."""
    return invocation.act(link(invocation.current(argv, driver, environ)))


def link(inv, answer=None):
    """One link. -> its exit status, invocation.Exec (become the driver) or invocation.Killed.

    answer(status), when given (the server's child), is called as soon as the link's result is
    final -- the output in place, the linker's messages passed on, the inputs saved when asked --
    and before the work the caller need not wait for: the record, the memory history, what the
    relink taught, removing the private directory. Not called when the result is Exec or Killed."""
    started_ns = time.perf_counter_ns()
    # Each input stat()ed once in this link, by every stage (request/inputs.py); anew in the next.
    inputs.begin()
    try:
        return _link(inv, answer, started_ns)
    finally:
        inputs.end()


def _link(inv, answer, started_ns):
    argv, driver, environ = inv.argv, inv.driver, inv.environ
    faults.TERMINAL_OF = None  # a reused server child: the last link's terminal is not this one's
    if invocation.disabled(environ):
        return passthrough(argv, driver, environ)
    refused = paths.untrusted_state()
    if refused:
        # Its owner could change what links run (a shim, a cached linker): as asked, touching nothing
        # there -- said every time, since a note that it was said would have to be kept there.
        import sys
        from linkwrap.errors import warning_line
        sys.stderr.write(warning_line(f"{refused}: linkwrap's state not used; linking as asked "
                                      "(set LINKWRAP_HOME to a directory of your own)"))
        return passthrough(argv, driver, environ)
    try:
        if not args.links(argv, inv.cwd):
            # `cc -c`, `-E`, `-fsyntax-only`, `--version`…: the driver's alone, nothing chosen or recorded.
            return passthrough(argv, driver, environ)
        # Classify the command line; take out what forces rustc's own linker.
        request = args.parse(argv, driver, environ, cwd=inv.cwd)
    except Exception as e:  # an unreadable @file: let the driver say so
        faults.note("reading the command line", e)
        return passthrough(argv, driver, environ)
    if not request.inputs and request.output is None:
        # `--version`, `-print-prog-name=ld`, `--help`…: a question to the driver, not a link.
        return passthrough(argv, driver, environ)
    # rustc keeps a successful link's stderr to itself: what must be said goes to the build's terminal.
    if args.rustc_temp_dir(request.args) is not None:
        faults.TERMINAL_OF = (inv.caller_pid, environ.get("TERM"))

    # config → linkers → probe → policy; a fault in any of them means "as asked", with the reason.
    # What only the record needs (the memory prediction, the facts in probe.LATER) waits for the
    # linker's start or the answer, unless admission needs it now (below).
    choice = choose(request, environ, memory=False, later=True, reaps=inv.reaps)
    settings, facts, decision = choice.settings, choice.facts, choice.decision
    if settings is not None:
        faults.LOG_MAX_BYTES = int(settings.retention["max_log_kb"] * 1024)
    for doing, e in choice.faults:
        faults.note(doing, e)
    for path, why in settings.ignored if settings is not None else ():
        # Another user's file could name a linker plugin: not read, and said once.
        faults.warn_once(f"config-{_crc(path)}", f"ignoring {path}: {why}")
    if settings is not None and settings.forced and settings.forced not in choice.found and \
            choice.config_error is None and not choice.faults:
        _forced_missing(settings.forced, environ, inv)
    if choice.config_error is not None:
        e = choice.config_error
        faults.note_config(e)
        if environ.get(CONFIG_ERRORS) != "warn":
            # The user's to fix (a malformed linkwrap.toml): rustc discards a successful link's stderr,
            # so a warning goes unseen and the build quietly runs without linkwrap's choice. Fail the
            # link in the build where it happens, as ccache and Cargo do with their own config files.
            return _config_failure(request, _complete(facts, request, environ), decision, e, started_ns, inv)
        # LINKWRAP_CONFIG_ERRORS=warn: said once per build (once for ever could be never, as above),
        # the link runs as asked, and `linkwrap summary` shows it.
        from linkwrap.facts import build
        faults.warn_once(f"config-{_crc(str(e) + build.identify(environ, inv.caller_pid).key)}",
                         f"{e}; linking as asked until it is fixed")

    # Memory: a link whose predicted memory does not fit waits for running links (admission.py).
    ticket = None
    if _admitting(choice):
        facts = _complete(facts, request, environ)
        choice = _predict(choice._replace(facts=facts), request)
    if choice.memory is not None:
        try:
            from linkwrap.choice import admission
            ticket = admission.enter(choice, environ)
        except Exception as e:
            faults.note("waiting for memory", e)

    # Run it. A failure that may be linkwrap's doing gets one more try as asked.
    first = unpatched = None
    owner = inv.owner
    chosen = decision
    recording = settings is None or settings.record
    who, later, kept = [], [], []

    def meanwhile():
        # While the linker runs, on a CPU it may not need: what the record needs from the caller's
        # ancestors (they live as long as the caller waits), the facts no choice needed, and saving
        # by default's hard links of the inputs rustc deletes once the link returns.
        if recording and not who:
            from linkwrap.facts import build
            who.append(build.identify(environ, inv.caller_pid))
        if not later:
            later.append(_complete(facts, request, environ))
        if not kept:
            kept.append(_keep_inputs(request, later[0], settings, environ))
        if HANDOFF is not None:
            HANDOFF(inv)

    reaps = inv.reaps
    try:
        try:
            outcome = run.execute(request, decision, environ, owner=owner, meanwhile=meanwhile, reaps=reaps)
        except Exception as e:  # e.g. no room for the -B directory: link as asked
            decision = policy.as_asked(faults.note(f"running {_label(decision)}", e))
            outcome = run.execute(request, decision, environ, owner=owner, meanwhile=meanwhile, reaps=reaps)
        if outcome.returncode != 0 and outcome.start != "driver" and not (
                decision.instead is not None and _unpatched(outcome)):
            # What the driver's expansion cannot show (LTO code in an archive): the driver has the last word.
            outcome = run.execute(request, decision, environ, direct=False, owner=owner, meanwhile=meanwhile,
                                  reaps=reaps)
        if decision.instead is not None and _unpatched(outcome):
            # linkwrap's own linker could not patch this relink and wrote nothing: the full linker
            # the policy stood by links it, and the link's time is both (what patching cost here).
            unpatched = outcome    # (linkwrap's own linker forks no worker: nothing to reap)
            decision = _instead(decision, unpatched)
            outcome = run.execute(request, decision, environ, owner=owner, meanwhile=meanwhile, reaps=reaps)
            outcome = _both(unpatched, outcome)
        # A link fails only when the caller's own command fails: whatever linkwrap changed (the linker,
        # a flag) may be the cause, even of an "undefined symbol" (lld's -z start-stop-gc), so it is
        # always linked again as asked; learn.note keeps a linker that failed off this output.
        if outcome.returncode != 0 and decision.changes_anything and not _python_ld_without_fallback(decision, environ):
            # A failed forking linker waited for its worker; anything left belongs to this attempt.
            first = run.reap(outcome) if reaps else outcome
            decision = policy.as_asked(f"{_label(decision)} failed (exit {outcome.returncode}); linked as asked")
            outcome = run.execute(request, decision, environ, owner=owner, meanwhile=meanwhile, reaps=reaps)
            # (Not linkwrap's own linker: its "not supported yet" and the fall-back are its contract.)
            if outcome.returncode == 0 and chosen.linker is not None and settings is not None \
                    and chosen.linker.name == settings.forced != "python":
                _forced_failed(chosen, first, request, environ, inv)
    except run.Interrupted as e:
        return invocation.Killed(e.signal)
    except Exception as e:
        # linkwrap cannot even run the link as asked (a bug, an odd path): become the driver, untouched.
        faults.note("running the link as asked", e)
        return passthrough(argv, driver, environ)

    # Beyond this point the link is over: nothing below may change its result.
    run.write_through(outcome)
    facts = later[0] if later else _complete(facts, request, environ)  # nothing ran: learnt now
    memory = ended_ns = None
    if ticket is not None and not reaps:  # the next link may be waiting for this one's memory: let it go first
        memory = _leave(ticket, choice, decision, request, outcome, facts)
    saving = outcome.returncode == 0 and _saving(settings, environ)
    saved = False
    kept = kept[0] if kept else None  # the inputs saving by default kept while the linker ran
    if kept is False:  # not this link (not among its project's largest), or keeping them failed
        saving, kept = False, None
    elif kept is not None and not saving:
        _drop(kept)  # a failed link is not saved: nothing will name what was kept for it
        kept = None
    # What the relink taught: its time where linkwrap chose (learning on); a linker's failure always,
    # but for a linker forced by LINKWRAP_LINKER (asked for, not chosen: no evidence against it).
    teaching = choice.learned is not None or (
        first is not None and outcome.returncode == 0 and chosen.linker is not None
        and chosen.linker.name != getattr(settings, "forced", None)) or (
        # an incremental link's time, however it was asked for: the measurement that may choose it
        # later (choice/incremental.py); not under `[choice] learn = false`
        chosen.incremental and outcome.returncode == 0 and (settings is None or settings.learn))
    if answer is not None:
        if saving and kept is None:  # before the answer: rustc deletes its temporary inputs once the link returns
            saved = _save(request, facts, outcome, settings, environ)
            saving = False
        elif saving and kept.first:  # the output's first saved link: there before the server looks
            saved = _save(request, facts, outcome, settings, environ, kept)
            saving = False
        if teaching and first is not None:
            # Before the answer: the build's next link of this output must not try the failed linker
            # again. Failures are rare; a success's time can wait until after the answer.
            _learn(request, chosen, outcome, facts, first, choice.learned is not None, choice.measured,
                   unpatched is not None)
            teaching = False
        if recording and not who:  # nothing ran (no such driver): from the caller's ancestors while it lives
            from linkwrap.facts import build
            who.append(build.identify(environ, inv.caller_pid))
        ended_ns = time.perf_counter_ns()  # linkwrap's own time ends where the caller stops waiting
        answer(outcome.returncode)
    if reaps:
        # A forking linker's worker (mold, wild) outlived the first process, which ended once the output
        # was complete; its time and memory come into the record now. The wall time stays the first
        # process's: that is when the build could go on (as it does without linkwrap), and the worker
        # only frees memory. The memory it held until now is the link's: admission lets go only now.
        outcome = run.reap(outcome)
        if ticket is not None:
            memory = _leave(ticket, choice, decision, request, outcome, facts)
    if memory is None and ticket is None:
        # The prediction this link would have had (from the history before this link), for its record.
        choice = _predict(choice._replace(facts=facts), request)
        if choice.memory is not None:
            memory = _leave(None, choice, decision, request, outcome, facts)
    if recording:
        limits = settings.retention if settings is not None else {}
        record.save(request, facts, decision, outcome, started_ns=started_ns, first_attempt=first, memory=memory,
                    max_spool_bytes=int(limits.get("max_spool_mb", 64) * (1 << 20)), environ=environ,
                    caller_pid=inv.caller_pid, entry=inv.entry, reached_ns=inv.reached_ns, ended_ns=ended_ns,
                    build=who[0] if who else None)
    if teaching:
        _learn(request, chosen, outcome, facts, first, choice.learned is not None, choice.measured,
                   unpatched is not None)
    if saving:
        # now, while rustc's temporary inputs still exist (or, kept while the linker ran, the manifest)
        saved = _save(request, facts, outcome, settings, environ, kept)
    if saved and decision.wants_base:
        # saved (by default), and linked by a full linker: the server builds a base to patch from it
        _want_base(request)
    return outcome.returncode


_CANNOT = b"linkwrap-ld: incremental: cannot patch: "   # linkwrap ld's one line where it cannot


def _unpatched(outcome) -> bool:
    """linkwrap ld --incremental-patch-only said it cannot patch and wrote nothing. Its exit status
    (where.CANNOT_PATCH) reaches us only when it ran directly: gcc's collect2 turns every failing
    linker's status into 1, so its own line, at a line's start, is what tells."""
    if outcome.returncode == 0:
        return False
    err = outcome.stderr or b""
    return err.startswith(_CANNOT) or b"\n" + _CANNOT in err


def _instead(decision, refused):
    """The full linker's decision, with why the patch was not made (linkwrap ld's one line)."""
    err = refused.stderr or b""
    at = err.find(_CANNOT)
    why = err[at + len(_CANNOT):].split(b"\n", 1)[0].decode("utf-8", "replace").strip() if at >= 0 else \
        f"exit {refused.returncode}"
    label = decision.instead.linker.label if decision.instead.linker is not None else "the link as asked"
    return decision.instead._replace(reasons=decision.instead.reasons + (
        f"{decision.linker.label} could not patch ({why[:120]}): {label} linked it",))


def _both(refused, outcome):
    """outcome with the refused patch's time and memory folded in: the caller waited for both."""
    return outcome._replace(wall_ms=outcome.wall_ms + refused.wall_ms, user_ms=outcome.user_ms + refused.user_ms,
                            sys_ms=outcome.sys_ms + refused.sys_ms,
                            peak_rss_kb=max(outcome.peak_rss_kb or 0, refused.peak_rss_kb or 0))


def _want_base(request) -> None:
    """Ask the warm server for a base to patch (bench/incremental_base.py); a fault costs only that."""
    try:
        from linkwrap.record import base_queue
        base_queue.want(request.cwd, request.output)
    except Exception as e:
        faults.note("asking for an incremental base", e)


def _admitting(choice) -> bool:
    try:
        from linkwrap.evidence import predict
        return predict.admission_enabled(choice.settings, choice.facts)
    except Exception as e:
        faults.note("waiting for memory", e)
        return False


def _complete(facts, request, environ):
    """facts with probe.LATER learnt (a no-op on complete facts, whose jobserver is never None)."""
    if facts is None or facts.jobserver is not None:
        return facts
    from linkwrap.facts import probe
    return probe.complete(facts, request, environ)


def _predict(choice, request):
    """choice with its memory prediction; a fault predicting it is noted, and memory stays None."""
    if choice.memory is not None or any(doing == "predicting memory" for doing, _ in choice.faults):
        return choice  # predicted, or tried and failed (noted once)
    done = with_memory(choice, request)
    if done.memory is None and len(done.faults) > len(choice.faults):
        faults.note(*done.faults[-1])
    return done


def _leave(ticket, choice, decision, request, outcome, facts):
    """Out of the memory ledger (when a ticket holds a place there); the charge into the history."""
    linker = decision.linker.name if decision.linker else None
    input_bytes = facts.input_bytes if facts is not None else None
    if ticket is not None:
        from linkwrap.choice import admission
        return admission.leave(ticket, choice.memory, linker, request.output, outcome, input_bytes)
    # Admission off: the charge still goes into the history (predict's input), without admission.py.
    from linkwrap.evidence import predict
    charge_kb, how = predict.after(choice.memory, linker, request.output, outcome, input_bytes)
    return predict.Memory(choice.memory.kb, choice.memory.source, charge_kb, how, None, None, None, None)


def _learn(request, chosen, outcome, facts, first, learning, measured=None, refused=False) -> None:
    """This relink's time (or failure) into its output's evidence (and against its measurement); a
    fault costs only that. refused: linkwrap's own linker could not patch, the full linker linked."""
    try:
        from linkwrap.evidence import learn
        learn.note(request, chosen, outcome, getattr(facts, "cpus", None), first, learning, measured, refused)
    except Exception as e:
        faults.note("keeping what this relink taught", e)


def _saving(settings, environ) -> bool:
    from linkwrap.evidence.saved import saving
    return saving(settings, environ)


def _save(request, facts, outcome, settings, environ, kept=None) -> bool:
    """Keep the link replayable for `linkwrap bench`; a failure costs only the saved copy. kept:
    _keep_inputs()'s (saving by default, while the linker ran): only the manifest is left to write.
    -> whether it was saved."""
    asked = kept is None
    try:
        from linkwrap.record import save
        if kept is not None:
            save.save(request, outcome, facts, links_only=True, kept=kept)
            return True
        if save.wanted(request, facts, environ, settings):
            # Saving by default (nobody asked): hard links only, or nothing (record/save.py).
            asked = _asked(settings, environ)
            save.save(request, outcome, facts, links_only=not asked)
            return True
    except Exception as e:
        from linkwrap.record.save import SaveError
        if asked or not isinstance(e, SaveError):   # by default, a link not saved cheaply is simply not saved
            faults.note("saving the link for replay", e)
    return False


def _asked(settings, environ) -> bool:
    return environ.get("LINKWRAP_SAVE") == "1" or settings.sources.get("bench.save", "default") != "default"


def _keep_inputs(request, facts, settings, environ):
    """While the linker runs: saving by default's hard links of the inputs (save.keep_inputs()),
    so that after the link only its manifest is left, and that after the answer. -> save.Kept;
    False: not saved (not wanted, or not cheaply); None: saved after the link as before (asked for:
    it may copy, which would compete with the linker for the disk; or saving is off)."""
    try:
        if not _saving(settings, environ) or _asked(settings, environ):
            return None
        from linkwrap.record import save
        if not save.wanted(request, facts, environ, settings):
            return False
        return save.keep_inputs(request, links_only=True)
    except Exception as e:
        from linkwrap.record.save import SaveError
        if not isinstance(e, SaveError):   # by default, a link not saved cheaply is simply not saved
            faults.note("saving the link for replay", e)
        return False  # tried: not again after the link


def _drop(kept) -> None:
    from linkwrap.record import save
    save.drop(kept)


# LINKWRAP_CONFIG_ERRORS=warn: a configuration error is said once and links run as asked, for those
# who prefer a build that never stops for linkwrap.
CONFIG_ERRORS = "LINKWRAP_CONFIG_ERRORS"


def _config_failure(request, facts, decision, error, started_ns, inv) -> int:
    """Fail the link with one line naming the file and line, the fix and the ways round."""
    from linkwrap.errors import error_line
    message = error_line(f"{error} (fix it; LINKWRAP_DISABLE=1 links without linkwrap, "
                         f"{CONFIG_ERRORS}=warn links as asked)").encode("utf-8", "replace")
    try:
        os.write(2, message)
    except OSError:
        pass
    outcome = run.Outcome(1, 0.0, 0.0, 0.0, 0, b"", message, (), decision.write_mode, None, None, "driver")
    record.save(request, facts, decision, outcome, started_ns=started_ns, environ=inv.environ,
                caller_pid=inv.caller_pid, entry=inv.entry, reached_ns=inv.reached_ns)
    return 1


def _python_ld_without_fallback(decision, environ) -> bool:
    """LINKWRAP_LD_NO_FALLBACK=1 (for tests): linkwrap's own linker's failure is the link's result."""
    return environ.get("LINKWRAP_LD_NO_FALLBACK") == "1" and decision.linker is not None \
        and decision.linker.name == "python"


def _forced_missing(name, environ, inv) -> None:
    """LINKWRAP_LINKER names a linker that is not installed: the links choose as usual, which a
    successful link would never say. One line, once per build (as a configuration error's warning)."""
    from linkwrap.facts import build
    faults.warn_once(f"forced-{_crc(name + build.identify(environ, inv.caller_pid).key)}",
                     f"LINKWRAP_LINKER={name}, but {name} is not installed: this build links with "
                     "linkwrap's usual choice (said once per build; `linkwrap config` shows what is installed)")


def _forced_failed(chosen, first, request, environ, inv) -> None:
    """The linker LINKWRAP_LINKER asked for failed where the caller's own command passed: the build
    goes on with the link as asked, which a successful link would never say. Once per build."""
    from linkwrap.facts import build
    name = chosen.linker.name
    faults.warn_once(f"forced-failed-{_crc(name + build.identify(environ, inv.caller_pid).key)}",
                     f"LINKWRAP_LINKER={name}: {chosen.linker.label} failed (exit {first.returncode}) linking "
                     f"{request.output or 'a.out'}; linked as asked instead (said once per build; "
                     "`linkwrap summary` shows its error)")


def _crc(text: str) -> str:
    import binascii
    return f"{binascii.crc32(text.encode('utf-8', 'replace')):08x}"


def _label(decision) -> str:
    return decision.linker.label if decision.linker else "the link as asked"


def passthrough(argv, driver, environ):
    """Become the driver itself: the link exactly as asked, untouched."""
    driver = driver or environ.get("LINKWRAP_CC") or "cc"
    return invocation.Exec((driver, *argv), environ)
