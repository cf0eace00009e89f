"""policy.decide with a prior (evidence/prior.Prior) and a saved output: tables, no I/O.

Before this output or its project is measured, other projects' like links measured here order the
candidates; with none, the machine default order (wild before a fast caller's default). A prior only
orders what the rules allow, and a saved output's real links are never tries.
"""
from linkwrap.choice import policy
from linkwrap.evidence import learn
from linkwrap.evidence.prior import Prior
from tests.choice.test_policy import ALL, found, has_reason, probe, request, settings
from tests.choice.test_policy_measured import RUST, row


def paired(linker, ratio, half=0.05, vs="rust-lld", project="/other", input_bytes=1 << 20, kind="pie"):
    r = row(linker, 100 * ratio, project=project, input_bytes=input_bytes, kind=kind,
            output=f"{project}/target/debug/deps/tool")
    return r._replace(vs=vs, ratio=ratio, ratio_low=ratio - half, ratio_high=ratio + half)


def decide(rows=(), req=None, installed=ALL, pr=None, prior=True, learned=None, replayable=False, cfg=None):
    req = request(**(req if req is not None else RUST))
    pr = pr or probe()
    p = Prior("other projects' pie links of a like size here", tuple(rows), pr.input_bytes, ()) if prior else None
    return policy.decide(req, pr, found(**installed), cfg or settings(), None, None, learned, prior=p,
                         replayable=replayable)


def test_without_a_prior_the_static_order_stands():
    d = decide(prior=False)
    assert d.linker.name == "rust-lld" and has_reason(d, "rustc's own default"), d.reasons


def test_nothing_measured_here_puts_wild_before_rustcs_default():
    d = decide()
    assert d.linker.name == "wild", d.reasons
    assert d.reasons[0].startswith("wild 0.10.0: the machine default order (wild before rust-lld)"), d.reasons
    # without wild installed, the caller's default stays first
    d = decide(installed={k: v for k, v in ALL.items() if k != "wild"})
    assert d.linker.name == "rust-lld" and has_reason(d, "rustc's own default"), d.reasons


def test_the_machine_order_never_overrides_a_rule_against_wild():
    # wild does no partial links: the machine order passes it over, as the static order does
    d = decide(req=dict(RUST, kind="relocatable"))
    assert d.linker.name == "rust-lld", d.reasons
    assert not has_reason(d, "machine default order")


def test_behind_gnu_ld_the_static_order_already_starts_fast():
    d = decide(req={})   # a C link: the driver's ld is GNU ld, the static order starts with mold
    assert d.linker.name == "mold" and not has_reason(d, "machine default order"), d.reasons


def test_another_projects_like_link_decides_and_is_named():
    rows = [paired("wild", 0.62), paired("mold", 1.12, half=0.04), paired("lld", 1.06)]
    d = decide(rows)
    assert d.linker.name == "wild", d.reasons
    why = d.reasons[0]
    assert why.startswith("wild 0.10.0: prior from other projects' pie links of a like size here: wild 1.0 "
                          "measured 0.62x the time of rust-lld (95 % CI 0.57-0.67) on /other "
                          "/other/target/debug/deps/tool"), why
    assert "this output is not measured yet" in why


def test_the_lowest_clear_ratio_wins_and_a_ratio_reaching_1_is_not_clear():
    d = decide([paired("mold", 0.80), paired("lld", 0.70), paired("wild", 0.5, half=0.6)])
    assert d.linker.name == "lld", d.reasons    # wild's interval reaches 1: not clearly faster
    # every like link must agree: one where mold was not clearly faster keeps it out
    d = decide([paired("mold", 0.80), paired("mold", 1.05, project="/third")])
    assert d.linker.name == "rust-lld", d.reasons
    assert has_reason(d, "none clearly faster than rust-lld"), d.reasons


def test_a_prior_against_another_default_does_not_count():
    # measured against GNU ld (a C project's links): says nothing about rust-lld; the machine order applies
    d = decide([paired("mold", 0.3, vs="bfd")])
    assert d.linker.name == "wild" and has_reason(d, "machine default order"), d.reasons


def test_a_prior_only_orders_what_the_rules_allow():
    # wild is measured clearly fastest elsewhere, but this link is a partial one (-r): wild is out
    rows = [paired("wild", 0.5), paired("lld", 0.9)]
    d = decide(rows, req=dict(RUST, kind="relocatable"))
    assert d.linker.name == "lld", d.reasons
    d = decide(rows, cfg=settings(forbid=["wild"]))
    assert d.linker.name == "lld", d.reasons


def learned(stats, links, last=False):
    return learn.Learned(("/w", "/w/app"), stats, frozenset(), links, 0, last)


def test_a_saved_output_is_never_tried_on_and_one_not_saved_is():
    ev = learned({"rust-lld": (1, 200.0)}, 1)   # the second link: untried candidates remain
    tried = decide(prior=False, learned=ev)
    assert learn.EXPLORING in " ".join(tried.reasons), tried.reasons
    saved = decide(prior=False, learned=ev, replayable=True)
    assert learn.EXPLORING not in " ".join(saved.reasons), saved.reasons
    assert saved.linker.name == "rust-lld" and has_reason(saved, "this output's link is saved"), saved.reasons
    # nor the periodic re-check of the runner-up once learnt
    judged = {n: (learn.NEED, ms) for n, ms in (("rust-lld", 200.0), ("mold", 250.0), ("lld", 260.0), ("wild", 120.0))}
    ev = learned(judged, learn.EXPLORE_EVERY - 1)
    assert learn.EXPLORING in " ".join(decide(prior=False, learned=ev).reasons)
    d = decide(prior=False, learned=ev, replayable=True)
    assert d.linker.name == "wild" and learn.EXPLORING not in " ".join(d.reasons), d.reasons


def test_with_saving_off_the_tries_start_from_the_priors_choice():
    ev = learned({}, 0)
    d = decide(learned=ev)   # the first link: the prior's choice, no try yet
    assert d.linker.name == "wild" and has_reason(d, "machine default order"), d.reasons
