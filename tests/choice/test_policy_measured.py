"""policy.decide with measurements and the caller's own default: tables, no I/O.

The measurements come in as linkwrap.evidence.measured.Measured; measured.match() decides which
results apply to a link (machine, filesystem, linker binary, scope), also without I/O here.
"""
import pytest

from linkwrap.evidence import measured as m
from linkwrap.choice import policy
from tests.choice.test_policy import ALL, found, has_reason, probe, request, settings

RUST = dict(fuse_ld="lld", rust_lld="/rs/bin/rust-lld")
MACHINE = "Some CPU x2"


def row(linker, median, half=2.0, variant="fresh", output=None, project="/w", kind="pie",
        input_bytes=1 << 20, fs="ext4", machine=MACHINE, mtime=1, failed=None, date="2026-11-30", runs=12):
    return m.Row(machine, fs, "6.18.44", project, output or m.output_key("/w/target/debug/deps/foo-0123"),
                 kind, input_bytes, linker, f"{linker} 1.0", f"/opt/{linker}/bin/{linker}", mtime, variant,
                 median, median - half, median + half, runs, 100000, date, failed)


def stamps(installed, mtime=1):
    return {name: (info.path, mtime) for name, info in installed.items()}


def decide(rows, req=None, cfg=None, installed=ALL, pr=None, stamp=1, callers_ld=None):
    req = request(**(req if req is not None else RUST))
    linkers = found(**installed)
    pr = pr or probe()
    measured = m.match(req, pr, linkers, rows, MACHINE, stamps(linkers, stamp)) if rows is not None else None
    return policy.decide(req, pr, linkers, cfg or settings(), measured, callers_ld)


@pytest.mark.parametrize("rows, expected, reason", [
    # nothing measured: rustc's own default first, never slower than without linkwrap
    (None, "rust-lld", "rustc's own default"),
    ([], "rust-lld", "rustc's own default"),
    # a clear winner wins
    ([row("mold", 180), row("rust-lld", 220), row("lld", 230)], "mold",
     "measured fastest here for this output on ext4 (180 ms ±1.1 % vs rust-lld 1.0 220 ms, lld 1.0 230 ms; 12 rounds, 2026-11-30)"),
    ([row("mold", 250), row("rust-lld", 220)], "rust-lld", "measured fastest here"),
    # confidence intervals overlap: the static order (rust-lld first) decides
    ([row("mold", 218, half=5), row("rust-lld", 222, half=5)], "rust-lld",
     "measured within the confidence interval of mold 1.0"),
    # a failed candidate and an in-place variant never win the choice
    ([row("mold", 100, failed="mold: error: x"), row("rust-lld", 220), row("lld", 260)], "rust-lld", "measured fastest"),
    ([row("mold", 100, variant="in-place"), row("rust-lld", 220), row("lld", 260)], "rust-lld", "measured fastest"),
    # one or two timed runs are no measurement to move for
    ([row("mold", 100, runs=2), row("rust-lld", 220), row("lld", 260)], "rust-lld", "measured fastest"),
    # the closest scope wins: this output's ranking over the project's other outputs'
    ([row("mold", 100, output="/w/target/debug/deps/other"), row("rust-lld", 200, output="/w/target/debug/deps/other"),
      row("mold", 300), row("rust-lld", 200)], "rust-lld", "for this output"),
    ([row("mold", 100, output="/w/target/debug/deps/other"), row("rust-lld", 200, output="/w/target/debug/deps/other")],
     "mold", "for this project's pie outputs"),
    # another project's links never apply, however like this one in kind and size
    ([row("mold", 100, project="/p", input_bytes=3 << 19), row("rust-lld", 200, project="/p", input_bytes=3 << 19)],
     "rust-lld", "rustc's own default"),
    ([row("mold", 100, project="/p", input_bytes=3 << 20), row("rust-lld", 200, project="/p", input_bytes=3 << 20)],
     "rust-lld", "rustc's own default"),
    ([row("mold", 100, project="/p", kind="shared"), row("rust-lld", 200, project="/p", kind="shared")],
     "rust-lld", "rustc's own default"),
])
def test_measurements_decide_the_linker(rows, expected, reason):
    d = decide(rows)
    assert d.linker.name == expected
    assert has_reason(d, reason), d.reasons


@pytest.mark.parametrize("change, why", [
    (dict(machine="Other CPU x8"), "measured on another machine (Other CPU x8)"),
    (dict(fs="xfs"), "measured on xfs, this output is on ext4"),
])
def test_measurements_from_elsewhere_are_ignored_and_said(change, why):
    d = decide([row("mold", 100, **change), row("rust-lld", 200, **change)])
    assert d.linker.name == "rust-lld"
    assert has_reason(d, "measurements ignored: mold 1.0 " + why), d.reasons


def test_a_lone_measured_candidate_is_no_comparison():
    d = decide([row("mold", 100), row("rust-lld", 50, failed="rust-lld: error: x")])
    assert d.linker.name == "rust-lld" and has_reason(d, "rustc's own default"), d.reasons


def test_a_changed_linker_binary_voids_its_measurement():
    d = decide([row("mold", 100), row("rust-lld", 200)], stamp=2)
    assert d.linker.name == "rust-lld" and has_reason(d, "rustc's own default")
    assert has_reason(d, "mold 1.0 measured 2026-11-30: its binary changed since"), d.reasons


def test_a_measured_linker_that_is_not_installed_is_not_chosen():
    d = decide([row("wild", 50), row("mold", 100), row("rust-lld", 200)],
               installed={k: ALL[k] for k in ("mold", "rust_lld", "bfd")})
    assert d.linker.name == "mold"
    assert has_reason(d, "wild 1.0 measured 2026-11-30 is not installed now")


@pytest.mark.parametrize("cfg, env, expected, reason", [
    # the caller's explicit choices win over any measurement
    ({"prefer": ["rust-lld", "mold"]}, {}, "rust-lld", "first installed of rust-lld, mold"),
    ({"forbid": ["mold"]}, {}, "rust-lld", "rustc's own default"),
    ({}, {"LINKWRAP_LINKER": "lld"}, "lld", "LINKWRAP_LINKER=lld"),
])
def test_explicit_choices_beat_measurements(cfg, env, expected, reason):
    d = decide([row("mold", 100), row("rust-lld", 200)], cfg=settings(env, **cfg))
    assert d.linker.name == expected and has_reason(d, reason), d.reasons


def test_the_callers_fuse_ld_beats_measurements():
    d = decide([row("mold", 100), row("rust-lld", 200)], req=dict(fuse_ld="gold"))
    assert d.linker.name == "gold"


@pytest.mark.parametrize("callers_ld, expected, reason", [
    ("lld", "lld", "the driver's own ld, first of lld, mold, wild, rust-lld, bfd, gold"),
    ("bfd", "mold", "first installed of mold, wild, lld, rust-lld, bfd, gold"),   # GNU ld only when nothing faster
    (None, "mold", "first installed of mold, wild, lld, rust-lld, bfd, gold"),
])
def test_a_c_link_keeps_the_drivers_fast_ld_first(callers_ld, expected, reason):
    d = decide(None, req={}, callers_ld=callers_ld)
    assert d.linker.name == expected and has_reason(d, reason), d.reasons


def test_output_key_drops_cargos_hash_only():
    assert m.output_key("/t/debug/deps/app-0123456789abcdef") == "/t/debug/deps/app"
    assert m.output_key("/t/debug/deps/my-app") == "/t/debug/deps/my-app"
    assert m.output_key("/t/lib-x.so") == "/t/lib-x.so"


# --- learning from relinks (policy.learned_pick; the evidence comes in as data) ---------------

from linkwrap.evidence import learn  # noqa: E402

TWO = {"mold": (1, 10, 1), "lld": (16, 0, 6), "bfd": (2, 40)}


def learned(stats=None, failed=(), links=0, explored=0, last=False):
    return learn.Learned(("/w", "/w/target/debug/deps/foo"), stats or {}, frozenset(failed), links, explored, last)


@pytest.mark.parametrize("ev, expected, words", [
    (learned(), "mold", "first installed"),                                    # first link: the usual choice
    (learned({"mold": (1, 50.0)}, links=1), "lld", "exploring on this output (0 of 3"),
    (learned({"mold": (1, 50.0), "lld": (1, 10.0)}, links=2, explored=1, last=True), "mold", "first installed"),
    (learned({"mold": (3, 50.0), "lld": (2, 10.0)}, links=5, explored=2), "lld", "exploring"),
    (learned({"mold": (3, 50.0), "lld": (2, 10.0)}, links=5, explored=2, last=True), "mold",
     "fastest of this output's relinks so far"),
    (learned({"mold": (3, 50.0), "lld": (3, 10.0)}, links=6, explored=3), "lld", "learnt fastest"),
    (learned({"mold": (3, 50.0), "lld": (3, 10.0)}, links=learn.EXPLORE_EVERY - 1, explored=3), "mold",
     "exploring again on this output (one link in 20"),
    (learned({"mold": (3, 50.0), "lld": (3, 10.0)}, links=learn.EXPLORE_EVERY - 1, explored=3, last=True), "lld",
     "learnt fastest"),
    # a candidate that failed on this output is never tried there again
    (learned({"mold": (1, 50.0)}, failed=["lld"], links=1), "mold", "first installed"),
])
def test_learning_explores_within_bounds_then_keeps_the_fastest(ev, expected, words):
    d = policy.decide(request(), probe(), found(**TWO), settings(), None, None, ev)
    assert d.linker.name == expected and has_reason(d, words), d.reasons


def test_measurements_win_over_learnt_evidence_and_explicit_choices_over_both():
    ev = learned({"mold": (3, 50.0), "lld": (3, 10.0)}, links=6)
    req = request()
    linkers = found(**TWO)
    rows = [row("mold", 5), row("lld", 100)]
    measured = m.match(req, probe(), linkers, rows, MACHINE, stamps(linkers))
    assert policy.decide(req, probe(), linkers, settings(), measured, None, ev).linker.name == "mold"
    d = policy.decide(req, probe(), linkers, settings(prefer=["mold", "lld"]), None, None, ev)
    assert d.linker.name == "mold" and has_reason(d, "first installed of mold, lld")


def test_a_slower_candidate_never_wins_by_overlapping_the_fastest():
    # mold's interval touches wild's, rust-lld's (the default) does not: the fastest, wild, wins
    rows = [row("wild", 64, half=15), row("mold", 100, half=23), row("rust-lld", 89, half=5)]
    d = decide(rows)
    assert d.linker.name == "wild" and has_reason(d, "measured fastest here"), d.reasons


# --- paired ratios: each candidate's time over the default's in the same round ----------------

def paired(linker, median, ratio, low, high, half=20.0, vs="rust-lld"):
    return row(linker, median, half=half)._replace(vs=vs, ratio=ratio, ratio_low=low, ratio_high=high)


@pytest.mark.parametrize("rows, expected, reason", [
    # independent intervals overlap (200 +-20 vs 210 +-20), the paired one is clear of 1: mold wins
    ([paired("mold", 200, 0.95, 0.93, 0.97), row("rust-lld", 210, half=20)], "mold",
     "measured 0.95x the time of rust-lld 1.0 here, paired by round (95 % CI 0.93-0.97)"),
    # a lower median whose paired interval reaches 1: the default stays, and says why
    ([paired("mold", 150, 0.97, 0.90, 1.01, half=2), row("rust-lld", 210, half=2)], "rust-lld",
     "no paired ratio to it is entirely below 1 (mold 1.0 0.97x (0.90-1.01))"),
    # of two clear of 1, the lower median wins; one above 1 never does
    ([paired("mold", 190, 0.90, 0.88, 0.92), paired("lld", 180, 0.86, 0.80, 0.95),
      paired("wild", 100, 1.10, 1.05, 1.20), row("rust-lld", 210)], "lld", "paired by round"),
])
def test_the_paired_interval_decides_when_there_is_one(rows, expected, reason):
    d = decide(rows)
    assert d.linker.name == expected and has_reason(d, reason), d.reasons


def test_ratios_to_another_linker_than_the_first_are_not_used_as_paired():
    # paired with mold, not with rust-lld (the default): the independent intervals decide
    rows = [paired("lld", 150, 0.5, 0.4, 0.6, half=2, vs="mold"), row("rust-lld", 210, half=2)]
    d = decide(rows)
    assert d.linker.name == "lld" and has_reason(d, "measured fastest here"), d.reasons


def test_rows_from_before_the_paired_ratios_read_with_them_unset():
    old = tuple(row("mold", 100))[:m.OLD_FIELDS]
    r = m._row(old)
    assert r.linker == "mold" and (r.vs, r.ratio, r.ratio_low, r.ratio_high) == (None,) * 4
    assert m._row(old[:-1]) is None


def test_a_linker_that_failed_on_this_output_is_chosen_neither_by_measurement_nor_by_the_static_order():
    from linkwrap.evidence.learn import Learned
    req = request(**RUST)
    linkers = found(**ALL)
    pr = probe()
    rows = [row("mold", 100), row("rust-lld", 220)]
    failed = Learned(("/w", "x"), {}, frozenset({"mold"}), 3, 0, False)
    measured = m.match(req, pr, linkers, rows, MACHINE, stamps(linkers))
    assert policy.decide(req, pr, linkers, settings(), measured, None).linker.name == "mold"
    d = policy.decide(req, pr, linkers, settings(), measured, None, failed)
    assert d.linker.name == "rust-lld", d.reasons
    # with nothing measured: rust-lld (rustc's default) failed here, so the static order's next
    failed = Learned(("/w", "x"), {}, frozenset({"rust-lld"}), 3, 0, False)
    d = policy.decide(req, pr, linkers, settings(), None, None, failed)
    assert d.linker.name != "rust-lld"
    assert has_reason(d, "passed over: it failed on this output before"), d.reasons


def test_a_measurement_wins_on_a_small_link_too():
    """The small-link rule (docs/policy.md 1.3) is the static order's: what `linkwrap bench` measured
    for this output comes first."""
    small = probe(small_inputs=True)
    rows = [row("mold", 10), row("bfd", 30), row("lld", 40)]
    d = decide(rows, req={}, pr=small)
    assert d.linker.name == "mold" and has_reason(d, "measured fastest here"), d.reasons
    d = decide(None, req={}, pr=small)
    assert d.linker.name == "wild" and has_reason(d, "a small link"), d.reasons
