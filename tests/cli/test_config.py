"""`linkwrap config`: every value with where it came from; --json; --init; errors on one line."""
import json
import textwrap

import pytest

from clirun import linkwrap
from linkwrap.request import config


@pytest.fixture
def project(tmp_path, lw_home):
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    return root


def user_file(lw_home):
    path = lw_home / "config" / "linkwrap.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def show(project, *argv, env=None):
    done = linkwrap("config", *argv, cwd=project / "src", env=env)
    assert done.returncode == 0, done.stderr
    return done


def test_defaults_say_default(project, lw_home):
    out = show(project).stdout.splitlines()
    assert out[0] == f"user file:    {lw_home / 'config' / 'linkwrap.toml'} (not present)"
    assert out[1] == f"project file: none (searched {project / 'src'} up to {project}, which holds .git)"
    assert '(default) prefer = ["mold", "wild", "lld", "rust-lld", "bfd", "gold"]' in out
    # ...and, under it, the order links really follow, which is not that one for rustc's links
    at = out.index('(default) prefer = ["mold", "wild", "lld", "rust-lld", "bfd", "gold"]')
    applied = " ".join(line.strip() for line in out[at + 1:at + 5])
    assert applied.startswith("applied: first what `linkwrap bench` measured for the output")
    assert "a rustc link: rust-lld, mold, wild, lld, bfd, gold; a small C link: GNU ld first" in applied
    assert "(default) forbid = []" in out
    assert "(default) in_place = true" in out
    assert "(default) record = true" in out
    assert "(default) linker = (not set)" in out
    assert "(default) profile = (not set)" in out
    for name in config.LINKER_NAMES:
        assert f"(default) linkers.{name}.extra_flags = []" in out


def test_every_value_names_its_source(project, lw_home):
    user = user_file(lw_home)
    user.write_text('record = false\n[linkers.lld]\nextra_flags = ["--icf=all"]\n')
    proj = project / "linkwrap.toml"
    proj.write_text(textwrap.dedent("""\
        prefer = ["lld", "mold"]
        [profile.release]
        in_place = false
        forbid = ["gold", "bfd"]
    """))
    out = show(project, "--profile", "release", env={"LINKWRAP_LINKER": "mold"}).stdout.splitlines()
    assert out[0] == f"user file:    {user}"
    assert out[1] == f"project file: {proj}"
    assert f'(project file {proj}) prefer = ["lld", "mold"]' in out
    assert f'(project file {proj} [profile.release]) forbid = ["bfd", "gold"]' in out
    assert f"(project file {proj} [profile.release]) in_place = false" in out
    assert f"(user file {user}) record = false" in out
    assert f'(user file {user}) linkers.lld.extra_flags = ["--icf=all"]' in out
    assert '(env LINKWRAP_LINKER) linker = "mold"' in out
    # --profile is an option, not the environment: the source must say so
    assert '(option --profile) profile = "release"' in out
    out = show(project, env={"LINKWRAP_PROFILE": "release"}).stdout.splitlines()
    assert '(env LINKWRAP_PROFILE) profile = "release"' in out


def test_profile_from_an_output_path(project):
    (project / "linkwrap.toml").write_text('[profile.dev]\nin_place = false\n')
    out = project / "target" / "debug" / "deps" / "app-0123abcd"
    lines = show(project, "--output", out).stdout.splitlines()
    assert f'(output path {out}) profile = "debug"' in lines
    assert f"(project file {project / 'linkwrap.toml'} [profile.dev]) in_place = false" in lines


def test_json(project, lw_home):
    (project / "linkwrap.toml").write_text('forbid = ["gold"]\n')
    data = json.loads(show(project, "--json").stdout)
    assert data["files"] == {"user": str(lw_home / "config" / "linkwrap.toml"), "user_exists": False,
                             "project": str(project / "linkwrap.toml")}
    assert data["profile"] is None
    assert data["values"]["forbid"] == {"value": ["gold"], "source": f"project file {project / 'linkwrap.toml'}"}
    assert data["values"]["prefer"] == {"value": list(config.DEFAULT_PREFER), "source": "default"}
    assert set(data["values"]) == {"linker", "prefer", "forbid", "in_place", "record", "profile", "choice.learn", "bench.save",
                                   "incremental.enabled",
                                   *(f"linkers.{n}.extra_flags" for n in config.LINKER_NAMES),
                                   *(f"records.{k}" for k in config.RETENTION),
                                   *(f"memory.{k}" for k in config.MEMORY_DEFAULTS)}
    assert data["values"]["memory.admission"] == {"value": None, "source": "default"}
    # unset: the measurements decide (docs/policy.md 1.5); the environment says where it came from
    assert data["values"]["incremental.enabled"] == {"value": None, "source": "default"}
    data = json.loads(show(project, "--json", env={"LINKWRAP_INCREMENTAL": "0"}).stdout)
    assert data["values"]["incremental.enabled"] == {"value": False, "source": "env LINKWRAP_INCREMENTAL"}


def test_malformed_file_is_one_line_with_file_and_line(project):
    (project / "linkwrap.toml").write_text('prefer = ["mold"]\nin_place = maybe\n')
    done = linkwrap("config", cwd=project)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"linkwrap: error: {project / 'linkwrap.toml'}:2: Invalid value (column 12)\n"


def test_where_the_search_for_a_project_file_ended(tmp_path, lw_home):
    # no .git anywhere above: the search goes to /, and the line must not claim a .git
    bare = tmp_path / "bare"
    bare.mkdir()
    done = linkwrap("config", cwd=bare)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == f"project file: none (searched {bare} up to /)"
    (bare / ".git").mkdir()
    assert linkwrap("config", cwd=bare).stdout.splitlines()[1] == f"project file: none (searched {bare}, which holds .git)"


def test_linkwrap_disable_is_said(project):
    lines = show(project, env={"LINKWRAP_DISABLE": "1"}).stdout.splitlines()
    assert lines[2] == "LINKWRAP_DISABLE=1: linkwrap is off; every link runs exactly as asked, whatever follows"
    assert json.loads(show(project, "--json", env={"LINKWRAP_DISABLE": "1"}).stdout)["disabled"] is True
    assert json.loads(show(project, "--json").stdout)["disabled"] is False
    assert not any(line.startswith("LINKWRAP_DISABLE") for line in show(project).stdout.splitlines())


KNOWN_LIST = "mold, wild, lld, rust-lld, bfd, gold, python"


@pytest.mark.parametrize("argv", [(), ("--json",)])
def test_an_unknown_linkwrap_linker_is_an_error(project, argv):
    done = linkwrap("config", *argv, cwd=project, env={"LINKWRAP_LINKER": "nonsense"})
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"linkwrap: error: LINKWRAP_LINKER=nonsense: not a linker linkwrap knows ({KNOWN_LIST})\n"


def test_a_known_linker_is_shown_as_a_value(project):
    # installed or not, a known name is a value, not an error: whether it links is for explain/status to say
    assert '(env LINKWRAP_LINKER) linker = "wild"' in show(project, env={"LINKWRAP_LINKER": "wild"}).stdout


@pytest.mark.parametrize("content, line, words", [
    ('prefer = "mold"\n', 1, "'prefer' must be a list of linker names"),
    ('in_place = "yes"\n', 1, "'in_place' must be true or false"),
    ('record = true\nunknown_key = 1\n', 2, "unknown key 'unknown_key'"),
    ('[unknown_table]\nx = 1\n', 1, "unknown key 'unknown_table'"),
    ('[profile.release]\nin_place = true\nunknown_key = 1\n', 3, "unknown key 'profile.release.unknown_key'"),
    (b'\x7fELF\x02\x01\x01\x00\xff\xff', 1, "not UTF-8 text"),
    (None, None, "cannot read: a directory"),
])
def test_every_bad_file_is_one_line_exit_1(project, content, line, words):
    path = project / "linkwrap.toml"
    if content is None:
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    done = linkwrap("config", "--profile", "release", cwd=project / "src")
    assert (done.returncode, done.stdout) == (1, "")
    where = f"{path}:{line}: " if line else f"{path}: "
    assert done.stderr.startswith(f"linkwrap: error: {where}") and words in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_init_writes_the_template_once(project):
    done = linkwrap("config", "--init", cwd=project)
    assert done.returncode == 0, done.stderr
    written = project / "linkwrap.toml"
    assert written.read_text().startswith("# linkwrap.toml: how linkwrap links this project")
    assert config.parse_text(written.read_text()) == {}     # all commented out: the defaults
    # What it says of a bad LINKWRAP_LINKER is what a link does (tests/request/test_config.py): it fails.
    text = " ".join(line.lstrip("# ") for line in written.read_text().splitlines())
    assert "links then fail" in text and "LINKWRAP_CONFIG_ERRORS=warn links as asked" in text
    assert "links then run as asked" not in text
    again = linkwrap("config", "--init", cwd=project)
    assert again.returncode == 1
    assert again.stderr == f"linkwrap: error: {written} already exists; not overwriting it\n"


def test_init_user_file(project, lw_home):
    done = linkwrap("config", "--init", "--user", cwd=project)
    assert done.returncode == 0, done.stderr
    assert (lw_home / "config" / "linkwrap.toml").is_file()
    assert not (project / "linkwrap.toml").exists()


def test_profile_overrides_are_shown_without_profile_and_marked_when_they_apply(project, lw_home):
    user = user_file(lw_home)
    user.write_text('[profile.bench]\n[profile.bench.linkers.mold]\nextra_flags = ["--icf=all"]\n')
    proj = project / "linkwrap.toml"
    proj.write_text('prefer = ["lld"]\n[profile.release]\nin_place = false\nforbid = ["gold"]\n'
                    '[profile.dev.records]\nkeep_days = 7\n')
    lines = show(project).stdout.splitlines()
    i = lines.index("profile overrides (each applies only to its profile's links; `--profile NAME` shows one merged):")
    assert lines[i + 1:] == [
        f'  [profile.bench] linkers.mold.extra_flags = ["--icf=all"]  (user file {user})',
        f"  [profile.dev] records.keep_days = 7  (project file {proj})",
        f"  [profile.release] in_place = false  (project file {proj})",
        f'  [profile.release] forbid = ["gold"]  (project file {proj})',
    ]
    assert "(default) in_place = true" in lines          # not applied: the values above stay the defaults
    lines = show(project, "--profile", "release").stdout.splitlines()
    assert f"  [profile.release] in_place = false  (project file {proj})  (applies here)" in lines
    assert f"(project file {proj} [profile.release]) in_place = false" in lines
    assert f"  [profile.dev] records.keep_days = 7  (project file {proj})" in lines
    data = json.loads(show(project, "--json").stdout)
    assert {"profile": "release", "key": "in_place", "value": False, "source": f"project file {proj}",
            "applied": False} in data["profiles"]
    assert len(data["profiles"]) == 4
    # no profile tables: no section
    proj.write_text('prefer = ["lld"]\n')
    user.unlink()
    assert not any(line.startswith("profile overrides") for line in show(project).stdout.splitlines())
