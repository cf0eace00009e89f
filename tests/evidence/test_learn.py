"""Learning from relinks: real relinks of one output converge to the faster of two real linkers.

mold is made measurably slower for this output (zlib-compressing a 16 MB debug section through
`[linkers.mold] extra_flags`), so the static order's first choice (mold) is the wrong one here;
lld stays fast. With two candidates and learn.NEED = 3 timed relinks each, the bound is:
link 1 takes the static order, tries alternate with it, and from relink 2 * NEED + 1 = 7 on every
link uses the fastest (until the periodic re-check, one link in learn.EXPLORE_EVERY).
"""
import json
import os
import subprocess

from clirun import linkwrap
from linkwrap.evidence import learn

RELINKS = 10


def comment(path):
    return subprocess.run(["readelf", "-p", ".comment", str(path)], capture_output=True, text=True).stdout


def test_relinks_converge_to_the_faster_linker_with_bounded_exploration(tmp_path, lw_home, linkwrap_cc):
    (tmp_path / "main.c").write_text("int main(void) { return 0; }\n")
    subprocess.run(["cc", "-c", "main.c"], cwd=tmp_path, check=True)
    (tmp_path / "blob.bin").write_bytes(os.urandom(16 << 20))   # incompressible: zlib works hard
    (tmp_path / "junk.s").write_text('.section .debug_junk,"",@progbits\n.incbin "blob.bin"\n')
    subprocess.run(["as", "junk.s", "-o", "junk.o"], cwd=tmp_path, check=True)
    (tmp_path / "linkwrap.toml").write_text(
        'forbid = ["wild", "rust-lld", "bfd", "gold"]\n'
        '[linkers.mold]\nextra_flags = ["--compress-debug-sections=zlib"]\n')
    # Saving off: no replay can measure this output, so its real links are the tries.
    env = {**os.environ, "LINKWRAP_HOME": str(lw_home), "LINKWRAP_SAVE": "0"}
    env.pop("LINKWRAP_LINKER", None)
    link = ["main.o", "junk.o", "-o", "app"]
    seen = []
    for i in range(RELINKS):
        d = json.loads(linkwrap("explain", "--json", "--", *link, cwd=tmp_path, env=env).stdout)["decision"]
        done = subprocess.run([linkwrap_cc, *link], cwd=tmp_path, env=env, capture_output=True)
        assert done.returncode == 0 and done.stderr == b"", done.stderr
        ran = "lld" if "LLD" in comment(tmp_path / "app") else "mold"
        assert ran == d["linker"], (i, d["reasons"])          # explain says what the link does
        seen.append((ran, d["learned"]["exploring"]))
    assert seen[0] == ("mold", False)                          # the first link: the static order
    tries = [i for i, (_, exploring) in enumerate(seen) if exploring]
    assert all(b - a > 1 for a, b in zip(tries, tries[1:])), seen   # never two tries in a row
    assert len(tries) <= 2 * learn.NEED, seen
    converged = 2 * learn.NEED
    assert all(ran == "lld" and not exploring for ran, exploring in seen[converged:]), seen
    final = json.loads(linkwrap("explain", "--json", "--", *link, cwd=tmp_path, env=env).stdout)["decision"]
    assert final["learned"]["used"] and final["learned"]["links"] == RELINKS
    c = final["learned"]["candidates"]
    assert c["lld"]["median_ms"] < c["mold"]["median_ms"]
    assert any("learnt fastest from this output's relinks" in r for r in final["reasons"]), final["reasons"]
    # The summary marks each try, and says why it was one.
    text = linkwrap("summary", "--all", cwd=tmp_path, env={**env, "COLUMNS": "200"}).stdout
    assert text.count("ok, a try") == len(tries), text
    said = " ".join(text.split())
    n = f"{len(tries)} link" + ("s" if len(tries) > 1 else "")
    assert f"A try: {n} ran a linker that linkwrap is timing on that output" in said, text
    assert "mold" in said.split("A try:")[1] and "exploring on this output" in said, text


def test_learning_can_be_turned_off(tmp_path, lw_home, linkwrap_cc, big_hello_obj):
    (tmp_path / "linkwrap.toml").write_text("[choice]\nlearn = false\n")
    env = {**os.environ, "LINKWRAP_HOME": str(lw_home)}
    for _ in range(3):
        assert subprocess.run([linkwrap_cc, "hello.o", "-o", "hello"], cwd=tmp_path, env=env).returncode == 0
        assert "mold" in comment(tmp_path / "hello")
    d = json.loads(linkwrap("explain", "--json", "--", "hello.o", "-o", "hello", cwd=tmp_path, env=env).stdout)
    assert d["decision"]["learned"] is None
    assert not (lw_home / "cache" / "learned").exists()


def test_a_small_link_keeps_no_time_of_its_own(tmp_path, lw_home, linkwrap_cc, hello_obj):
    # Its choice is the small links' fixed order (docs/policy.md 1.3), which no evidence changes: its
    # relinks' times were rewritten into a file on every link for nothing.
    env = {**os.environ, "LINKWRAP_HOME": str(lw_home)}
    for _ in range(3):
        assert subprocess.run([linkwrap_cc, "hello.o", "-o", "hello"], cwd=tmp_path, env=env).returncode == 0
    d = json.loads(linkwrap("explain", "--json", "--", "hello.o", "-o", "hello", cwd=tmp_path, env=env).stdout)
    assert d["probe"]["small_inputs"] is True, d["probe"]
    assert d["decision"]["learned"] is None
    learned = lw_home / "cache" / "learned"
    assert not learned.exists() or not list(learned.iterdir()), list(learned.iterdir())


def test_a_small_links_failed_linker_is_still_remembered_and_passed_over(tmp_path, lw_home, linkwrap_cc, hello_obj,
                                                                          wild):
    # wild comes first on a small link; given a flag it rejects, its try fails and the link is redone
    # as asked: its failure is kept (no time is), and the next links of this output go without it.
    (tmp_path / "linkwrap.toml").write_text('[linkers.wild]\nextra_flags = ["--no-such-flag"]\n')
    env = {**os.environ, "LINKWRAP_HOME": str(lw_home)}
    chosen = []
    for _ in range(3):
        d = json.loads(linkwrap("explain", "--json", "--", "hello.o", "-o", "hello", cwd=tmp_path, env=env).stdout)
        chosen.append((d["decision"]["linker"], d["decision"]["failed"], d["decision"]["learned"]))
        done = subprocess.run([linkwrap_cc, "hello.o", "-o", "hello"], cwd=tmp_path, env=env, capture_output=True)
        assert done.returncode == 0 and done.stderr == b"", done.stderr
    assert chosen[0][:2] == ("wild", []), chosen
    assert all(linker == "bfd" and failed == ["wild"] and learned is None for linker, failed, learned in chosen[1:]), chosen


def test_a_candidate_that_failed_on_an_output_is_never_tried_there_again(tmp_path, lw_home, linkwrap_cc,
                                                                         big_hello_obj):
    # lld is given a flag it rejects: its try fails, the link is redone as asked, and lld is out
    (tmp_path / "linkwrap.toml").write_text(
        'forbid = ["wild", "rust-lld", "bfd", "gold"]\n[linkers.lld]\nextra_flags = ["--no-such-flag"]\n')
    # Saving off: no replay can measure this output, so its real links are the tries.
    env = {**os.environ, "LINKWRAP_HOME": str(lw_home), "LINKWRAP_SAVE": "0"}
    reasons = []
    for _ in range(4):
        d = json.loads(linkwrap("explain", "--json", "--", "hello.o", "-o", "hello", cwd=tmp_path, env=env).stdout)
        reasons.append((d["decision"]["linker"], d["decision"]["learned"]["failed"]))
        assert subprocess.run([linkwrap_cc, "hello.o", "-o", "hello"], cwd=tmp_path, env=env).returncode == 0
    assert reasons[1][0] == "lld"                      # the second link tried lld
    assert all(linker == "mold" and failed == ["lld"] for linker, failed in reasons[2:]), reasons


# --- bounded like the records: [records] keep_days and max_learned ---------------------------

def fill(where, n, age_days=0.0, start=0):
    """n evidence files (any content: pruning goes by name and age), aged by their mtime."""
    import time
    where.mkdir(parents=True, exist_ok=True, mode=0o700)
    now = time.time()
    for i in range(start, start + n):
        p = where / f"{i:08x}.marshal"
        p.write_bytes(b"x")
        t = now - age_days * 86400 - (n - i)    # the lower the number, the longer ago linked
        os.utime(p, (t, t))
    return sorted(p.name for p in where.iterdir())


def test_a_link_that_starts_new_evidence_bounds_the_directory(tmp_path, lw_home, linkwrap_cc, big_hello_obj):
    learned = lw_home / "cache" / "learned"
    from linkwrap.request.config import RETENTION
    old = fill(learned, RETENTION["max_learned"] + 1)
    (tmp_path / "linkwrap.toml").write_text("[records]\nmax_learned = 10\n")
    done = subprocess.run([linkwrap_cc, "hello.o", "-o", "hello"], cwd=tmp_path, capture_output=True)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    left = sorted(p.name for p in learned.iterdir())
    assert len(left) == 10, len(left)
    assert set(old[-9:]) < set(left)            # the most recently linked kept, the oldest gone first
    assert len(set(left) - set(old)) == 1       # and this link's own evidence


def test_a_link_below_the_default_bound_prunes_nothing(tmp_path, lw_home, linkwrap_cc, big_hello_obj):
    learned = lw_home / "cache" / "learned"
    old = fill(learned, 50)
    (tmp_path / "linkwrap.toml").write_text("[records]\nmax_learned = 10\n")
    assert subprocess.run([linkwrap_cc, "hello.o", "-o", "hello"], cwd=tmp_path).returncode == 0
    assert len(list(learned.iterdir())) == 51 and set(old) < {p.name for p in learned.iterdir()}


def test_commands_prune_by_keep_days_and_count(tmp_path, lw_home):
    learned = lw_home / "cache" / "learned"
    stale = fill(learned, 3, age_days=10)
    fresh = fill(learned, 6, start=100)
    outside = tmp_path / "not-evidence.marshal"
    outside.write_bytes(b"keep")
    (learned / "link.marshal").symlink_to(outside)   # never followed: at most the link itself goes
    (tmp_path / "linkwrap.toml").write_text("[records]\nkeep_days = 7\nmax_learned = 4\n")
    done = linkwrap("summary", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    left = {p.name for p in learned.iterdir()}
    assert not set(stale) & left
    assert left <= set(fresh) | {"link.marshal"} and len(left) == 4
    assert set(fresh[-3:]) <= left
    assert outside.read_bytes() == b"keep"


def test_learnt_evidence_per_output_keeps_the_newest_samples_only(tmp_path, lw_home, linkwrap_cc, big_hello_obj):
    links = 3 * learn.KEEP   # more than KEEP for the linker that keeps the output
    for _ in range(links):
        assert subprocess.run([linkwrap_cc, "hello.o", "-o", "hello"], cwd=tmp_path).returncode == 0
    import marshal
    [f] = (lw_home / "cache" / "learned").iterdir()
    data = marshal.loads(f.read_bytes())
    assert data["links"] == links
    assert max(len(s) for s in data["samples"].values()) == learn.KEEP, data["samples"]


def test_a_link_that_compiles_too_teaches_no_linker_and_tries_none(tmp_path, lw_home, linkwrap_cc):
    # `cc -o app main.c` times the compile with the link: no linker is judged (nor explored for) by
    # it, so every relink keeps the static order's first choice and the evidence holds no time.
    from linkrecords import not_small
    (tmp_path / "main.c").write_text(not_small("int main(void) { return 0; }\n"))  # a small link teaches nothing
    (tmp_path / "linkwrap.toml").write_text('forbid = ["wild", "rust-lld", "bfd", "gold"]\n')
    env = {**os.environ, "LINKWRAP_HOME": str(lw_home)}
    for _ in range(4):
        done = subprocess.run([linkwrap_cc, "main.c", "-o", "app"], cwd=tmp_path, env=env, capture_output=True)
        assert done.returncode == 0 and done.stderr == b"", done.stderr
        assert "mold" in comment(tmp_path / "app")
    d = json.loads(linkwrap("explain", "--json", "--", "main.c", "-o", "app", cwd=tmp_path, env=env).stdout)
    learned = d["decision"]["learned"]
    assert learned["links"] == 4 and learned["candidates"] == {} and learned["compiles"] is True
    text = linkwrap("explain", "app", cwd=tmp_path, env={**env, "COLUMNS": "200"}).stdout
    assert "no times: the driver compiles sources in this link too" in text, text
    assert "compile+link (the driver compiled sources too)" in text, text


def test_a_link_that_compiles_too_is_not_saved_for_bench(tmp_path, lw_home, linkwrap_cc):
    (tmp_path / "main.c").write_text("int main(void) { return 0; }\n")
    env = {**os.environ, "LINKWRAP_HOME": str(lw_home), "LINKWRAP_SAVE": "1"}
    assert subprocess.run([linkwrap_cc, "main.c", "-o", "app"], cwd=tmp_path, env=env).returncode == 0
    subprocess.run(["cc", "-c", "main.c"], cwd=tmp_path, check=True)
    assert subprocess.run([linkwrap_cc, "main.o", "-o", "linked"], cwd=tmp_path, env=env).returncode == 0
    done = linkwrap("bench", "--budget", "1", "--linker", "mold", "./app", cwd=tmp_path, env=env)
    assert done.returncode == 1 and "app: no saved link of this output" in done.stderr, done.stderr
    done = linkwrap("bench", "--budget", "1", "--linker", "mold", "./linked", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr   # a link alone is saved, and `./` names it too


def test_a_learned_directory_planted_as_a_symlink_is_neither_read_nor_written(tmp_path, lw_home, linkwrap_cc,
                                                                             big_hello_obj):
    assert subprocess.run([linkwrap_cc, "hello.o", "-o", "hello"], cwd=tmp_path).returncode == 0
    learned = lw_home / "cache" / "learned"
    [f] = learned.iterdir()
    victim = tmp_path / "victim"      # a directory of this user's, where another user's link points
    learned.rename(victim)
    learned.symlink_to(victim)
    before = {p.name: p.read_bytes() for p in victim.iterdir()}
    done = subprocess.run([linkwrap_cc, "hello.o", "-o", "hello"], cwd=tmp_path, capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")   # the link is not affected
    assert {p.name: p.read_bytes() for p in victim.iterdir()} == before
    d = json.loads(linkwrap("explain", "--json", "--", "hello.o", "-o", "hello", cwd=tmp_path).stdout)
    assert not (d["decision"]["learned"] or {}).get("links")   # the planted evidence is not read


def test_while_the_output_is_saved_its_real_links_are_no_tries(tmp_path, lw_home, linkwrap_cc, big_hello_obj):
    # The same output, saving on (the default): a replay can measure its candidates, so none is tried on
    # the user's links; with saving off (the tests above set LINKWRAP_SAVE=0) the second link tries.
    from linkwrap.record import save
    (tmp_path / "linkwrap.toml").write_text('forbid = ["wild", "rust-lld", "bfd", "gold"]\n')
    # Empty, not popped: clirun.linkwrap merges os.environ back, and CI runs this suite with CI set.
    env = {**os.environ, "LINKWRAP_HOME": str(lw_home), "LINKWRAP_SAVE": "", "CI": ""}
    seen = []
    for _ in range(4):
        d = json.loads(linkwrap("explain", "--json", "--", "hello.o", "-o", "hello", cwd=tmp_path, env=env).stdout)
        seen.append((d["decision"]["linker"], d["decision"]["replayable"], d["decision"]["reasons"]))
        done = subprocess.run([linkwrap_cc, "hello.o", "-o", "hello"], cwd=tmp_path, env=env, capture_output=True)
        assert done.returncode == 0 and done.stderr == b"", done.stderr
        assert "mold" in comment(tmp_path / "hello")
    assert [m["output"] for m in save.all_saved()] == [str(tmp_path / "hello")]
    assert seen[0][1] is False and all(replayable for _, replayable, _ in seen[1:]), seen
    assert not any(learn.EXPLORING in r for _, _, reasons in seen for r in reasons), seen
    assert all(any("this output's link is saved" in r for r in reasons) for _, _, reasons in seen[1:]), seen
    d = json.loads(linkwrap("explain", "--json", "--", "hello.o", "-o", "hello", cwd=tmp_path, env=env).stdout)
    assert d["decision"]["learned"]["explored"] == 0 and d["decision"]["learned"]["links"] == 4
    assert d["decision"]["learned"]["candidates"]["mold"]["timed"] == 4   # the relinks still teach


# --- incremental links by linkwrap's own linker: their own samples (choice/incremental.py) -------

def _incremental_samples(lw_home, tmp_path):
    import marshal
    learned = lw_home / "cache" / "learned"
    files = list(learned.iterdir()) if learned.exists() else []
    assert len(files) <= 1, files
    if not files:
        return None
    with open(files[0], "rb") as f:
        data = marshal.load(f)
    assert data["key"] == (str(tmp_path), str(tmp_path / "hello"))
    return data.get("incremental"), data["samples"]


def test_an_incremental_link_keeps_its_time_apart_whoever_forced_it(tmp_path, lw_home, linkwrap_cc, big_hello_obj):
    env = {**os.environ, "LINKWRAP_HOME": str(lw_home), "LINKWRAP_SAVE": "0"}
    for extra in ({"LINKWRAP_INCREMENTAL": "1"}, {"LINKWRAP_LINKER": "python", "LINKWRAP_LD_INCREMENTAL": "1"}):
        _rebuilt(big_hello_obj)
        assert subprocess.run([linkwrap_cc, "hello.o", "-o", "hello"], cwd=tmp_path, env={**env, **extra}).returncode == 0
    inc, full = _incremental_samples(lw_home, tmp_path)
    assert len(inc) == 2 and all(t > 0 for t in inc) and full == {}   # no full linker's time among them
    import shutil
    shutil.rmtree(tmp_path / ".hello.lwinc")   # no base to patch beside it: a full linker links (else a patch is tried)
    assert subprocess.run([linkwrap_cc, "hello.o", "-o", "hello"], cwd=tmp_path, env=env).returncode == 0
    inc, full = _incremental_samples(lw_home, tmp_path)
    assert len(inc) == 2 and sum(len(s) for s in full.values()) == 1   # a full link's time goes with the others


def _rebuilt(obj):
    """obj written again, as a compiler does: the same bytes in a new file."""
    data = obj.read_bytes()
    obj.unlink()
    obj.write_bytes(data)


def test_a_relink_of_the_very_same_inputs_is_no_incremental_sample(tmp_path, lw_home, linkwrap_cc, big_hello_obj):
    """A patch that finds nothing to place costs a fraction of an edit's: only relinks whose inputs
    changed since this output's last link (a file written again) time incremental relinking."""
    env = {**os.environ, "LINKWRAP_HOME": str(lw_home), "LINKWRAP_SAVE": "0", "LINKWRAP_INCREMENTAL": "1"}

    def relink():
        assert subprocess.run([linkwrap_cc, "hello.o", "-o", "hello"], cwd=tmp_path, env=env).returncode == 0
        assert subprocess.run([str(tmp_path / "hello")], capture_output=True, text=True).stdout == "hello\n"
        return len(_incremental_samples(lw_home, tmp_path)[0] or ())

    assert relink() == 1            # the first: a full incremental link
    assert relink() == 1            # nothing changed: not timed
    os.utime(big_hello_obj)         # touched: another identity, a patch to try
    assert relink() == 2
    _rebuilt(big_hello_obj)
    assert relink() == 3
    assert relink() == 3


def test_under_learn_false_no_incremental_time_is_kept_either(tmp_path, lw_home, linkwrap_cc, big_hello_obj):
    (tmp_path / "linkwrap.toml").write_text("[choice]\nlearn = false\n")
    env = {**os.environ, "LINKWRAP_HOME": str(lw_home), "LINKWRAP_INCREMENTAL": "1"}
    for _ in range(2):
        assert subprocess.run([linkwrap_cc, "hello.o", "-o", "hello"], cwd=tmp_path, env=env).returncode == 0
    assert (tmp_path / ".hello.lwinc").is_dir()         # linked incrementally all the same
    assert _incremental_samples(lw_home, tmp_path) is None
