"""Saved links replayed with real linkers, after the build's own files are gone (linkwrap.bench).

One real `cargo build` of a small std-only project saves its link (`linkwrap run --save`);
`cargo clean` and a rebuild then remove and rewrite every file rustc linked, and the saved
link must still replay on every installed linker.
"""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from clirun import linkwrap
from conftest import script, tool
from linkwrap.facts import linkers

MAIN = """
fn work(n: u64) -> u64 {{ (0..n).fold({seed}, |a, x| a.wrapping_mul(31).wrapping_add(x)) }}
fn main() {{ println!("sum {{}}", work(1000)); }}
"""


def host():
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    return next(l.split(":", 1)[1].strip() for l in out.splitlines() if l.startswith("host:"))


def cargo(project, *argv, env):
    return subprocess.run([tool("cargo"), *argv], cwd=project, capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """(project, env, output): a built project whose link was saved, then `cargo clean`ed."""
    root = tmp_path_factory.mktemp("bench")
    project = root / "app"
    (project / "src").mkdir(parents=True)
    (project / "Cargo.toml").write_text('[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n')
    (project / "src" / "main.rs").write_text(MAIN.format(seed=1))
    (project / ".cargo").mkdir()
    (project / ".cargo" / "config.toml").write_text(f'[target.{host()}]\nlinker = "{script("linkwrap-cc")}"\n')
    home = root / "lw-home"
    env = {**os.environ, "LINKWRAP_HOME": str(home), "CARGO_TARGET_DIR": str(project / "target")}
    env.pop("LINKWRAP_LINKER", None)
    done = linkwrap("run", "--save", "-q", "--", "cargo", "build", "-q", cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    deps = project / "target" / "debug" / "deps"
    [output] = [p for p in deps.iterdir() if p.name.startswith("app-") and "." not in p.name]
    assert cargo(project, "clean", "-q", env=env).returncode == 0
    assert not output.exists()
    return project, env, str(output)


def bench(project, env, *words):
    return linkwrap("bench", "--json", "--budget", "3", *words, cwd=project, env=env)


def test_a_saved_link_replays_on_every_installed_linker_after_cargo_clean(saved):
    project, env, output = saved
    installed = linkers.discover(None, env)
    done = bench(project, env)
    assert done.returncode == 0, done.stderr
    [report] = json.loads(done.stdout)
    assert report["output"] == output and report["default"] == "rust-lld"
    rows = {(r["linker"], r["variant"]): r for r in report["rows"]}
    for name in set(installed) - {"python"}:
        r = rows[(name, "fresh")]
        assert r["failed"] is None, r
        assert r["runs"] >= 1 and r["ci_low_ms"] <= r["median_ms"] <= r["ci_high_ms"]
        assert r["peak_rss_kb"] > 0 and r["spawner_rss_kb"] > 0
        assert r["peak_rss_bound"] is (r["peak_rss_kb"] <= r["spawner_rss_kb"])
    for name in ("mold", "lld", "bfd", "gold", "rust-lld", "wild"):
        assert name in installed, f"{name} is not installed: run scripts/install-test-deps (wild: PATH)"
    assert ("mold", "in-place") in rows
    assert set(rows["mold", "fresh"]) == {"linker", "label", "variant", "median_ms", "ci_low_ms", "ci_high_ms",
                                          "min_ms", "max_ms", "peak_rss_kb", "runs", "failed",
                                          "ratio_vs", "ratio", "ratio_ci_low", "ratio_ci_high", "times_ms",
                                          "spawner_rss_kb", "peak_rss_bound"}
    # the results reach the store
    import sqlite3
    db = sqlite3.connect(os.path.join(env["LINKWRAP_HOME"], "links.db"))
    linkers_stored = {r[0] for r in db.execute("SELECT linker FROM bench_results WHERE output_path = ?", (output,))}
    assert linkers_stored >= set(installed) - {"python"}


def test_the_saved_link_outlives_a_rebuild_that_rewrites_deps(saved):
    project, env, output = saved
    (project / "src" / "main.rs").write_text(MAIN.format(seed=2))
    assert cargo(project, "build", "-q", env=env).returncode == 0   # not saved: deps/ rewritten
    done = bench(project, env, "--linker", "mold")
    assert done.returncode == 0, done.stderr
    [report] = json.loads(done.stdout)
    assert {r["linker"] for r in report["rows"]} == {"mold"}
    assert all(r["failed"] is None and r["runs"] >= 1 for r in report["rows"])


def test_the_measured_choice_shows_in_explain(saved):
    project, env, output = saved
    assert bench(project, env, "--linker", "mold", "--linker", "lld").returncode == 0
    deps = os.path.dirname(output)
    done = linkwrap("explain", "--json", output, cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    measured = json.loads(done.stdout)["decision"]["measured"]
    assert measured["scope"] == "this output"
    assert {r["linker"] for r in measured["rows"]} >= {"mold", "lld"}
    assert os.path.isdir(deps)


def test_missing_and_broken_saved_inputs_are_one_line(saved, tmp_path):
    project, env, output = saved
    done = bench(project, env, "target/debug/deps/nothing-here")
    assert done.returncode == 1
    assert done.stderr.startswith("linkwrap: error: target/debug/deps/nothing-here: no saved link")
    assert len(done.stderr.strip().splitlines()) == 1
    # a saved copy that is gone: the saved link says which, in one line
    home = env["LINKWRAP_HOME"]
    copy = tmp_path / "home"
    copy.mkdir(mode=0o700)
    shutil.copytree(os.path.join(home, "saved"), copy / "saved", symlinks=True)   # the saved links alone
    env2 = {**env, "LINKWRAP_HOME": str(copy)}
    import marshal
    [manifest] = (copy / "saved" / "links").iterdir()
    m = marshal.loads(manifest.read_bytes())
    first = next(k for k, v in m["files"].items() if v[0] == "object")
    m["files"][first] = ("object", str(tmp_path / "evicted-object"), *m["files"][first][2:])
    manifest.write_bytes(marshal.dumps(m))
    done = bench(project, env2)
    assert done.returncode == 1
    assert "is gone" in done.stderr and "save the link again" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    # a manifest that is not one
    bad = tmp_path / "bad.marshal"
    bad.write_bytes(b"\x00garbage")
    done = bench(project, env, str(bad))
    assert done.returncode == 1 and "not a saved link" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_html_report_shows_the_bench_results(saved, tmp_path):
    import html
    project, env, output = saved
    assert bench(project, env, "--linker", "lld").returncode == 0
    done = linkwrap("report", "--html", tmp_path / "r.html", cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "r.html").read_text()
    section = text[text.index("<h2>Bench results</h2>"):]
    assert f"<h3>{html.escape(output)}</h3>" in section
    assert html.escape(linkers.discover(None, env)["lld"].label) in section and "× fastest" in section


def test_ratios_to_the_default_are_paired_by_round_and_decide_the_choice(saved):
    from linkwrap.bench.replay import median_ci
    project, env, output = saved
    # only this test's measurements decide: the earlier tests' are dropped from the link path's cache
    from linkwrap.evidence.measured import CACHE
    for found in Path(env["LINKWRAP_HOME"]).rglob(CACHE):
        shutil.rmtree(found)
    done = bench(project, env, "--linker", "rust-lld", "--linker", "mold", "--linker", "bfd")
    assert done.returncode == 0, done.stderr
    [report] = json.loads(done.stdout)
    rows = {(r["linker"], r["variant"]): r for r in report["rows"]}
    base = rows["rust-lld", "fresh"]
    assert base["ratio"] is None and base["ratio_vs"] is None
    assert len(base["times_ms"]) == report["rounds"]
    for (name, variant), r in rows.items():
        if (name, variant) == ("rust-lld", "fresh"):
            continue
        assert r["failed"] is None and r["ratio_vs"] == "rust-lld", r
        # the interval is that of the per-round ratios (same round, both timed), not of two medians
        ratios = [t / b for t, b in zip(r["times_ms"], base["times_ms"]) if t is not None and b is not None]
        assert len(ratios) >= 3
        assert (r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]) == pytest.approx(median_ci(ratios))
        assert r["ratio_ci_low"] <= r["ratio"] <= r["ratio_ci_high"]
    # the choice: a linker only when its paired interval lies wholly below 1, else rustc's default
    done = linkwrap("explain", "--json", output, cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    explained = json.loads(done.stdout)
    measured = explained["decision"]["measured"]
    fresh = [r for r in measured["rows"] if r["variant"] == "fresh" and r["ratio_vs"] == "rust-lld"]
    assert {r["linker"] for r in fresh} == {"mold", "bfd"}
    for r in fresh:
        got = rows[r["linker"], "fresh"]
        assert (r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]) == pytest.approx(
            (got["ratio"], got["ratio_ci_low"], got["ratio_ci_high"]), abs=1e-3)
    clear = [r for r in fresh if r["ratio_ci_high"] < 1]
    expected = min(clear, key=lambda r: r["median_ms"])["linker"] if clear else "rust-lld"
    assert explained["decision"]["linker"] == expected, explained["decision"]["reasons"]
    assert measured["used"]
    assert any(("paired by round" if clear else "no paired ratio to it is entirely below 1") in why
               for why in explained["decision"]["reasons"]), explained["decision"]["reasons"]
    # the same figures, as hyperfine says them
    done = linkwrap("bench", "--budget", "3", "--linker", "rust-lld", "--linker", "mold", cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    assert "Compared with rust-lld" in done.stdout
    assert re.search(r"mold [\d.]+ ran \d+\.\d\d ± \d+\.\d\d times (faster|slower) than rust-lld", done.stdout), done.stdout
