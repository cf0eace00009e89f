"""REPLAY: a saved link run on every candidate linker and variant, timed in interleaved rounds.

Each candidate is the link as the policy would run it with that linker forced (its flags for
this machine and filesystem), plus the variants the policy could also choose: in place for
mold and wild >= 0.8 (the old output left where the linker can reuse it), and for wild on btrfs
without --mmap-output-file. Outputs are written beside the real output, on its filesystem.

One warm-up round (page cache, the linkers' own binaries), then rounds in which every
candidate runs once, the order rotated each round so that no candidate always follows the same
one, until the 95 % confidence interval of every median is within +-3 % of it or the time
budget runs out (but never before MIN_TIMED_ROUNDS rounds). A candidate more than SLOW_FACTOR
times the fastest (and over SLOW_MIN_MS) in the warm-up round is shown with that one figure
(runs = 1) and not timed further. A candidate that fails (non-zero exit, no output, not an ELF
file of the same type as the original) is listed with its first error line and not timed further.
The confidence interval of the median is the distribution-free one from order statistics
(ranks n/2 -+ 1.96 sqrt(n)/2): link times here are skewed by a busy machine, not normal.

Each candidate is also compared with the caller's own default (`base`) round by round: the ratio
of its time to the default's in the same round, whose median and order-statistics interval are
`ratio`, `ratio_low`, `ratio_high`. Both runs of a round share the machine's state (its load,
the page cache), so the per-round ratio cancels what moves both, and its interval is far tighter
than one built from two independent medians: what tells 1.03x from 1.00x on a busy machine.
"""
import math
import os
import shutil
import time

from linkwrap.records import record

TARGET_CI = 0.03
MIN_ROUNDS = 5
MIN_TIMED_ROUNDS = 3   # policy.MIN_MEASURED_RUNS: fewer and the results could not count
SLOW_FACTOR = 4   # a candidate this many times the fastest in the warm-up is not timed further…
SLOW_MIN_MS = 1000  # …when its warm-up took longer than this

Candidate = record("Candidate", "name label info variant argv out")
Result = record("Result", [
    "linker", "label", "variant", "median_ms", "ci_low_ms", "ci_high_ms", "min_ms", "max_ms",
    "peak_rss_kb", "runs", "failed", "path",
    "vs",          # the base linker the ratios are to (the caller's default), or None
    "ratio",       # median of this candidate's time / the base's time in the same round
    "ratio_low",   # 95 % interval of that median (order statistics)
    "ratio_high",
    "times_ms",    # the timed runs by round (None: no run that round), warm-up excluded
    # The bench's own peak RSS as its runs started (run.spawn): a peak_rss_kb at or below it is the
    # linker's at most, the bench's own size being folded into the figure at the linker's exec.
    "spawner_rss_kb",
], defaults=(None,))


def median_ci(samples):
    """(median, low, high): the median and its 95 % confidence interval (order statistics)."""
    s = sorted(samples)
    n = len(s)
    if not n:
        return None, None, None
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    h = 1.96 * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - h) - 1)
    hi = min(n - 1, math.ceil(n / 2 + h))
    return med, s[lo], s[hi]


def callers_default(manifest, found) -> str | None:
    """The linker the caller's own command runs: rust-lld when rustc forced it, else the driver's ld."""
    if manifest.get("rust_lld"):
        return "rust-lld"
    from linkwrap.choice.choose import driver_ld
    from linkwrap.request.args import LinkRequest
    req = LinkRequest(**dict.fromkeys(LinkRequest._fields))   # driver_ld reads rust_lld alone
    return driver_ld(req, found, os.environ) or ("bfd" if "bfd" in found else None)


def request_for(manifest, args, out):
    from linkwrap.request import args as args_mod
    full = args_mod.with_output(args, out)
    fields = dict.fromkeys(args_mod.LinkRequest._fields)   # fields added later stay unset (None)
    fields.update(argv=tuple(full), args=tuple(full), driver=manifest["driver"], output=out,
                  kind=manifest["kind"], inputs=tuple(args_mod._inputs(full)), fuse_ld=None,
                  rust_lld=manifest.get("rust_lld"), removed=(), used_response_file=False,
                  cwd=manifest["cwd"] if os.path.isdir(manifest["cwd"]) else "/", target=manifest.get("target"))
    return args_mod.LinkRequest(**fields)


def candidates(manifest, args, found, work, only=None) -> list:
    """Every installed linker (or those in `only`) and the variants the policy could choose."""
    from linkwrap.request import config
    from linkwrap.choice import policy
    from linkwrap.choice import rules
    from linkwrap.facts import probe
    from linkwrap.run import run
    out = os.path.join(work, "probe-out")
    facts = probe.snapshot(request_for(manifest, args, out))
    cands = []
    for name, info in found.items():
        if only and name not in only:
            continue
        req = request_for(manifest, args, os.path.join(work, f"{name}-fresh"))
        d = policy.decide(req, facts, {name: info}, config.merge([], {"LINKWRAP_LINKER": name}))
        variants = [("fresh", d)]
        if name in rules.IN_PLACE_SINCE and info.version and tuple(info.version) >= rules.IN_PLACE_SINCE[name]:
            flags = tuple(f for f in d.linker_flags if f != "--no-update-in-place")
            variants.append(("in-place", d._replace(linker_flags=flags, write_mode=policy.IN_PLACE)))
        if "--mmap-output-file" in d.linker_flags:
            flags = tuple(f for f in d.linker_flags if f != "--mmap-output-file")
            variants.append(("no-mmap", d._replace(linker_flags=flags)))
        for variant, dec in variants:
            o = os.path.join(work, f"{name}-{variant}")
            argv = run.command(request_for(manifest, args, o), dec, o)
            cands.append(Candidate(name, info.label, info, variant, tuple(argv), o))
    return cands, facts


def elf_type(path):
    try:
        with open(path, "rb") as f:
            head = f.read(18)
    except OSError:
        return None
    return int.from_bytes(head[16:18], "little") if head[:4] == b"\x7fELF" and len(head) == 18 else None


def run_once(cand, manifest, env, spawner=None):
    """(wall_ms, peak_rss_kb, None) or (None, None, first error line). spawner: a dict, given the
    bench's own peak at the run's start under cand (the highest)."""
    from linkwrap.record import record
    from linkwrap.run import run
    if cand.variant != "in-place":
        try:
            os.unlink(cand.out)
        except FileNotFoundError:
            pass
    code, wall_ms, _, _, rss, _, err, own_kb = run.spawn(list(cand.argv), env)
    if spawner is not None and own_kb:
        spawner[cand] = max(spawner.get(cand, 0), own_kb)
    if code != 0:
        return None, None, record.first_error(err) or f"exit status {code}"
    got = elf_type(cand.out)
    if got is None:
        return None, None, "the output is not an ELF file"
    if manifest.get("e_type") is not None and got != manifest["e_type"]:
        return None, None, f"the output is ELF type {got}, the original {manifest['e_type']}"
    return wall_ms, rss, None


def paired(times, base_times):
    """(median, low, high) of the per-round ratios times[i] / base_times[i] over the rounds in which
    both ran, or (None, None, None) with fewer than MIN_TIMED_ROUNDS such rounds."""
    ratios = [t / b for t, b in zip(times, base_times) if t is not None and b]
    if len(ratios) < MIN_TIMED_ROUNDS:
        return None, None, None
    return median_ci(ratios)


def bench(manifest, args, found, *, budget_s=60.0, only=None, max_rounds=1000, progress=None, base=None,
          resume=None, checkpoint=None) -> tuple:
    """-> (results sorted fastest first, failed last; facts of the output filesystem; rounds).

    base: the linker whose fresh write the others are paired with round by round (the caller's
    own default), or None. checkpoint(snapshot), when given, is called after the warm-up and after
    every round with what a later bench(resume=snapshot) continues from (a measurement cut short
    is resumed, not restarted: bench/background.py); it returns False to stop the rounds there.
    A resumed bench runs its warm-up round again (the page cache may be another's by now), but
    neither counts it nor judges the candidates by it: they were judged the first time."""
    from linkwrap.run import run
    where = os.path.dirname(manifest["output"])
    if not os.path.isdir(where):
        from linkwrap.record.save import saved_dir
        where = saved_dir()
    work = os.path.join(where, f".linkwrap-bench-{os.getpid()}")
    os.mkdir(work, 0o700)
    try:
        cands, facts = candidates(manifest, args, found, work, only)
        env = run.linker_environment(os.environ)
        failed, times, rss, spawner = {}, {c: [] for c in cands}, {c: 0 for c in cands}, {}
        by_round = {c: [] for c in cands}   # the timed runs in round order, None where none
        warm, slow = {}, set()
        rounds, spent = (_restore(resume, cands, times, by_round, rss, failed, slow) if resume else (0, 0.0))
        for c in cands:   # warm-up round, not counted; it also finds the candidates that fail
            if c in failed or c in slow:
                continue
            wall, peak, err = run_once(c, manifest, env, spawner)
            if err:
                failed[c] = err
            elif not resume:
                warm[c] = (wall, peak)
        # One far slower than the fastest (GNU ld, linkwrap's own linker) cannot win: its warm-up
        # figure is shown and the budget goes to the candidates that can.
        best = min((w for w, _ in warm.values()), default=None)
        for c, (wall, peak) in warm.items():
            # Only slow in absolute terms too: one warm-up of a short link on a busy machine can be
            # 4x the fastest by chance, and such links cost the budget little anyway.
            if wall > SLOW_FACTOR * best and wall > SLOW_MIN_MS:
                times[c], rss[c] = [wall], peak
                slow.add(c)
        alive = [c for c in cands if c not in failed and c not in slow]
        started = time.monotonic() - spent
        going = checkpoint is None or checkpoint(_snapshot(cands, times, by_round, rss, failed, slow, rounds,
                                                           time.monotonic() - started))
        while going and alive and rounds < max_rounds:
            turn = alive[rounds % len(alive):] + alive[:rounds % len(alive)]
            for c in cands:
                by_round[c].append(None)
            for c in turn:
                if c in failed:   # rounds are never cut short: every candidate gets as many runs
                    continue
                wall, peak, err = run_once(c, manifest, env, spawner)
                if err:
                    failed[c] = err
                    continue
                times[c].append(wall)
                by_round[c][rounds] = wall
                rss[c] = max(rss[c], peak)
            alive = [c for c in alive if c not in failed]
            rounds += 1
            spread = worst_spread(times, alive)
            if progress:
                progress(rounds, time.monotonic() - started, spread)
            if checkpoint is not None and not checkpoint(_snapshot(cands, times, by_round, rss, failed, slow,
                                                                   rounds, time.monotonic() - started)):
                break
            if rounds >= MIN_ROUNDS and spread <= TARGET_CI:
                break
            # The budget ends the rounds, but never before the fewest a choice may rest on.
            if time.monotonic() - started >= budget_s and rounds >= MIN_TIMED_ROUNDS:
                break
        results = []
        ref = next((c for c in cands if c.name == base and c.variant == "fresh" and c not in failed), None)
        for c in cands:
            med, lo, hi = median_ci(times[c]) if c not in failed else (None, None, None)
            ratio = (None, None, None)
            if ref is not None and c is not ref and c not in failed:
                ratio = paired(by_round[c], by_round[ref])
            results.append(Result(c.name, c.label, c.variant, med, lo, hi,
                                  min(times[c]) if times[c] and c not in failed else None,
                                  max(times[c]) if times[c] and c not in failed else None,
                                  rss[c] or None, len(times[c]) if c not in failed else 0,
                                  failed.get(c), c.info.path,
                                  ref.name if ref is not None and ratio[0] is not None else None, *ratio,
                                  tuple(by_round[c]) if c not in failed else (), spawner.get(c)))
        results.sort(key=lambda r: (r.failed is not None, r.median_ms or 0))
        return results, facts, rounds
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _snapshot(cands, times, by_round, rss, failed, slow, rounds, elapsed_s) -> dict:
    """What a resumed bench continues from: plain values (marshal), by (linker, variant, binary)."""
    return {"rounds": rounds, "elapsed_s": elapsed_s,
            "cands": {(c.name, c.variant, c.info.path): {"times": list(times[c]), "by_round": list(by_round[c]),
                                                         "rss": rss[c], "failed": failed.get(c), "slow": c in slow}
                      for c in cands}}


def _restore(snapshot, cands, times, by_round, rss, failed, slow) -> tuple:
    """A snapshot's runs back into a new bench's tables. -> (rounds, seconds spent). A candidate the
    snapshot does not know (a linker installed since) starts with no runs: it is timed from here."""
    rounds = snapshot["rounds"]
    for c in cands:
        was = snapshot["cands"].get((c.name, c.variant, c.info.path))
        if was is None:
            by_round[c] = [None] * rounds
            continue
        times[c], by_round[c], rss[c] = list(was["times"]), list(was["by_round"]), was["rss"]
        if was["failed"]:
            failed[c] = was["failed"]
        if was["slow"]:
            slow.add(c)
    return rounds, snapshot["elapsed_s"]


def worst_spread(times, alive) -> float:
    """The widest half-CI relative to its median among the candidates still timed."""
    worst = 0.0
    for c in alive:
        med, lo, hi = median_ci(times[c])
        if not med:
            return math.inf
        worst = max(worst, (hi - lo) / 2 / med)
    return worst
