"""Every command alike: --help in the same form within 80 columns, with the environment section;
usage errors exit 2; piped output fits 80 columns without padding; JSON numbers rounded."""
import json
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from linkrecords import c_object, lw  # noqa: E402

from linkwrap.cli.main import COMMANDS, ENVIRONMENT  # noqa: E402

NO_COLUMNS = {"COLUMNS": ""}  # as in a pipe: argparse and rich then use 80


def piped(*argv, cwd, env=None, check=True):
    # The console scripts see a pipe on stdout (subprocess capture); COLUMNS unset as in a plain shell.
    environ = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    environ.update(env or {})
    import subprocess
    from conftest import script
    done = subprocess.run([script("linkwrap"), *map(str, argv)], cwd=cwd, capture_output=True, text=True,
                          env=environ, stdin=subprocess.DEVNULL)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def assert_fits(text, what):
    for line in text.splitlines():
        # A path is never cut: only a line holding one may be longer.
        assert len(line) <= 80 or any(len(t) >= 40 and "/" in t for t in line.split()), \
            f"{what}: {len(line)} columns: {line!r}"
        assert line == line.rstrip(), f"{what}: trailing spaces: {line!r}"


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_every_help_fits_80_columns_and_names_the_environment(command, tmp_path, lw_home):
    argv = [command, "--help"] if command else ["--help"]
    out = piped(*argv, cwd=tmp_path).stdout
    assert out.startswith(f"usage: linkwrap{' ' + command if command else ''} ")
    assert_fits(out, f"linkwrap {command} --help")
    section = out[out.index("\nenvironment:\n"):]
    for name, _ in ENVIRONMENT:
        assert f"\n  {name}" in section, (command, name)


USAGE_ERRORS = [
    ("summary", "--bogus"), ("summary", "--since", "yesterday-ish"), ("report", "--from", "no-such-export"),
    ("log", "bogus"), ("log", "--since", "1h"), ("run",), ("explain", "out", "stray"), ("launch",),
    ("install", "--bogus"), ("config", "--bogus"), ("status", "--bogus"), ("uninstall", "--bogus"),
    ("summary", "--build", "no-such-build"),
]


@pytest.mark.parametrize("argv", USAGE_ERRORS, ids=" ".join)
def test_usage_errors_exit_2_with_one_message(argv, tmp_path, lw_home):
    done = piped(*argv, cwd=tmp_path, check=False)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert re.search(r"^(linkwrap[\w -]*: error: |usage: )", done.stderr, re.M), done.stderr


def test_no_command_is_a_usage_error_and_help_is_not(tmp_path, lw_home):
    done = piped(cwd=tmp_path, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("usage: linkwrap ") and "install" in done.stderr
    done = piped("--help", cwd=tmp_path, check=False)
    assert done.returncode == 0 and done.stdout.startswith("usage: linkwrap ") and done.stderr == ""


def test_piped_output_fits_80_columns_and_json_numbers_are_rounded(tmp_path, lw_home):
    obj = c_object(tmp_path, "m")
    long_name = "an-output-with-a-rather-long-name-that-would-push-the-table-wide"
    for name in ("a", long_name):
        lw("run", "--quiet", "--", os.path.join(os.path.dirname(sys.executable), "linkwrap-cc"), obj,
           "-o", name, cwd=tmp_path)
    for argv in (["summary"], ["summary", "--all"], ["log", "status"], ["log", "path"], ["explain", long_name],
                 ["config"], ["status"]):
        assert_fits(piped(*argv, cwd=tmp_path).stdout, " ".join(argv))
    data = piped("summary", "--json", cwd=tmp_path).stdout
    floats = re.findall(r"-?\d+\.\d+(?:e-?\d+)?", data)
    assert floats and all(len(f.split(".")[1]) <= 3 for f in floats), floats[:5]
    json.loads(data)


# Set by linkwrap for its own processes, never by a user: not in --help.
INTERNAL = {"LINKWRAP_BUILD_ID": "linkwrap run's build, for its links", "LINKWRAP_BUILD_CWD": "the same",
            "LINKWRAP_SIGINT": "the entry script to linkwrap.cc", "LINKWRAP_SERVER_FALLBACK": "client.c to cc.py",
            "LINKWRAP_SERVER_INSTALL": "the wheel's client.c to cc.py to the server it starts",
            "LINKWRAP_LD_RELOCS": "a switch of the linker's benchmarks (linkwrap/ld/relocate_bulk.py)",
            "LINKWRAP_LD_MERGE": "a switch of the linker's tests (linkwrap/ld/merge.py)",
            "LINKWRAP_TEST_LINKS_PER_CHILD": "the server tests' bound of links per child (server.py)"}


def test_every_variable_linkwrap_reads_is_in_the_environment_list():
    # Read from the sources (environ.get / environ[...] / getenv), so a new variable cannot be missed.
    import re
    import linkwrap
    root = os.path.dirname(linkwrap.__file__)
    read = set()
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith((".py", ".c")):
                text = open(os.path.join(d, f), encoding="utf-8").read()
                read |= set(re.findall(r"""(?:environ\.get\(|environ\[|getenv\(|pop\()["'](LINKWRAP_[A-Z_]+)["']""",
                                       text))
    read.add("LINKWRAP_CC_<TRIPLE>")
    listed = {name for name, _ in ENVIRONMENT}
    assert read - set(INTERNAL) - listed == set(), "add them to linkwrap/cli/main.py ENVIRONMENT"
    assert {"LINKWRAP_SERVER", "LINKWRAP_LD_NO_FALLBACK", "LINKWRAP_DIRECT", "LINKWRAP_SAVE"} <= listed


@pytest.mark.parametrize("typo, near", [("instal", "install"), ("sumary", "summary"), ("explian", "explain")])
def test_a_mistyped_command_gets_one_line_naming_the_nearest(typo, near, tmp_path, lw_home):
    done = piped(typo, cwd=tmp_path, check=False)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"linkwrap: error: no command {typo!r}; did you mean {near!r}? (`linkwrap --help` lists them)"]


def test_a_word_near_no_command_says_so_without_a_guess(tmp_path, lw_home):
    done = piped("zzzz", cwd=tmp_path, check=False)
    assert done.returncode == 2
    assert "did you mean" not in done.stderr and "no command 'zzzz'" in done.stderr
