"""Priors from this machine: another project's like links, measured here, choose for a project's
first link; the machine-wide summary holds them (one small file), and a stale mark says when the
relinks contradict a measurement."""
import json
import os
import subprocess

from clirun import linkwrap
from conftest import comment_mark
from linkwrap.evidence import learn, measured, prior
from linkwrap.facts import linkers, probe
from linkwrap.request import args


def facts_of(cwd, out="app", inputs=("hello.o",)):
    req = args.parse([*inputs, "-o", out], driver="cc", environ={}, cwd=str(cwd))
    return req, probe.snapshot(req), linkers.discover(req)


def keep(project, output, linker, ratio, found, facts, input_bytes, vs="bfd", half=0.05, kind="pie"):
    """One paired result, as `linkwrap bench` keeps it (measured.add_rows: the shards and the summary)."""
    info = found[linker]
    row = measured.Row(measured.machine_key(facts.cpus), facts.fs, None, str(project),
                       measured.output_key(str(output)), kind, input_bytes, linker, info.label, info.path,
                       os.stat(info.path).st_mtime_ns, "fresh", 100 * ratio, 95 * ratio, 105 * ratio, 12, 1000,
                       "2026-12-04", None, vs, ratio, ratio - half, ratio + half)
    measured.add_rows([row])
    return row


def test_a_second_projects_first_link_follows_the_first_projects_measurement(tmp_path, lw_home, linkwrap_cc,
                                                                              big_hello_obj):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    os.rename(big_hello_obj, second / "hello.o")
    req, facts, found = facts_of(second)
    size = os.path.getsize(second / "hello.o")
    # The first project's like link (1.5x this one's inputs): lld clearly fastest against GNU ld,
    # mold less so; this link's static order would take mold.
    keep(first, first / "app", "lld", 0.40, found, facts, size * 3 // 2)
    keep(first, first / "app", "mold", 0.55, found, facts, size * 3 // 2)
    # ...and a link of another size and one of another kind, which do not apply
    keep(first, first / "huge", "mold", 0.10, found, facts, size * 5)
    keep(first, first / "lib.so", "mold", 0.10, found, facts, size, kind="shared")
    assert len(measured.machine_rows()) == 4 and measured.applicable(req, facts, found) is None
    env = {"LINKWRAP_HOME": str(lw_home)}
    d = json.loads(linkwrap("explain", "--json", "--", "hello.o", "-o", "app", cwd=second, env=env).stdout)
    decision = d["decision"]
    assert decision["linker"] == "lld", decision["reasons"]
    assert decision["measured"] is None
    assert decision["prior"]["used"] == "measurement"
    assert {k: decision["prior"]["decided_by"][k] for k in ("project", "output", "linker", "ratio", "ratio_vs")} == \
        {"project": str(first), "output": str(first / "app"), "linker": "lld", "ratio": 0.40, "ratio_vs": "bfd"}
    assert sorted(r["output"] for r in decision["prior"]["rows"]) == [str(first / "app")] * 2
    assert f"prior from other projects' pie links of a like size here: {found['lld'].label} measured 0.40x " \
           f"the time of bfd" in decision["reasons"][0] and str(first) in decision["reasons"][0]
    # ...and the real link does what explain said
    done = subprocess.run([linkwrap_cc, "hello.o", "-o", "app"], cwd=second, env={**os.environ, **env},
                          capture_output=True)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    assert comment_mark("lld") in subprocess.run(["readelf", "-p", ".comment", str(second / "app")],
                                                 capture_output=True, text=True).stdout
    # The first project's own links are measured there, not a prior of their own.
    assert prior.applicable(facts_of(first)[0], facts, found).rows == ()


def test_nothing_measured_gives_an_empty_prior_and_only_like_links_apply(tmp_path, lw_home, hello_obj):
    req, facts, found = facts_of(tmp_path)
    empty = prior.applicable(req, facts, found)
    assert empty.rows == () and empty.ignored == ()
    size = os.path.getsize(hello_obj)
    other = tmp_path / "other"
    keep(other, other / "a", "mold", 0.5, found, facts, size * 2)        # within a factor of 2
    keep(other, other / "b", "mold", 0.5, found, facts, size * 2 + 1)    # just beyond
    keep(other, other / "c", "lld", 0.5, found, facts, size // 2)
    near = prior.applicable(req, facts, found)
    assert sorted(r.output for r in near.rows) == [str(other / "a"), str(other / "c")]
    assert near.input_bytes == size
    # a linker binary that changed since: named, not followed
    moved = {**found, "mold": found["mold"]._replace(path=found["lld"].path)}
    assert [r.output for r in prior.applicable(req, facts, moved).rows] == [str(other / "c")]
    assert any("was " in why for why in prior.applicable(req, facts, moved).ignored)


def test_relinks_clearly_slower_than_their_measurement_mark_it_stale_until_measured_again(tmp_path, lw_home,
                                                                                          hello_obj):
    req, facts, found = facts_of(tmp_path)
    row = keep(tmp_path, tmp_path / "app", "mold", 0.5, found, facts, 1000)
    this = measured.applicable(req, facts, found)
    assert this.scope == "this output"
    learn.against_measured(req, "mold", "fresh", [row.median_ms * 1.1] * learn.NEED, this)
    assert not measured.is_stale(req)                          # as measured: not stale
    slow = row.median_ms * learn.STALE_FACTOR + learn.STALE_MARGIN_MS + 1
    learn.against_measured(req, "mold", "fresh", [slow] * (learn.NEED - 1), this)
    assert not measured.is_stale(req)                          # too few relinks to say
    learn.against_measured(req, "mold", "fresh", [slow] * learn.NEED, this)
    assert measured.is_stale(req)
    mark = measured.stale()[(str(tmp_path), str(tmp_path / "app"))]
    assert mark["linker"] == "mold" and mark["measured_ms"] == row.median_ms and mark["relinks_ms"] == slow
    keep(tmp_path, tmp_path / "app", "mold", 0.5, found, facts, 1000)   # measured again
    assert not measured.is_stale(req)
