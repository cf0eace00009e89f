"""Incremental relinks chosen (or not) through the real wrapper: real gcc objects linked by the real
linkwrap-cc script, linkwrap's own linker leaving its state (`.<output>.lwinc/`) only where the
policy chose an incremental link (choice/incremental.py), whatever the environment passes on."""
import json
import os
import subprocess

from clirun import linkwrap
from linkrecords import cc_link, db_rows, not_small

MAIN = 'extern int f(int);\nint main(void){return f(2) == BODY ? 0 : 1;}\n'
LIB = 'int f(int x){return x * 2;}\n'


def project(root, body="4"):
    """main.o and lib.o in root (no small link: its order is fixed and not learnt from); -> root."""
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "main.c"), "w") as f:
        f.write(not_small(MAIN.replace("BODY", body)))
    with open(os.path.join(root, "lib.c"), "w") as f:
        f.write(LIB)
    subprocess.run(["gcc", "-g", "-c", "main.c", "lib.c"], cwd=root, check=True)
    return root


def link(root, out, env):
    done = cc_link(["main.o", "lib.o", "-o", out], root, env={"LINKWRAP_SAVE": "0", **env})
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert subprocess.run([os.path.join(root, out)]).returncode == 0   # the program is right
    return done


def state(root, out):
    """The incremental state's last decision beside out ("patched ...", "full: ..."), or None."""
    d, name = os.path.split(os.path.join(root, out))
    try:
        with open(os.path.join(d, f".{name}.lwinc", "last")) as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


def explain(root, out, env):
    done = linkwrap("explain", "--json", "--", "main.o", "lib.o", "-o", out, cwd=root,
                    env={"LINKWRAP_SAVE": "0", **env})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["decision"]


def test_asked_for_it_links_incrementally_and_times_it(tmp_path, lw_home):
    root = project(str(tmp_path / "p"))
    env = {"LINKWRAP_INCREMENTAL": "1"}
    d = explain(root, "app", env)
    assert d["incremental"] and d["linker"] == "python", d["reasons"]
    assert any("LINKWRAP_INCREMENTAL=1 asks for it" in r for r in d["reasons"]), d["reasons"]
    link(root, "app", env)
    assert state(root, "app") == "full: no incremental state beside the output"
    project(root)                  # rebuilt: the same code, new files
    link(root, "app", env)
    assert state(root, "app").startswith("patched"), state(root, "app")
    rows = db_rows(lw_home)
    assert [r["linker"].split()[0] for r in rows] == ["python", "python"]
    # the incremental links are the measurement that may choose them later
    d = explain(root, "app", {})
    assert d["learned"]["incremental"]["timed"] == 2, d["learned"]
    # and with its base ready beside the output, the next relink tries a patch, the full linker standing by
    assert d["incremental"] and any("trying a patch, its base is ready" in r for r in d["reasons"]), d["reasons"]


def test_linkwrap_incremental_0_wins_over_every_way_of_forcing_it(tmp_path, lw_home):
    root = project(str(tmp_path / "p"))
    with open(os.path.join(root, "linkwrap.toml"), "w") as f:
        f.write("[incremental]\nenabled = true\n")
    forcing = {"LINKWRAP_INCREMENTAL": "0", "LINKWRAP_LD_INCREMENTAL": "1"}
    d = explain(root, "app", forcing)
    assert not d["incremental"] and d["linker"] != "python", d["reasons"]
    assert "incremental relinking off (LINKWRAP_INCREMENTAL=0)" in d["reasons"], d["reasons"]
    link(root, "app", forcing)
    # Even where linkwrap's own linker is forced, and LINKWRAP_LD_INCREMENTAL=1 reaches it: it links
    # in full (the wrapper takes the variable away), no state beside the output.
    link(root, "app", {**forcing, "LINKWRAP_LINKER": "python"})
    assert state(root, "app") is None
    assert [r["linker"].split()[0] != "python" for r in db_rows(lw_home)] == [True, False]


def test_a_release_looking_output_is_never_incremental(tmp_path, lw_home):
    root = project(str(tmp_path / "p"))
    out = "target/release/deps/app-0123"
    os.makedirs(os.path.join(root, "target", "release", "deps"))
    for env in ({"LINKWRAP_INCREMENTAL": "1"}, {"LINKWRAP_LINKER": "python", "LINKWRAP_LD_INCREMENTAL": "1"}):
        d = explain(root, out, env)
        assert not d["incremental"], d["reasons"]
        assert any(r == "no incremental relinking for a release or LTO build: the output is in a release/ directory"
                   for r in d["reasons"]), d["reasons"]
        link(root, out, env)
        assert state(root, out) is None
    # The same objects linked to a debug output are: the path, not the objects, said "release".
    os.makedirs(os.path.join(root, "target", "debug"))
    link(root, "target/debug/app", {"LINKWRAP_INCREMENTAL": "1"})
    assert state(root, "target/debug/app") == "full: no incremental state beside the output"


def test_explain_follows_the_measurement_and_the_link_does_what_it_said(tmp_path, lw_home):
    """Full relinks chosen by linkwrap, then incremental ones asked for: with nothing forcing it, the
    policy compares the two medians of this output. Which one wins is the machine's to say (no timed
    assertion); that explain's choice follows the figures it shows, and the link does what it says,
    is not."""
    from linkwrap.evidence.learn import NEED
    root = project(str(tmp_path / "p"))
    for _ in range(2 * NEED):
        link(root, "app", {})
    for _ in range(NEED):
        project(root)   # an edit-build loop's relinks: a relink of the very same inputs times no patch
        link(root, "app", {"LINKWRAP_INCREMENTAL": "1"})
    d = explain(root, "app", {})
    inc = d["learned"]["incremental"]
    full = {n: c["median_ms"] for n, c in d["learned"]["candidates"].items() if c["timed"] >= NEED}
    assert inc["timed"] == NEED and full, d["learned"]
    assert d["incremental"] == (inc["median_ms"] < min(full.values())), d
    said = [r for r in d["reasons"] if "incremental" in r]
    assert len(said) == 1 and ("measured faster" in said[0]) == d["incremental"], said
    last = os.path.join(root, ".app.lwinc", "last")
    before = os.stat(last)
    project(root)
    link(root, "app", {})
    assert (db_rows(lw_home)[-1]["linker"].split()[0] == "python") == d["incremental"]
    after = os.stat(last)   # only an incremental link writes it
    assert ((after.st_ino, after.st_mtime_ns) != (before.st_ino, before.st_mtime_ns)) == d["incremental"]


def evidence(root, out, full_ms, inc_ms):
    """Rewrite the evidence file of root's out as its relinks would have left it, saying what this
    machine's tiny links cannot (an incremental relink faster than wild's, or slower); -> its path."""
    import marshal
    from linkwrap.evidence import learn
    from linkwrap.request import args
    request = args.parse(["main.o", "lib.o", "-o", out], driver="cc", environ={}, cwd=root)
    path = learn._path(request)
    data = learn._read(path, request)
    data["samples"] = {"wild": [full_ms] * learn.NEED, "mold": [full_ms * 2] * learn.NEED}
    data["incremental"] = [inc_ms] * learn.NEED
    with open(path, "wb") as f:
        marshal.dump(data, f)
    return path


def test_records_that_show_it_faster_choose_it_and_slower_ones_take_it_back(tmp_path, lw_home):
    """The real link follows this output's evidence, in both directions, and LINKWRAP_INCREMENTAL=0
    wins over it."""
    import marshal
    from linkwrap.evidence import learn
    root = project(str(tmp_path / "p"))
    link(root, "app", {})
    path = evidence(root, "app", 400.0, 100.0)
    d = explain(root, "app", {})
    assert d["incremental"] and any("measured faster than the best full linker" in r for r in d["reasons"]), d
    link(root, "app", {})
    # chosen, but only to patch: with no base beside the output yet, the full linker linked it (and
    # linkwrap's own full link, many times its time, did not run on the build's path)
    row = db_rows(lw_home)[-1]
    assert row["linker"].split()[0] != "python" and row["exit_status"] == 0 and not row["fell_back"], row
    assert any("could not patch (no incremental state beside the output)" in r
               for r in json.loads(row["reasons"])), row["reasons"]
    assert state(root, "app") is None
    # the link's own time (the refusal and the full link) joined the evidence: 4 samples now
    with open(path, "rb") as f:
        assert len(marshal.load(f)["incremental"]) == learn.NEED + 1
    evidence(root, "app", 100.0, 400.0)         # the incremental relinks turned slower: back to the full linker
    link(root, "app", {})
    assert db_rows(lw_home)[-1]["linker"].split()[0] != "python"
    # and LINKWRAP_INCREMENTAL=0 wins over a measurement that chooses it
    evidence(root, "app", 400.0, 100.0)
    assert not explain(root, "app", {"LINKWRAP_INCREMENTAL": "0"})["incremental"]
    link(root, "app", {"LINKWRAP_INCREMENTAL": "0"})
    assert db_rows(lw_home)[-1]["linker"].split()[0] != "python"


def test_explain_of_cargos_uplifted_binary_follows_the_evidence_of_the_output_rustc_links(tmp_path, lw_home):
    """`linkwrap explain target/debug/app` decides for deps/app-<hash>, the output rustc links (and
    Cargo hard-links to target/debug/app): its relinks' evidence, not the uplifted name's."""
    root = project(str(tmp_path / "p"))
    os.makedirs(os.path.join(root, "target", "debug", "deps"))
    deps = "target/debug/deps/app-0123456789abcdef"
    link(root, deps, {})
    os.link(os.path.join(root, deps), os.path.join(root, "target", "debug", "app"))
    evidence(root, deps, 400.0, 100.0)
    done = linkwrap("explain", "--json", "target/debug/app", cwd=root, env={"LINKWRAP_SAVE": "0"})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["note"] and report["request"]["output"].endswith(deps), report["note"]
    d = report["decision"]
    assert d["incremental"] and any("measured faster than the best full linker" in r for r in d["reasons"]), d
