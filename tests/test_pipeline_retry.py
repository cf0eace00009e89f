"""A link fails only when the caller's own command fails (pipeline.py's retry as asked), and a linker
that failed on an output is never chosen for it again (docs/policy.md 1.2). Real mold, lld, wild, GNU ld.

The case is a new-user trial's: a C program keeps structs in its own section `myset`, finds them
through `__start_myset`/`__stop_myset`, and links with --gc-sections. GNU ld (and mold, and wild 0.8)
keep the section; lld >= 13 collects it (-z start-stop-gc is its default) and fails with
"undefined symbol: __start_myset", which is not the caller's error.
"""
import json
import os
import subprocess

import pytest

from clirun import linkwrap
from conftest import script
from startstop import ITEMS_C, MAIN_C

LINK = ["gcc", "-Wl,--gc-sections", "-o", "loop", "a.o", "b.o"]


@pytest.fixture
def myset(tmp_path):
    (tmp_path / "a.c").write_text(MAIN_C)
    (tmp_path / "b.c").write_text(ITEMS_C)
    subprocess.run(["gcc", "-c", "a.c", "b.c"], cwd=tmp_path, check=True)
    return tmp_path


def spooled(lw_home):
    from linkwrap.store import spool
    from linkwrap.record.record import SPOOL
    with open(lw_home / SPOOL, "rb") as f:
        return spool.parse(f.read())[0]


def with_linker(name, argv, cwd):
    """argv (a gcc command line) with the -B directory linkwrap itself uses to run `name`."""
    from linkwrap.facts import linkers
    info = linkers.discover()[name]
    return subprocess.run([argv[0], f"-B{linkers.shim_dir(info)}", *argv[1:]], cwd=cwd, capture_output=True,
                          text=True)


def test_the_case_is_real_lld_fails_where_gnu_ld_and_mold_pass(myset, lw_home):
    assert subprocess.run(LINK, cwd=myset).returncode == 0
    assert subprocess.run(["./loop"], cwd=myset, capture_output=True, text=True).stdout == "3\n"
    assert with_linker("mold", LINK, myset).returncode == 0
    done = with_linker("lld", LINK, myset)
    assert done.returncode != 0 and "undefined symbol: __start_myset" in done.stderr, done.stderr


def test_a_linker_linkwrap_chose_that_fails_is_retried_as_asked_and_never_chosen_again(myset, lw_home, wild):
    # mold and wild forbidden: the static order's first fast linker is lld, which fails here.
    (myset / "linkwrap.toml").write_text('forbid = ["mold", "wild"]\n')
    env = wild.env(LINKWRAP_HOME=str(lw_home))
    for i in range(4):
        done = subprocess.run([script("linkwrap"), "launch", "--", *LINK], cwd=myset, env=env, capture_output=True, text=True)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), (i, done.stderr)
        assert subprocess.run(["./loop"], cwd=myset, capture_output=True, text=True).stdout == "3\n"
    recs = spooled(lw_home)
    assert len(recs) == 4
    assert [bool(r["fell_back"]) for r in recs] == [True, False, False, False], recs
    assert recs[0]["first_linker"].startswith("lld ") and "__start_myset" in recs[0]["first_error"]
    assert all(not (r["linker"] or "").startswith("lld") for r in recs[1:]), [r["linker"] for r in recs]
    d = json.loads(linkwrap("explain", "--json", "--", *LINK, cwd=myset, env=env).stdout)["decision"]
    assert d["learned"]["failed"] == ["lld"]
    assert d["linker"] != "lld"
    assert any("lld" in r and "failed on this output before" in r for r in d["reasons"]), d["reasons"]


@pytest.mark.parametrize("config", ['prefer = ["lld", "mold"]\n',
                                    'forbid = ["mold", "wild"]\n[choice]\nlearn = false\n'],
                         ids=["configured-prefer", "learning-off"])
def test_a_failed_linker_is_remembered_where_nothing_is_learnt(myset, lw_home, wild, config):
    # Neither a configured `prefer` nor `learn = false` keeps times, but both keep the failure:
    # without it lld would be tried, and fall back, on every link (the link passes at twice the time).
    (myset / "linkwrap.toml").write_text(config)
    env = wild.env(LINKWRAP_HOME=str(lw_home))
    for i in range(3):
        done = subprocess.run([script("linkwrap"), "launch", "--", *LINK], cwd=myset, env=env, capture_output=True, text=True)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), (i, done.stderr)
        assert subprocess.run(["./loop"], cwd=myset, capture_output=True, text=True).stdout == "3\n"
    recs = spooled(lw_home)
    assert [bool(r["fell_back"]) for r in recs] == [True, False, False], recs
    assert recs[0]["first_linker"].startswith("lld ")
    assert all(not (r["linker"] or "").startswith("lld") for r in recs[1:]), [r["linker"] for r in recs]
    d = json.loads(linkwrap("explain", "--json", "--", *LINK, cwd=myset, env=env).stdout)["decision"]
    assert d["learned"] is None  # nothing learnt: the memory is not the learnt evidence
    assert d["failed"] == ["lld"]  # ... but explain shows the memory all the same
    assert any("lld" in r and "failed on this output before" in r for r in d["reasons"]), d["reasons"]
    # An explicit force still wins: LINKWRAP_LINKER=lld tries lld (and falls back as asked), and says
    # so in one line, once per build: the user asked for lld and did not get it.
    errs = []
    for _ in range(2):
        done = subprocess.run([script("linkwrap"), "launch", "--", *LINK], cwd=myset,
                              env={**env, "LINKWRAP_LINKER": "lld"}, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert spooled(lw_home)[-1]["first_linker"].startswith("lld ")
        errs.append(done.stderr)
    assert errs[0].startswith("linkwrap: warning: LINKWRAP_LINKER=lld: lld ") and errs[0].count("\n") == 1, errs
    assert "linked as asked" in errs[0] and errs[1] == "", errs


def test_an_edit_loop_with_no_configuration_never_fails(myset, lw_home, wild):
    # The trial's loop: exploration tries each fast linker in turn; lld's try must not fail the link,
    # and lld is tried on this output once at most.
    env = wild.env(LINKWRAP_HOME=str(lw_home))
    passed = []
    for _ in range(12):
        done = subprocess.run([script("linkwrap"), "launch", "--", *LINK], cwd=myset, env=env, capture_output=True, text=True)
        passed.append(done.returncode == 0 and done.stderr == "" and (myset / "loop").exists())
    assert all(passed), passed
    recs = spooled(lw_home)
    tried_lld = [r for r in recs if (r["first_linker"] or r["linker"] or "").startswith("lld")]
    assert len(tried_lld) <= 1, [(r["linker"], r["first_linker"]) for r in recs]


def test_the_callers_own_error_fails_once_and_blames_no_linker(tmp_path, lw_home, linkwrap_cc):
    # Linked again as asked, which fails too: that is the caller's error, not evidence against mold.
    from linkrecords import not_small  # a small link keeps no evidence of its times
    (tmp_path / "u.c").write_text(not_small("int missing(void); int main(void){return missing();}\n"))
    subprocess.run(["cc", "-c", "u.c"], cwd=tmp_path, check=True)
    env = {**os.environ, "LINKWRAP_HOME": str(lw_home)}
    done = subprocess.run([linkwrap_cc, "u.o", "-o", "u"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 1 and done.stderr.count("missing") == 1, done.stderr
    d = json.loads(linkwrap("explain", "--json", "--", "u.o", "-o", "u", cwd=tmp_path, env=env).stdout)["decision"]
    assert d["learned"]["failed"] == []


def test_cmake_and_ninja_editing_a_c_each_time_never_lose_the_output(tmp_path, lw_home, wild):
    # The trial's CMake + ninja loop, with lld made the first choice: every build passes and leaves
    # the program, and lld is tried on it once.
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.c").write_text(MAIN_C)
    (src / "b.c").write_text(ITEMS_C)
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(myset C)\nadd_executable(loop a.c b.c)\n"
        "target_link_options(loop PRIVATE -Wl,--gc-sections)\n")
    (tmp_path / "linkwrap.toml").write_text('forbid = ["mold", "wild"]\n')
    env = wild.env(LINKWRAP_HOME=str(lw_home))
    build = tmp_path / "build"
    subprocess.run(["cmake", "-S", src, "-B", build, "-G", "Ninja",
                    f"-DCMAKE_C_LINKER_LAUNCHER={script('linkwrap-launch')}"], check=True, env=env,
                   capture_output=True)
    for i in range(4):
        (src / "a.c").write_text(MAIN_C.replace("return 0;", f"return {i} - {i};"))
        done = subprocess.run(["ninja", "-C", build], env=env, capture_output=True, text=True)
        assert done.returncode == 0, (i, done.stdout, done.stderr)
        assert subprocess.run([build / "loop"], capture_output=True, text=True).stdout == "3\n"
    recs = spooled(lw_home)
    assert [bool(r["fell_back"]) for r in recs] == [True, False, False, False], [r["linker"] for r in recs]
