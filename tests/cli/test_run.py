"""`linkwrap run -- <build>`: every link under it is one build, its summary follows, its exit status passes."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from conftest import script  # noqa: E402
from linkrecords import c_object, lw, summary_json  # noqa: E402


def makefile(tmp_path, extra=""):
    c_object(tmp_path, "m")
    cc = script("linkwrap-cc")
    (tmp_path / "Makefile").write_text(
        f"all: a b\na:\n\t{cc} m.o -o a\nb:\n\tsh -c '{cc} m.o -o b && sleep 0.3'\n{extra}")


def test_run_groups_the_links_of_its_build_and_prints_the_summary_after_it(tmp_path, lw_home):
    makefile(tmp_path)
    done = lw("run", "--", "make", "-s", "-j2", cwd=tmp_path, env={"COLUMNS": "150"})
    assert done.stdout == ""  # make -s says nothing, and the summary goes to stderr
    assert "2 links" in done.stderr and "from linkwrap run" in done.stderr
    [b] = summary_json(cwd=tmp_path)["builds"]
    assert b["tool"] == "linkwrap run" and b["command"] == "make -s -j2" and b["exit_status"] == 0
    assert sorted(l["crate_name"] for l in b["links"]) == ["a", "b"]
    assert b["wall_ms"] >= 300 and 0 < b["linking"]["link_share"] < 1


def test_run_returns_the_builds_exit_status_and_still_records_it(tmp_path, lw_home):
    makefile(tmp_path, "fail:\n\texit 7\n")
    done = lw("run", "--", "make", "-s", "a", "fail", cwd=tmp_path, check=False)
    assert done.returncode == 2  # make's own status for a failed recipe
    [b] = summary_json(cwd=tmp_path)["builds"]
    assert b["exit_status"] == 2 and b["totals"]["links"] == 1
    assert lw("run", "--", "sh", "-c", "exit 5", cwd=tmp_path, check=False).returncode == 5


def test_run_without_a_command_or_with_a_missing_one_is_a_one_line_error(tmp_path, lw_home):
    done = lw("run", cwd=tmp_path, check=False)
    assert done.returncode == 2 and done.stderr.startswith("linkwrap: error: usage: linkwrap run --")
    done = lw("run", "--", "no-such-build-tool-xyz", cwd=tmp_path, check=False)
    assert done.returncode == 127 and done.stderr == "linkwrap: error: cannot run no-such-build-tool-xyz: No such file or directory\n"
    assert "Traceback" not in done.stderr


def test_run_json_is_all_that_goes_to_stdout(tmp_path, lw_home):
    makefile(tmp_path)
    # Not -s: make echoes its recipes on stdout, which --json sends to stderr.
    done = lw("run", "--json", "--", "make", "-j2", cwd=tmp_path)
    data = json.loads(done.stdout)
    [b] = data["builds"]
    assert b["tool"] == "linkwrap run" and b["totals"]["links"] == 2 and "notes" in data
    assert "m.o -o a" in done.stderr  # the build's own output, kept apart
    assert "--json" in lw("run", "--help", cwd=tmp_path).stdout
    assert "stdout carries only the JSON" in " ".join(lw("run", "--help", cwd=tmp_path).stdout.split())


def test_a_run_without_links_says_so_in_one_line(tmp_path, lw_home):
    done = lw("run", "--", "sh", "-c", "exit 0", cwd=tmp_path, env={"COLUMNS": "100"})
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("no links recorded for this build #"), done.stderr
    assert lines[0].endswith("exit status 0): sh -c 'exit 0'")
