"""choice/incremental.py through policy.decide: when linkwrap's own linker relinks an output by
patching. Pure: the evidence (learn.Learned) and the settings are made by hand, nothing is linked."""
import pytest

from linkwrap.choice import incremental, policy
from linkwrap.evidence import learn
from linkwrap.request import args
from tests.choice.test_policy import ALL, found, has_reason, probe, request, settings

DEBUG = "/w/target/debug/deps/app-0123"


def learned(full=None, inc=None, failed=()):
    """Evidence of one output: full = {linker: (timed, median ms)}, inc = (timed, median ms)."""
    return learn.Learned(("/w", "/w/target/debug/deps/app"), full or {}, frozenset(failed), 9, 0, False, inc)


def decide(ev=None, env=None, req=None, installed=ALL, failed=frozenset(), **layer):
    return policy.decide(req or request(out=DEBUG), probe(), found(**installed), settings(env, **layer),
                         None, None, ev, failed)


def parsed(*argv, out=DEBUG):
    return args.parse([*argv, "main.o", "-o", out], driver="cc", environ={}, cwd="/w")


# --- by measurement: this output's incremental relinks against its best full linker's ------------

@pytest.mark.parametrize("ev, chosen, words", [
    # faster than the best full linker, both with enough samples: chosen
    (learned({"wild": (3, 120.0), "mold": (5, 180.0)}, (3, 40.0)), True,
     "python 0.1.0, incremental: measured faster than the best full linker on this output's relinks "
     "(40 ms median of 3 timed vs wild 0.10.0 120 ms (3 timed); load-adjusted)"),
    # slower than the best full linker: not chosen, and said with both figures
    (learned({"wild": (3, 120.0)}, (5, 168.0)), False,
     "incremental relinking not chosen: 168 ms median of 5 timed incremental relinks, not faster than "
     "wild 0.10.0 120 ms (3 timed)"),
    # as fast is not faster
    (learned({"wild": (3, 120.0)}, (3, 120.0)), False, "not faster than wild 0.10.0 120 ms"),
    # too few incremental samples: a lucky one is no measurement
    (learned({"wild": (3, 120.0)}, (2, 10.0)), False,
     "incremental relinking not measured on this output: 2 of 3 incremental relinks timed"),
    (learned({"wild": (3, 120.0)}), False, "0 of 3 incremental relinks timed (LINKWRAP_INCREMENTAL=1 times them)"),
    # the best full linker must be judged too: two timed relinks of wild are no comparison
    (learned({"wild": (2, 120.0)}, (3, 40.0)), False,
     "no full linker has 3 timed relinks of this output to compare with"),
    # the best full linker is the fastest judged one, not the first
    (learned({"mold": (3, 180.0), "wild": (3, 30.0)}, (4, 40.0)), False, "not faster than wild 0.10.0 30 ms"),
])
def test_this_outputs_relinks_decide(ev, chosen, words):
    d = decide(ev)
    assert d.incremental is chosen
    assert d.linker.name == ("python" if chosen else d.linker.name)
    assert chosen or d.linker.name != "python"
    assert has_reason(d, words), d.reasons


def test_a_full_linker_that_failed_here_is_no_best_to_beat():
    # wild failed on this output (the link as asked then passed): mold is what a full link would be
    ev = learned({"wild": (3, 30.0), "mold": (3, 180.0)}, (3, 40.0), failed=["wild"])
    d = decide(ev)
    assert d.incremental and has_reason(d, "vs mold 1.10.1 180 ms"), d.reasons


def test_an_uninstalled_full_linker_is_no_best_to_beat():
    ev = learned({"wild": (3, 30.0), "mold": (3, 180.0)}, (3, 40.0))
    d = decide(ev, installed={k: v for k, v in ALL.items() if k != "wild"})
    assert d.incremental and has_reason(d, "vs mold 1.10.1 180 ms"), d.reasons


def test_without_learning_nothing_is_measured_and_nothing_chosen():
    d = decide(None)
    assert not d.incremental and d.linker.name == "mold"
    assert has_reason(d, "incremental relinking is chosen only by this output's relinks, not learnt here"), d.reasons


def test_the_decision_keeps_the_full_linkers_reasons_and_its_own_flags():
    d = decide(learned({"wild": (3, 120.0)}, (3, 40.0)))
    assert d.linker.name == "python" and d.write_mode == policy.FRESH
    assert d.driver_flags == () and "--no-fork" not in d.linker_flags   # wild's, not linkwrap.ld's
    # The full link it replaces (here a try of mold, which an incremental link is not: learn.note
    # counts no try for it) is said first.
    assert d.reasons[0].startswith("mold 1.10.1: exploring"), d.reasons
    assert all(len(r) <= 200 and "\n" not in r for r in d.reasons), d.reasons


# --- forced, turned off ----------------------------------------------------------------------

@pytest.mark.parametrize("env, layer, words", [
    ({"LINKWRAP_INCREMENTAL": "1"}, {}, "python 0.1.0, incremental: LINKWRAP_INCREMENTAL=1 asks for it (none timed yet)"),
    ({"LINKWRAP_LD_INCREMENTAL": "1"}, {}, "LINKWRAP_LD_INCREMENTAL=1 asks for it"),
    ({}, {"incremental": {"enabled": True}}, "[incremental] enabled = true in project file /w/linkwrap.toml asks for it"),
])
def test_asking_for_it_forces_it_without_a_measurement(env, layer, words):
    """How the first samples arise: nothing measured, and it is linked incrementally all the same."""
    d = decide(learned({"wild": (3, 120.0)}), env, **layer)
    assert d.incremental and d.linker.name == "python"
    assert has_reason(d, words), d.reasons


def test_forced_it_stays_even_where_it_measured_slower():
    d = decide(learned({"wild": (3, 120.0)}, (5, 300.0)), {"LINKWRAP_INCREMENTAL": "1"})
    assert d.incremental and has_reason(d, "asks for it (300 ms median of 5 timed)"), d.reasons


@pytest.mark.parametrize("env, layer, words", [
    ({"LINKWRAP_INCREMENTAL": "0"}, {}, "incremental relinking off (LINKWRAP_INCREMENTAL=0)"),
    ({"LINKWRAP_INCREMENTAL": "0", "LINKWRAP_LD_INCREMENTAL": "1"}, {}, "off (LINKWRAP_INCREMENTAL=0)"),
    ({"LINKWRAP_INCREMENTAL": "0"}, {"incremental": {"enabled": True}}, "off (LINKWRAP_INCREMENTAL=0)"),
    ({"LINKWRAP_INCREMENTAL": "0", "LINKWRAP_LINKER": "python"}, {}, "off (LINKWRAP_INCREMENTAL=0)"),
    ({}, {"incremental": {"enabled": False}},
     "incremental relinking off ([incremental] enabled = false in project file /w/linkwrap.toml)"),
])
def test_turned_off_it_wins_over_the_measurement_and_every_force(env, layer, words):
    d = decide(learned({"wild": (3, 120.0)}, (5, 20.0)), env, **layer)
    assert not d.incremental
    assert has_reason(d, words), d.reasons


def test_linkwrap_linker_python_links_in_full_unless_asked():
    d = decide(None, {"LINKWRAP_LINKER": "python"})
    assert d.linker.name == "python" and not d.incremental
    d = decide(None, {"LINKWRAP_LINKER": "python", "LINKWRAP_LD_INCREMENTAL": "1"})
    assert d.linker.name == "python" and d.incremental


@pytest.mark.parametrize("env, req, words", [
    ({"LINKWRAP_LINKER": "wild"}, None, "LINKWRAP_LINKER=wild names the linker"),
    ({}, dict(fuse_ld="gold"), "the command line asks for -fuse-ld=gold"),
])
def test_a_linker_the_caller_named_stays(env, req, words):
    r = request(out=DEBUG, **(req or {}))
    d = decide(learned({"wild": (3, 120.0)}, (5, 20.0)), {**env, "LINKWRAP_INCREMENTAL": "1"}, req=r)
    assert not d.incremental and d.linker.name != "python"
    assert has_reason(d, words), d.reasons


def test_rustcs_injected_fuse_ld_is_no_callers_choice():
    r = request(out=DEBUG, fuse_ld="lld", rust_lld="/rs/bin/rust-lld")
    d = decide(None, {"LINKWRAP_INCREMENTAL": "1"}, req=r)
    assert d.incremental and d.linker.name == "python", d.reasons


def test_a_link_as_asked_says_nothing_of_it():
    d = decide(learned({"wild": (3, 120.0)}, (5, 20.0)), {"LINKWRAP_INCREMENTAL": "1"}, prefer=[])
    assert d.linker is None and not d.incremental
    assert not has_reason(d, "incremental"), d.reasons


# --- never where it cannot pay or must not be --------------------------------------------------

@pytest.mark.parametrize("req, words", [
    (parsed("-flto"), "-flto on the command line"),
    (parsed("-flto=auto"), "-flto=auto on the command line"),
    (parsed("-fuse-linker-plugin"), "-fuse-linker-plugin on the command line"),
    (parsed("-fno-lto", "-flto"), "-flto on the command line"),                        # the last one counts
    (parsed("-Wl,-plugin,/usr/lib/LLVMgold.so"), "a linker plugin (LTO) on the command line"),
    (parsed("-s"), "-s (strip) on the command line"),
    (parsed("-Wl,--strip-debug"), "-Wl,--strip-debug (strip) on the command line"),     # rustc, strip = "debuginfo"
    (parsed("-Xlinker", "--strip-all"), "-Wl,--strip-all (strip) on the command line"),
    (parsed(out="/w/target/release/deps/app-0123"), "the output is in a release/ directory"),
    (parsed(out="/w/target/release/app"), "the output is in a release/ directory"),
    (parsed(out="/w/target/x86_64-unknown-linux-gnu/release/examples/demo-0123"),
     "the output is in a release/ directory"),
    (parsed(out="/w/build/Release/app"), "the output is in a Release/ directory"),        # CMake multi-config
    (parsed(out="/w/build/MinSizeRel/app"), "the output is in a MinSizeRel/ directory"),
])
def test_a_release_or_lto_build_is_never_incremental_whatever_asks(req, words):
    for env in ({"LINKWRAP_INCREMENTAL": "1"}, {"LINKWRAP_LD_INCREMENTAL": "1", "LINKWRAP_LINKER": "python"}, {}):
        d = decide(learned({"wild": (3, 120.0)}, (5, 20.0)), env, req=req)
        assert not d.incremental, (env, d.reasons)
        assert has_reason(d, "no incremental relinking for a release or LTO build: " + words), d.reasons


@pytest.mark.parametrize("out", ["/w/target/debug/deps/app-0123", "/w/release/tool/app", "/w/release-notes/app",
                                 "/w/target/release/build/foo-0123/build-script-build-x/app", "app"])
def test_only_a_release_directory_that_holds_the_output_says_release(out):
    assert incremental.release_or_lto(parsed(out=out)) is None
    assert incremental.release_or_lto(parsed("-flto", "-fno-lto", "-Wl,--gc-sections,-O1", out=out)) is None
    assert incremental.release_or_lto(parsed("-Xlinker", "-Map", "-Xlinker", "x.map", out=out)) is None


@pytest.mark.parametrize("req, installed, failed, words", [
    (request(kind="shared", out="/w/target/debug/deps/libx.so"), ALL, (),
     "no incremental relinking for a shared output"),
    (request(kind="relocatable", out="/w/x.o"), ALL, (), "for a relocatable output"),
    (request(out=DEBUG), {k: v for k, v in ALL.items() if k != "python"}, (),
     "linkwrap's own linker (linkwrap-ld) is not installed"),
    (request(out=DEBUG), ALL, ("python",), "linkwrap's own linker failed on this output before"),
    (parsed("-m32"), ALL, (), "links x86-64 programs only"),
])
def test_where_linkwrap_ld_cannot_patch_it_is_not_forced_either(req, installed, failed, words):
    d = decide(learned({"wild": (3, 120.0)}, (5, 20.0)), {"LINKWRAP_INCREMENTAL": "1"}, req=req,
               installed=installed, failed=frozenset(failed))
    assert not d.incremental and (d.linker is None or d.linker.name != "python")
    assert has_reason(d, words), d.reasons


def test_a_cross_links_target_is_no_x86_64():
    r = request(out=DEBUG)._replace(target="aarch64-unknown-linux-gnu")
    d = decide(None, {"LINKWRAP_INCREMENTAL": "1"}, req=r)
    assert not d.incremental and has_reason(d, "x86-64 programs only"), d.reasons


def test_the_command_line_is_read_only_where_it_could_be_incremental():
    """Unasked and unmeasured, a link cannot be incremental whatever its flags: it is said to be
    unmeasured, and its arguments are not scanned (a rustc link has thousands); its path still is."""
    d = decide(learned({"wild": (3, 120.0)}), req=parsed("-flto"))
    assert not d.incremental and has_reason(d, "not measured on this output: 0 of 3"), d.reasons
    d = decide(learned({"wild": (3, 120.0)}), req=parsed(out="/w/target/release/app"))
    assert not d.incremental and has_reason(d, "release or LTO build: the output is in a release/"), d.reasons


# --- patch-only, and the base built off the build's path (issue 36 item 4) ---------------------

def decide_with(ev=None, env=None, req=None, base=None, saved=False):
    return policy.decide(req or request(out=DEBUG), probe(), found(**ALL), settings(env), None, None, ev,
                         frozenset(), False, None, saved, base)


def test_unmeasured_with_no_base_the_full_linker_links_and_a_base_is_wanted():
    d = decide_with(learned({"wild": (3, 120.0)}), base=False, saved=True)
    assert not d.incremental and d.instead is None and d.wants_base, d
    assert has_reason(d, "0 of 3 incremental relinks timed; its base to patch is built in the background"), d.reasons


def test_unmeasured_with_a_base_ready_a_patch_is_tried_with_the_full_linker_standing_by():
    d = decide_with(learned({"wild": (3, 120.0)}, (1, 30.0)), base=True, saved=True)
    assert d.incremental and d.linker.name == "python", d.reasons
    # the stand-by is the link the rest of the policy chose: what it links with incremental relinking off
    off = decide_with(learned({"wild": (3, 120.0)}, (1, 30.0)), env={"LINKWRAP_INCREMENTAL": "0"}, base=True,
                      saved=True)
    assert d.instead is not None and d.instead.linker == off.linker and off.linker.name != "python"
    assert (d.instead.linker_flags, d.instead.write_mode) == (off.linker_flags, off.write_mode)
    assert not d.instead.incremental and d.instead.wants_base     # a refusal asks for a new base
    assert has_reason(d, "trying a patch, its base is ready (30 ms median of 1 timed; 1 of 3)"), d.reasons
    # the stand-by's own reasons are the full linker's, with no word of the incremental rule
    assert not any("incremental" in r for r in d.instead.reasons), d.instead.reasons


def test_measured_faster_it_only_patches_and_measured_slower_it_is_not_tried_whatever_the_base():
    d = decide_with(learned({"wild": (3, 120.0)}, (3, 40.0)), base=True)
    assert d.incremental and d.instead is not None and d.instead.linker.name != "python"
    d = decide_with(learned({"wild": (3, 120.0)}, (3, 400.0)), base=True, saved=True)
    assert not d.incremental and d.instead is None and not d.wants_base, d


def test_forced_it_links_in_full_where_it_cannot_patch_as_asked():
    d = decide_with(None, env={"LINKWRAP_INCREMENTAL": "1"}, base=False)
    assert d.incremental and d.instead is None


@pytest.mark.parametrize("req", [
    request(out="/w/target/release/deps/app-0123"),
    parsed("-flto"),
    parsed("-shared"),
])
def test_no_base_is_wanted_where_no_incremental_link_could_follow(req):
    d = decide_with(learned({"wild": (3, 120.0)}), req=req, base=False, saved=True)
    assert not d.incremental and not d.wants_base, d.reasons


# --- a replay of this output stands in for the full linker's relinks (issue 36 item 5) ----------

def decide_measured(ev, rows, req=None, base=True):
    """decide() with replay results made by hand, matched to the link as the link path matches them."""
    from linkwrap.evidence import measured as m
    from tests.choice.test_policy_measured import MACHINE, stamps
    req = req or request(out=DEBUG)
    linkers = found(**ALL)
    ms = m.match(req, probe(), linkers, rows, MACHINE, stamps(linkers))
    return policy.decide(req, probe(), linkers, settings(None), ms, None, ev, frozenset(), False, None, True, base)


def replay(linker, median, output=DEBUG, **kw):
    from linkwrap.evidence import measured as m
    from tests.choice.test_policy_measured import row
    return row(linker, median, output=m.output_key(output), **kw)


def test_a_replay_of_this_output_stands_in_for_the_full_linkers_missing_relinks():
    # three patches timed, no full relink of this output timed: the replay's median is the other side
    d = decide_measured(learned({}, (3, 40.0)), [replay("wild", 130.0), replay("mold", 180.0)])
    assert d.incremental and d.linker.name == "python" and d.instead is not None, d.reasons
    assert has_reason(d, "40 ms median of 3 timed vs wild 0.10.0 130 ms (measured by replay)"), d.reasons
    # slower than the replay: not chosen, the full linker links, and the reason names the replay
    d = decide_measured(learned({}, (3, 200.0)), [replay("wild", 130.0), replay("mold", 180.0)])
    assert not d.incremental and d.linker.name == "wild", d.reasons
    assert has_reason(d, "not faster than wild 0.10.0 130 ms (measured by replay)"), d.reasons


def test_the_relinks_of_a_full_linker_win_over_its_replay():
    # wild's own relinks of this output (3 timed) are the measurement; its replay says nothing more
    d = decide_measured(learned({"wild": (3, 30.0)}, (3, 40.0)), [replay("wild", 130.0), replay("mold", 180.0)])
    assert not d.incremental and has_reason(d, "not faster than wild 0.10.0 30 ms (3 timed)"), d.reasons
    # a replayed linker faster than the judged one is the best to beat
    d = decide_measured(learned({"mold": (3, 300.0)}, (3, 100.0)), [replay("wild", 80.0), replay("mold", 180.0)])
    assert not d.incremental and has_reason(d, "not faster than wild 0.10.0 80 ms (measured by replay)"), d.reasons


@pytest.mark.parametrize("rows", [
    # another output of the project: its replay says nothing of this output's edits
    [replay("wild", 130.0, output="/w/target/debug/deps/other"), replay("mold", 180.0, output="/w/target/debug/deps/other")],
    # too few rounds, a failed replay, an in-place variant: no figure to stand in
    [replay("wild", 130.0, runs=2), replay("mold", 180.0, runs=2)],
    [replay("wild", 130.0, failed="wild: error: x"), replay("mold", 180.0, failed="mold: error: y")],
    [replay("wild", 130.0, variant="in-place")],
])
def test_only_this_outputs_counted_replays_stand_in(rows):
    d = decide_measured(learned({}, (3, 40.0)), rows)
    assert not d.incremental, d.reasons
    assert has_reason(d, "no full linker has 3 timed relinks of this output to compare with"), d.reasons


def test_a_replay_does_not_shorten_the_incremental_side():
    # two patches timed: still a try (a base is ready), whatever the replay says
    d = decide_measured(learned({}, (2, 40.0)), [replay("wild", 130.0), replay("mold", 180.0)])
    assert d.incremental and has_reason(d, "trying a patch, its base is ready"), d.reasons
