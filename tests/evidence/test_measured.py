"""Measurements flip a real link's choice, and stop counting when the linker binary changes.

The measurement cache is written as `linkwrap bench` writes it (measured.add_rows), with the
machine key, filesystem and linker binaries that discovery and the probe report here.
"""
import json
import os
import shutil
import subprocess

from clirun import linkwrap
from conftest import tool
from linkwrap.evidence import measured
from linkwrap.request import args
from linkwrap.facts import linkers, probe


def measure(env, cwd, output, lld_ms, mold_ms):
    req = args.parse(["hello.o", "-o", str(output)], driver="cc", environ=env, cwd=str(cwd))
    facts = probe.snapshot(req, env)
    found = linkers.discover(req, env)
    rows = []
    for name, ms in (("lld", lld_ms), ("mold", mold_ms)):
        info = found[name]
        rows.append(measured.Row(measured.machine_key(facts.cpus), facts.fs, None, str(cwd), measured.output_key(str(output)),
                                 req.kind, facts.input_bytes, name, info.label, info.path,
                                 os.stat(info.path).st_mtime_ns, "fresh", ms, ms * 0.98, ms * 1.02, 10, 5000,
                                 "2026-11-30", None))
    old = os.environ.get("LINKWRAP_HOME")
    os.environ["LINKWRAP_HOME"] = env["LINKWRAP_HOME"]
    try:
        measured.add_rows(rows)
    finally:
        if old is None:
            del os.environ["LINKWRAP_HOME"]
        else:
            os.environ["LINKWRAP_HOME"] = old


def comment(path):
    return subprocess.run(["readelf", "-p", ".comment", str(path)], capture_output=True, text=True).stdout


def test_measurements_flip_a_real_link_until_the_linker_binary_changes(tmp_path, lw_home, linkwrap_cc,
                                                                      big_hello_obj):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    lld_copy = bindir / "ld.lld"
    shutil.copy2(os.path.realpath(tool("ld.lld-16")), lld_copy)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "LINKWRAP_HOME": str(lw_home)}
    out = tmp_path / "hello"

    # nothing measured: a C link's static order starts with mold (the driver's ld is GNU ld; no small link)
    before = json.loads(linkwrap("explain", "--json", "--", "hello.o", "-o", "hello", cwd=tmp_path, env=env).stdout)
    assert before["decision"]["linker"] == "mold" and before["decision"]["measured"] is None

    measure(env, tmp_path, out, lld_ms=10.0, mold_ms=30.0)
    data = json.loads(linkwrap("explain", "--json", "--", "hello.o", "-o", "hello", cwd=tmp_path, env=env).stdout)
    d = data["decision"]
    assert d["linker"] == "lld" and d["path"] == str(lld_copy)
    assert d["measured"]["used"] and d["measured"]["scope"] == "this output"
    assert any("measured fastest here for this output" in r for r in d["reasons"]), d["reasons"]
    # and the link itself follows
    done = subprocess.run([linkwrap_cc, "hello.o", "-o", "hello"], cwd=tmp_path, env=env, capture_output=True)
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    assert "LLD" in comment(out)
    assert subprocess.run([str(out)], capture_output=True, text=True).stdout == "hello\n"

    # the lld binary changes (an upgrade, here a touch): its measurement no longer counts
    st = os.stat(lld_copy)
    os.utime(lld_copy, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    d = json.loads(linkwrap("explain", "--json", "--", "hello.o", "-o", "hello", cwd=tmp_path, env=env).stdout)["decision"]
    assert d["linker"] == "mold", d["reasons"]
    assert not d["measured"]["used"]
    assert any("its binary changed since" in w for w in d["measured"]["ignored"]), d["measured"]


def test_overlapping_measurements_leave_the_static_order(tmp_path, lw_home, hello_obj):
    env = {**os.environ, "LINKWRAP_HOME": str(lw_home)}
    measure(env, tmp_path, tmp_path / "hello", lld_ms=29.8, mold_ms=30.0)   # CIs overlap
    d = json.loads(linkwrap("explain", "--json", "--", "hello.o", "-o", "hello", cwd=tmp_path, env=env).stdout)["decision"]
    assert d["linker"] == "mold"
    assert any("within the confidence interval" in r for r in d["reasons"]), d["reasons"]


def _row(project, output, linker="lld", ms=10.0):
    return measured.Row("machine x2", "ext4", None, project, output, "pie", 1 << 20, linker, linker,
                        "/usr/bin/" + linker, 1, "fresh", ms, ms, ms, 10, 1000, "2026-12-02", None)


def _projects_in_one_shard(n):
    by_shard = {}
    for i in range(100 * n):
        project = f"/w/p{i}"
        by_shard.setdefault(measured.shard(project), []).append(project)
        if len(by_shard[measured.shard(project)]) == n:
            return by_shard[measured.shard(project)]
    raise AssertionError("no shard got n projects")


def test_a_link_reads_only_its_projects_shard_and_another_projects_results_are_not_measured_here(lw_home):
    a, b = _projects_in_one_shard(2)
    other = next(f"/w/q{i}" for i in range(1000) if measured.shard(f"/w/q{i}") != measured.shard(a))
    measured.add_rows([_row(a, a + "/app"), _row(other, other + "/app")])
    files = sorted(os.listdir(lw_home / "cache" / measured.CACHE))
    assert files == sorted({os.path.basename(measured.shard(p)) for p in (a, other)})
    assert [r.project for r in measured.load_rows(a)] == [a]
    assert {r.project for r in measured.load_rows()} == {a, other}
    req = args.parse(["x.o", "-o", a + "/app"], driver="cc", environ={}, cwd=a)
    assert [r.project for r in measured.applicable(req, None, {}).rows] == []  # nothing installed: ignored
    assert measured.applicable(req, None, {}).ignored
    # b shares a's shard but nothing was measured in it: as for a project in no shard at all.
    for project in (b, "/w/never"):
        assert measured.applicable(args.parse(["x.o", "-o", "app"], driver="cc", environ={}, cwd=project),
                                   None, {}) is None


def test_a_shard_keeps_its_newest_results(lw_home, monkeypatch):
    monkeypatch.setattr(measured, "MAX_ROWS", 3)
    (a,) = _projects_in_one_shard(1)
    measured.add_rows([_row(a, f"{a}/o{i}") for i in range(5)])
    assert [r.output for r in measured.load_rows(a)] == [f"{a}/o{i}" for i in (2, 3, 4)]
    measured.add_rows([_row(a, f"{a}/o3", ms=5.0)])   # a newer result replaces the one for that link
    assert [(r.output, r.median_ms) for r in measured.load_rows(a)] == [
        (f"{a}/o2", 10.0), (f"{a}/o4", 10.0), (f"{a}/o3", 5.0)]


def test_the_one_file_goes_under_what_a_shard_holds_already(lw_home):
    from linkwrap import cache
    (a,) = _projects_in_one_shard(1)
    measured.add_rows([_row(a, a + "/app", ms=5.0)])   # newer than the old file's result for that link
    cache.store(measured.LEGACY, {"format": measured.FORMAT, "rows": [
        tuple(_row(a, a + "/app", ms=50.0)), tuple(_row(a, a + "/other", ms=7.0))]})
    measured.migrate()
    assert not (lw_home / "cache" / measured.LEGACY).exists()
    assert sorted((r.output, r.median_ms) for r in measured.load_rows(a)) == [(a + "/app", 5.0), (a + "/other", 7.0)]


def test_an_earlier_linkwraps_one_file_is_read_then_split_into_shards(lw_home):
    from linkwrap import cache
    a, other = "/w/a", "/w/other"
    cache.store(measured.LEGACY, {"format": measured.FORMAT, "rows": [tuple(_row(a, a + "/app")),
                                                                      tuple(_row(other, other + "/app"))]})
    req = args.parse(["x.o", "-o", a + "/app"], driver="cc", environ={}, cwd=a)
    assert measured.applicable(req, None, {}) is not None   # read from the old file meanwhile
    measured.migrate()
    assert not (lw_home / "cache" / measured.LEGACY).exists()
    assert [r.project for r in measured.load_rows(a)] == [a]
    assert {r.project for r in measured.load_rows()} == {a, other}
    assert measured.applicable(req, None, {}) is not None
