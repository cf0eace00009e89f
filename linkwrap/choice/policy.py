"""POLICY: (request, probe, linkers, config) -> Decision. Pure: no I/O at all.

Input: the LinkRequest (output kind, the caller's -fuse-ld), the Probe (facts,
each possibly None = unknown), the linkers found ({name: LinkerInfo} with
version tuples) and the Config. Output: a Decision: which linker, which
flags (only flags the detected version accepts), whether the linker may
overwrite the output in place, whether linkwrap's own linker relinks it by
patching instead (incremental.py), and a short sentence per rule that fired.

Unknown facts count against in-place writes and against version-gated
flags. A fact the probe does not measure (the page-cache share of an output
under output_file.CACHE_PROBE_MIN_BYTES) counts the same, but its reason says "not
measured", never "unknown". docs/policy.md gives each rule, the fact it
rests on, and why.
"""
from linkwrap.records import record
from linkwrap.facts.probe import SMALL_INPUT_BYTES
from linkwrap.facts.linkers import FAST
from linkwrap.evidence.prior import BY_MACHINE_ORDER, BY_MEASUREMENT
from linkwrap.choice.write_mode import FRESH, IN_PLACE, size_text, write_mode
from linkwrap.choice.rules import MIN_MEASURED_RUNS, FUSE_LD, WILD_ARCHES, WILD_PLUGIN_SINCE, _at_least, _v, joined_args
from linkwrap.choice.flags import _callers_flags, _flags, _names
from linkwrap.choice import incremental as incremental_mod


class Decision(record("Decision", [
    "linker",        # LinkerInfo | None: None = link exactly as the caller asked
    "linker_flags",  # tuple[str]: flags for the linker itself (run passes them as -Wl,<flag>)
    "driver_flags",  # tuple[str]: extra flags for the cc driver
    "write_mode",    # IN_PLACE | FRESH
    "reasons",       # tuple[str]: short sentences, in the order the rules fired
    "incremental",   # bool: linkwrap's own linker relinks by patching (`linkwrap ld --incremental`)
    "instead",       # Decision | None: an incremental link that may only patch; where the state
                     # cannot be patched, this full linker's link runs instead (pipeline.py)
    "wants_base",    # bool: a base to patch from is worth building in the background from this
                     # link's saved inputs, once a full linker has linked it (bench/incremental_base.py)
], defaults=(False, None, False))):
    """What to run, how to write the output, and why."""
    __slots__ = ()

    @property
    def changes_anything(self) -> bool:
        return self.linker is not None or bool(self.linker_flags or self.driver_flags)


def as_asked(reason: str) -> Decision:
    """The link exactly as the caller asked for it (fail-open and LINKWRAP_DISABLE)."""
    return Decision(None, (), (), FRESH, (reason,))


def decide(request, probe, linkers, config, measured=None, callers_ld=None, learned=None, failed=frozenset(),
           reaps=False, prior=None, replayable=False, base=None) -> Decision:
    """The linker, its flags and the write mode for one link, with reasons.

    measured: linkwrap.evidence.measured.Measured, the replay results that apply to this link (None:
    nothing measured). callers_ld: the linker the caller's driver runs by default (a name of KNOWN),
    for links rustc did not force to rust-lld. learned: linkwrap.evidence.learn.Learned, this output's
    own relinks (None: learning is off). failed: the linkers that failed on this output where the
    link as asked then passed (learn.evidence's memory, kept whether or not learning is on).
    reaps: the process that runs the link waits for a forking linker's worker after it has
    answered the build (the server's child, a child subreaper); else it cannot, and mold and wild
    get --no-fork. prior: linkwrap.evidence.prior.Prior, other projects' like links measured here
    (None: no prior, the static order); replayable: this output's link is saved, so a replay can
    measure it and its real links are never tries (docs/policy.md 1.4). base: a base to patch from
    is ready beside the output (ld/incremental/where.ready; None: not looked at).
    """
    reasons = []
    info = choose_linker(request, linkers, config, reasons, probe, measured, callers_ld, learned, failed,
                         prior, replayable)
    if info is None:
        return Decision(None, (), (), FRESH, tuple(reasons))
    # The full linker chosen, whether linkwrap's own linker patches the output instead (incremental.py).
    failed_here = frozenset(failed) | (learned.failed if learned is not None else frozenset())
    verdict = incremental_mod.choose(request, linkers, config, learned, failed_here, info, base, replayable,
                                     measured)
    if verdict.why:
        reasons.append(verdict.why)
    instead = None
    if verdict.patch_only:
        # What runs where the patch cannot be made: this very decision but for the incremental rule.
        instead = _full(request, probe, linkers, info, config, [r for r in reasons if r is not verdict.why],
                        reaps)._replace(wants_base=verdict.wants_base)
    if verdict.chosen:
        info = linkers["python"]
    decision = _full(request, probe, linkers, info, config, reasons, reaps)
    return decision._replace(incremental=verdict.chosen, instead=instead,
                             wants_base=verdict.wants_base and not verdict.chosen)


def _full(request, probe, linkers, info, config, reasons, reaps) -> Decision:
    """The Decision for linker info: its flags for this machine, its write mode, and why."""
    extra = tuple(config.extra_flags.get(info.name, ())) if config is not None else ()
    flags = _flags(info, probe, reasons, _callers_flags(request), reaps, _names(extra))
    mode = write_mode(request, probe, info, config, reasons)
    driver_flags = ()
    if info.name == "wild":
        # FRESH needs no --no-update-in-place: output.py hands wild a new name in a private
        # directory, and for a device or FIFO written directly that flag would replace the node.
        if mode == IN_PLACE:
            reasons.append("wild writes in place only with more than one thread "
                           "(its single-thread path always unlinks)")
        driver_flags = _wild_driver_flags(info, request, reasons)
    if extra:
        where = config.sources.get(f"linkers.{info.name}.extra_flags", "configuration")
        flags.extend(extra)
        reasons.append(f"extra flags for {info.name} from {where}: {' '.join(extra)}")
    return Decision(info, tuple(flags), driver_flags, mode, tuple(reasons))


# --- which linker ----------------------------------------------------------


def choose_linker(request, linkers, config, reasons, probe=None, measured=None, callers_ld=None, learned=None,
                  failed=frozenset(), prior=None, replayable=False):
    """LINKWRAP_LINKER, else the caller's own -fuse-ld=, else a configured `prefer`, else the
    fastest measured here, else what this output's relinks taught, else the prior (other projects'
    like links measured here, else the machine default order), else the static order (the
    caller's own default first)."""
    # config.load refuses a LINKWRAP_LINKER that names no known linker.
    forced = config.forced if config is not None else None
    if forced:
        if forced in linkers:
            info = linkers[forced]
            reasons.append(f"LINKWRAP_LINKER={forced}: {info.label}")
            return info
        else:
            reasons.append(f"LINKWRAP_LINKER={forced}, but {forced} is not installed; choosing as usual")
    if request.own_linker:
        reasons.append(f"the command line names its own linker ({request.own_linker}): linking as asked")
        return None
    forbid = config.forbid if config is not None else frozenset()
    asked = _callers_choice(request)
    if asked:
        if asked in forbid:
            reasons.append(f"the command line asks for -fuse-ld={request.fuse_ld}, "
                           f"but {asked} is forbidden by configuration")
        elif asked in linkers:
            info = linkers[asked]
            reasons.append(f"the command line asks for -fuse-ld={request.fuse_ld}: {info.label}")
            return info
        else:
            reasons.append(f"the command line asks for -fuse-ld={request.fuse_ld}, "
                           f"but {asked} is not installed")
    if config is None:
        from linkwrap.request.config import DEFAULT_PREFER as prefer
    else:
        prefer = tuple(config.prefer)
    if not prefer:
        where = config.sources.get("prefer", "configuration")
        reasons.append(f"prefer = [] in {where}: no linker to choose; linking as asked")
        return None
    default = None
    # A linker that failed on this output where the link as asked then passed is never chosen for
    # it again (docs/policy.md 1.2): measured, learnt, configured and static choice alike.
    failed = frozenset(failed) | (learned.failed if learned is not None else frozenset())
    options = linker_options(request)
    if config is None or config.sources.get("prefer", "default") == "default":
        default = callers_default(request, callers_ld)
        prefer = static_order(prefer, default)
        # A measurement or a lesson never overrides what makes a linker unfit for this link (wild
        # on an LTO link or a device node): those are passed over as if forbidden.
        unfit = frozenset(n for n in prefer if n in linkers and unsuitable(linkers[n], request, probe, options))
        pick = measured_pick(prefer, linkers, forbid | unfit | failed, measured)
        if measured is not None and measured.ignored:
            reasons.append(f"measurements ignored: {'; '.join(measured.ignored[:3])}"
                           + (f" (and {len(measured.ignored) - 3} more)" if len(measured.ignored) > 3 else ""))
        if pick is not None:
            reasons.append(measured_reason(pick, linkers, measured))
            return linkers[pick[0].linker]
        # Not measured: the prior orders what the rules allow (never a linker they pass over).
        base = default[0] if default is not None else (callers_ld or "bfd")
        prefer, by_prior = prior_order(prefer, linkers, forbid | unfit | failed, prior, base,
                                       default is not None)
        if by_prior is not None and by_prior[0] is None:
            reasons.append(by_prior[1])   # what was looked at, and why it does not move the order
            by_prior = None
        if default is None and probe is not None and getattr(probe, "small_inputs", None):
            # A small link whose caller's own linker is GNU ld: there mold and lld are no faster than
            # it alone and slower beside the build's other links, so they go right after it (where
            # GNU ld may be chosen); nor is such a link learnt from (its relinks would pay tens of ms
            # of exploration to save a few, and GNU ld is no candidate there).
            slower = [n for n in prefer if n in SLOWER_WHEN_SMALL]
            if "bfd" in prefer and "bfd" in linkers and "bfd" not in forbid | failed and \
                    any(n in linkers for n in slower):
                rest = [n for n in prefer if n not in SLOWER_WHEN_SMALL]
                at = rest.index("bfd") + 1
                prefer = tuple(rest[:at] + slower + rest[at:])
                reasons.append(f"a small link (a C link of under {SMALL_INPUT_BYTES >> 10} KiB, no library but libc's): "
                               f"{' and '.join(n for n in slower if n in linkers)} after GNU ld, which links it "
                               "as fast alone and faster beside other links (docs/policy.md 1.3)")
        else:
            if replayable and learned is not None:
                reasons.append("this output's link is saved: a replay measures its candidates, so its "
                               "real links are no tries (docs/policy.md 1.4)")
            taught = learned_pick(prefer, linkers, forbid | unfit, learned, explore=not replayable)
            if taught is not None:
                reasons.append(taught[1])
                return linkers[taught[0]]
    else:
        by_prior = None
    order = ", ".join(prefer)
    skipped = []
    for name in prefer:
        if name not in linkers:
            continue
        if name in forbid:
            skipped.append(name)
            continue
        info = linkers[name]
        if name in failed:
            reasons.append(f"{info.label} passed over: it failed on this output before, "
                           "where the link as asked passed")
            continue
        unfit = unsuitable(info, request, probe, options)
        if unfit:
            reasons.append(f"{info.label} passed over: {unfit}")
            continue
        note = f" ({', '.join(skipped)} forbidden)" if skipped else ""
        if by_prior is not None and name == by_prior[0]:
            reasons.append(by_prior[1] + note)
        elif default is not None and name == prefer[0]:
            reasons.append(f"{info.label}: {default[1]}, first of {order} while nothing is measured{note}")
        else:
            reasons.append(f"{info.label}: first installed of {order}{note}")
        return info
    reasons.append(f"none of {order} is installed and allowed; linking as asked")
    return None


# ...but not on a small C link (probe.small_inputs): there these were no faster than GNU ld alone
# (mold 1.02-1.07x, its CIs reaching 1; lld 1.4-1.6x) and slower eight at a time on 2 CPUs (mold
# 1.06-1.28x, lld 1.4-1.65x), while wild took 0.5-0.55x (benchmarks/bench_small.py, docs/policy.md 1.3).
SLOWER_WHEN_SMALL = ("mold", "lld", "rust-lld")




def learns(request, probe, callers_ld) -> bool:
    """Whether this link's relinks teach its choice (decide() consults its evidence): not a small C
    link whose caller's own linker is no fast one, where the order is fixed (docs/policy.md 1.3)."""
    return callers_default(request, callers_ld) is not None or not getattr(probe, "small_inputs", None)


def callers_default(request, callers_ld):
    """(name, why) of the linker the caller would get without linkwrap, when it is a fast one."""
    from linkwrap.request.args import rustc_forces_lld
    if rustc_forces_lld(request):
        return ("rust-lld", "rustc's own default")
    if callers_ld in FAST:
        return (callers_ld, "the driver's own ld")
    return None


def static_order(prefer, default) -> tuple:
    """`prefer` with the caller's fast default moved first; GNU ld and gold stay last."""
    if default is None or default[0] not in prefer:
        return tuple(prefer)
    return (default[0],) + tuple(n for n in prefer if n != default[0])


def measured_pick(order, linkers, forbid, measured):
    """(chosen row, fastest row, rows compared, the row the paired ratios decided against or
    None) from the measurements, or None.

    Only fresh writes compete (what every link may do; in place depends on the output's facts), and
    only candidates timed at least MIN_MEASURED_RUNS times.
    The first of the static order stays while its 95 % confidence interval reaches the fastest
    one's (a difference the measurement cannot tell from noise is no reason to move); otherwise the
    fastest wins, never a slower candidate for merely overlapping it. Where `linkwrap bench` paired
    the candidates with that first one round by round (Row.vs, Row.ratio_*), the paired interval
    decides instead: a candidate wins only when its interval of the per-round ratio lies entirely
    below 1 (the lowest median of those wins).
    """
    if measured is None or not measured.rows:
        return None
    rows = [r for r in measured.rows if r.variant == "fresh" and not r.failed and r.runs >= MIN_MEASURED_RUNS
            and r.linker in linkers and r.linker not in forbid and r.linker in order]
    if len(rows) < 2:
        return None   # nothing to compare with: a lone result says nothing about the others
    fastest = min(rows, key=lambda r: r.median_ms)
    # The static order's first measured candidate (the caller's own default when it was measured)
    # stays while its interval reaches the fastest one's; any other candidate must be the fastest:
    # a slower one is never chosen for merely overlapping.
    first = min(rows, key=lambda r: order.index(r.linker))
    paired = [r for r in rows if r is not first and getattr(r, "vs", None) == first.linker
              and r.ratio_high is not None]
    if paired:
        # Paired with `first` round by round: a candidate wins only when its whole interval of
        # the per-round ratio is below 1; one measured apart must be clear of `first` outright.
        better = [r for r in paired if r.ratio_high < 1] + \
                 [r for r in rows if r is not first and r not in paired and r.ci_high_ms < first.ci_low_ms]
        chosen = min(better, key=lambda r: r.median_ms) if better else first
    else:
        chosen = first if first.ci_low_ms <= fastest.ci_high_ms else fastest
    return chosen, fastest, tuple(sorted(rows, key=lambda r: r.median_ms)), first if paired else None


def measured_reason(pick, linkers, measured) -> str:
    chosen, fastest, rows, base = pick
    half = (chosen.ci_high_ms - chosen.ci_low_ms) / 2
    pct = 100 * half / chosen.median_ms if chosen.median_ms else 0.0
    others = ", ".join(f"{r.label} {r.median_ms:.0f} ms" for r in rows if r is not chosen)
    vs = f" vs {others}" if others else ""
    fs = f" on {chosen.fs}" if chosen.fs else ""
    if base is not None and chosen is not base and chosen.vs == base.linker and chosen.ratio_high is not None:
        what = (f"measured {chosen.ratio:.2f}x the time of {base.label} "
                f"here, paired by round (95 % CI {chosen.ratio_low:.2f}-{chosen.ratio_high:.2f})")
    elif base is not None and chosen is base:
        near = ", ".join(f"{r.label} {r.ratio:.2f}x ({r.ratio_low:.2f}-{r.ratio_high:.2f})"
                         for r in rows if r.vs == base.linker and r.ratio_high is not None)
        what = f"measured here, and no paired ratio to it is entirely below 1 ({near}): first in the static order"
    elif chosen is fastest:
        what = "measured fastest here"
    else:
        what = f"measured within the confidence interval of {fastest.label} and first in the static order here"
    return (f"{linkers[chosen.linker].label}: {what} for {measured.scope}{fs} "
            f"({chosen.median_ms:.0f} ms ±{pct:.1f} %{vs}; {chosen.runs} rounds, {chosen.date})")


# With nothing measured on this machine for links like this one, these go before the caller's own
# default (where the rules allow them): wild took 0.59-0.68x rust-lld's time on a real 130 MB Rust
# link here, 0.59-0.65x on a generated 150 MB one and 0.5-0.55x GNU ld's on small C links, where mold
# took 1.09-1.16x and lld-16 1.06x rust-lld's on the real one (docs/policy.md 1.4).
MACHINE_ORDER = ("wild",)


def prior_order(order, linkers, excluded, prior, base, fast_default=True):
    """(order, (first, reason) or None): the order with the prior's choice first.

    A prior from other projects: the candidate whose paired ratio to base (the caller's default) had
    its whole 95 % interval below 1 on every like link measured, the lowest median ratio winning
    (first None, with a reason, when like links were measured and none was clearly faster: the order
    stays). None of them: MACHINE_ORDER first where the caller's default is a fast linker
    (fast_default: rustc's rust-lld, a driver whose ld is mold or lld). excluded: what the rules pass
    over for this link."""
    if prior is None:
        return order, None
    allowed = [n for n in order if n in linkers and n not in excluded]
    by = {}
    for r in prior.rows:
        if r.vs == base and r.linker in allowed and r.linker != base and r.ratio is not None:
            by.setdefault(r.linker, []).append(r)
    if by:
        clear = {n: rs for n, rs in by.items() if all(r.ratio_high is not None and r.ratio_high < 1 for r in rs)}
        if not clear:
            seen = ", ".join(f"{rs[0].label} {rs[0].ratio:.2f}x ({rs[0].project})" for rs in by.values())
            return order, (None, f"{BY_MEASUREMENT}{prior.scope}: none clearly faster than {base} ({seen})")
        name = min(clear, key=lambda n: (_median([r.ratio for r in clear[n]]), order.index(n)))
        src = clear[name][0]   # the closest in size
        more = f", and {len(clear[name]) - 1} more like links" if len(clear[name]) > 1 else ""
        why = (f"{linkers[name].label}: {BY_MEASUREMENT}{prior.scope}: {src.label} measured {src.ratio:.2f}x the time "
               f"of {base} (95 % CI {src.ratio_low:.2f}-{src.ratio_high:.2f}) on {src.project} {src.output} "
               f"({size_text(src.input_bytes)} of inputs, this link {size_text(prior.input_bytes)}; "
               f"{src.date}{more}); this output is not measured yet")
        return (name,) + tuple(n for n in order if n != name), (name, why)
    first = next((n for n in MACHINE_ORDER if n in allowed), None)
    if first is None or not fast_default:
        # Behind a slow default (GNU ld) the static order already starts with mold, which the figures
        # put well ahead of it; the machine order is for the fast default the static order keeps first.
        return order, None
    if first == order[0]:
        return order, None
    why = (f"{linkers[first].label}: {BY_MACHINE_ORDER} ({', '.join(MACHINE_ORDER)} before "
           f"{base}) while nothing like this link is measured here (docs/policy.md 1.4)")
    return (first,) + tuple(n for n in order if n != first), (first, why)


def _median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def learned_pick(order, linkers, forbid, learned, explore=True):
    """(name, reason) from this output's own relinks, or None (the static order decides).
    explore=False (the output is saved: a replay measures it): no tries, only what was judged.

    Exploration is bounded: while a fast candidate has fewer than learn.NEED timed relinks it is
    tried on at most every other link (never two tries in a row); once all are judged the fastest
    median keeps the output, and one link in learn.EXPLORE_EVERY re-tries the runner-up. A
    candidate that failed on this output is never tried again.
    """
    from linkwrap.evidence.learn import EXPLORE_EVERY, EXPLORING, NEED
    if learned is None:
        return None
    cands = [n for n in order if n in FAST and n in linkers and n not in forbid and n not in learned.failed]
    if len(cands) < 2:
        return None
    stats = learned.stats
    judged = {n: stats[n][1] for n in cands if stats.get(n, (0, 0))[0] >= NEED}
    untried = [n for n in cands if n not in judged]
    summary = ", ".join(f"{linkers[n].label} {stats[n][1]:.0f} ms ({stats[n][0]} timed)"
                        for n in sorted(stats, key=lambda n: stats[n][1]) if n in linkers)
    summary = summary or "nothing timed yet"
    if untried:
        exploit = min(judged, key=judged.get) if judged else cands[0]
        tries = [n for n in untried if n != exploit]
        # The first link of an output takes the usual choice; tries start with the second.
        if explore and tries and not learned.last_explored and stats.get(exploit, (0, 0))[0] >= 1:
            n = tries[0]
            return n, (f"{linkers[n].label}{EXPLORING} on this output ({stats.get(n, (0,))[0]} of {NEED} "
                       f"relinks timed; so far {summary}; never two tries in a row)")
        if judged:
            return exploit, f"{linkers[exploit].label}: fastest of this output's relinks so far ({summary})"
        return None
    ranked = sorted(cands, key=judged.get)
    if explore and learned.links % EXPLORE_EVERY == EXPLORE_EVERY - 1 and not learned.last_explored:
        n = ranked[1]
        return n, (f"{linkers[n].label}{EXPLORING} again on this output (one link in {EXPLORE_EVERY} "
                   f"re-checks the runner-up; {summary})")
    return ranked[0], f"{linkers[ranked[0]].label}: learnt fastest from this output's relinks ({summary})"


def _callers_choice(request):
    """The linker the caller itself asked for with -fuse-ld=, not rustc's injected default.

    rustc >= 1.90 adds `-fuse-ld=lld -B…/gcc-ld` to every link (args.py takes
    them out and sets rust_lld): that is rustc's default, not a choice. A -fuse-ld= after
    them (`-C link-arg=-fuse-ld=bfd`) is the caller's, and wins as it does in gcc.
    """
    from linkwrap.request.args import rustc_forces_lld
    fuse = request.fuse_ld
    if not fuse or rustc_forces_lld(request):
        return None
    return FUSE_LD.get(fuse)


def unsuitable(info, request, probe, options=None):
    """Why the preference order must skip this linker for this link, or None.

    Only the preference order asks: LINKWRAP_LINKER and the caller's -fuse-ld= are choices
    that stand (a failed link is then retried as asked).
    """
    for option in sorted(linker_options(request) if options is None else options):
        seen = REFUSES.get(option, {}).get(info.name) or WARNS.get(option, {}).get(info.name)
        if seen and (info.version is None or tuple(info.version) <= seen):
            does = "rejects" if option in REFUSES else "warns about"
            shown = "-static-pie (gcc passes -z text)" if option == "-z text" and "-static-pie" in request.args \
                else f"-Wl,{option.replace(' ', ',')}"
            return f"it {does} {shown} (seen with {_v(seen)})"
    if info.name != "wild":
        return None
    # Checked with 0.8.0 (through gcc): "unrecognized option(s): -r", "-m elf_i386 is not yet supported".
    if getattr(request, "kind", None) == "relocatable":
        return "wild does not do partial links (-r)"
    args = getattr(request, "args", ()) or ()
    target = getattr(request, "target", None)
    if "-m32" in args or "-mx32" in args or (target and not target.startswith(WILD_ARCHES)):
        return f"wild links {' and '.join(WILD_ARCHES)} programs only"
    if needs_linker_plugin(request) and not _at_least(info.version, WILD_PLUGIN_SINCE):
        return f"gcc's LTO needs the linker plugin, which wild has only from {_v(WILD_PLUGIN_SINCE)}"
    out = getattr(probe, "output", None)
    if out is not None and out.exists and out.is_regular is False:
        # Checked with 0.8.0: it adds exec bits to a device node, and its single-thread path
        # (1 CPU, or 1 jobserver token) replaces the node with a regular file -- /dev/null, as root.
        return "the output is not a regular file, which wild may chmod or replace"
    return None


# Linker options a linker refuses (REFUSES) or accepts with a warning on a successful link (WARNS),
# with the newest version seen doing so, through gcc, on this machine kind (tests/choice/
# test_policy_options.py holds every row to the installed linkers). Up to that version the linker is
# passed over for a link that has the option: it would fail, and the link be done twice, or print
# where a successful link must print nothing. A newer version is tried: should it still fail, the
# output's failure memory keeps it off that output (docs/policy.md 1.2).
_MOLD, _LLD, _RUST_LLD, _WILD = (1, 10, 1), (16, 0, 6), (22, 1, 2), (0, 8, 0)


REFUSES = {
    "--no-warn-rwx-segments": {"mold": _MOLD, "lld": _LLD, "rust-lld": _RUST_LLD, "wild": _WILD},
    "--warn-rwx-segments": {"mold": _MOLD, "lld": _LLD, "rust-lld": _RUST_LLD, "wild": _WILD},
    "--no-warn-execstack": {"lld": _LLD, "rust-lld": _RUST_LLD, "wild": _WILD},
    "--cref": {"mold": _MOLD, "wild": _WILD},
    "--print-memory-usage": {"mold": _MOLD, "lld": _LLD, "wild": _WILD},
    "--Map": {"wild": _WILD},
    "--sort-section": {"wild": _WILD},
    "--warn-common": {"wild": _WILD},
}


WARNS = {
    "-z text": {"wild": _WILD},            # "WARNING: wild: -z text is not yet supported"
    "-z separate-code": {"wild": _WILD},
}


_LISTED = frozenset(REFUSES).union(WARNS)


def linker_options(request) -> frozenset:
    """The caller's linker options that REFUSES or WARNS name, as they name them: without their
    values, a long option with one dash as with two, `-z x` as one; -static-pie, whose link gcc
    gives -z text."""
    # A rustc link has thousands of arguments and a few -Wl,: one join and str.find (C speed) reach
    # them without a Python step per argument. NUL cannot occur inside an argument.
    joined = joined_args(request.args)
    if "\0-Xlinker\0" in joined:   # its value is the next argument: the rare case, the plain way
        from linkwrap.request.args import linker_flags
        flags = linker_flags(request.args)
    else:
        flags = []
        i = joined.find("\0-Wl,")
        while i >= 0:
            end = joined.index("\0", i + 1)
            flags.extend(joined[i + 5:end].split(","))
            i = joined.find("\0-Wl,", end)
    out = set()
    for i, f in enumerate(flags):
        if f == "-z" and i + 1 < len(flags):
            out.add("-z " + flags[i + 1])
        elif f.startswith("-z") and len(f) > 2 and f[2] != "=":
            out.add("-z " + f[2:])
        elif f[:1] == "-":
            name = f.split("=", 1)[0]
            out.add(name if name[:2] == "--" else "-" + name)
    if "\0-static-pie\0" in joined:
        out.add("-z text")
    return _LISTED.intersection(out)


def needs_linker_plugin(request) -> bool:
    """-flto (not undone by a later -fno-lto) or -fuse-linker-plugin on the command line."""
    lto = plugin = False
    for a in request.args:
        if a == "-flto" or a.startswith("-flto="):
            lto = True
        elif a == "-fno-lto":
            lto = False
        elif a == "-fuse-linker-plugin":
            plugin = True
    return lto or plugin


def _wild_driver_flags(info, request, reasons) -> tuple:
    """-fno-use-linker-plugin for wild < 0.9, so that gcc does not hand it a plugin it
    can only warn about (on stdout: a build log line per link, a warning under rustc >= 1.97)."""
    if _at_least(info.version, WILD_PLUGIN_SINCE):
        return ()
    if needs_linker_plugin(request):
        reasons.append(f"{info.label} cannot link GCC LTO objects: a failed link is retried as asked")
        return ()
    reasons.append(f"-fno-use-linker-plugin: {info.label} cannot use gcc's LTO plugin "
                   "and would warn about it at every link")
    return ("-fno-use-linker-plugin",)
