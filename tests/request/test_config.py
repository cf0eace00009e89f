"""config.load: which files, which profile, what wins, the marshal cache, one-line errors, fail-open."""
import os
import re
import subprocess
import sys
import textwrap

import pytest

from conftest import comment_mark, script
from linkwrap import resources
from linkwrap.errors import ConfigError
from linkwrap.request import args, config

PY = sys.executable


def req(cwd, out="a.out"):
    return args.parse(["main.o", "-o", str(out)], driver="cc", environ={}, cwd=str(cwd))


@pytest.fixture
def project(tmp_path, lw_home):
    """A project directory with a .git, a sub directory and the user's config dir."""
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "sub" / "deeper").mkdir(parents=True)
    return root


def user_file(lw_home):
    path = lw_home / "config" / "linkwrap.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


# --- which files -----------------------------------------------------------

def test_project_file_is_found_from_a_subdirectory(project):
    (project / "linkwrap.toml").write_text('prefer = ["lld"]\n')
    assert config.find_project_file(str(project / "sub" / "deeper")) == str(project / "linkwrap.toml")
    c = config.load(req(project / "sub" / "deeper"), {})
    assert c.prefer == ("lld",)
    assert c.sources["prefer"] == f"project file {project / 'linkwrap.toml'}"


def test_nearest_file_wins(project):
    (project / "linkwrap.toml").write_text('prefer = ["lld"]\n')
    (project / "sub" / "linkwrap.toml").write_text('prefer = ["bfd"]\n')
    assert config.load(req(project / "sub" / "deeper"), {}).prefer == ("bfd",)


@pytest.mark.parametrize("git_is_file", [False, True])
def test_search_stops_at_the_directory_holding_git(tmp_path, lw_home, git_is_file):
    (tmp_path / "linkwrap.toml").write_text('prefer = ["gold"]\n')   # above the repository
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    if git_is_file:   # a git worktree has a .git file
        (repo / ".git").write_text("gitdir: /elsewhere\n")
    else:
        (repo / ".git").mkdir()
    assert config.find_project_file(str(repo / "src")) is None
    assert config.load(req(repo / "src"), {}).prefer == config.DEFAULT_PREFER
    # ...but the repository root's own file is read
    (repo / "linkwrap.toml").write_text('prefer = ["bfd"]\n')
    assert config.find_project_file(str(repo / "src")) == str(repo / "linkwrap.toml")


def test_search_without_git_goes_to_the_root(tmp_path, lw_home):
    (tmp_path / "linkwrap.toml").write_text('forbid = ["gold"]\n')
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert config.load(req(tmp_path / "a" / "b"), {}).forbid == {"gold"}


def test_defaults_when_there_is_no_file(project):
    c = config.load(req(project), {})
    assert c.prefer == ("mold", "wild", "lld", "rust-lld", "bfd", "gold")
    assert (c.forbid, c.forced, c.extra_flags, c.in_place, c.record, c.files) == (frozenset(), None, {}, True, True, ())
    assert set(c.sources.values()) == {"default"}


# --- what wins --------------------------------------------------------------

def test_layers_user_then_project_then_profiles_then_environment(project, lw_home):
    user = user_file(lw_home)
    user.write_text(textwrap.dedent("""\
        prefer = ["wild", "mold"]
        record = false
        in_place = false
        [linkers.mold]
        extra_flags = ["--icf=all"]
        [profile.release]
        forbid = ["gold"]
        in_place = true
    """))
    proj = project / "linkwrap.toml"
    proj.write_text(textwrap.dedent("""\
        prefer = ["lld", "mold"]
        [profile.release]
        prefer = ["mold"]
        [profile.release.linkers.lld]
        extra_flags = ["-O2"]
    """))
    out = project / "target" / "release" / "deps" / "app-0123abcd"
    c = config.load(req(project, out), {"LINKWRAP_LINKER": "Bfd"})
    assert c.profile == "release"
    assert c.prefer == ("mold",)
    assert c.forbid == {"gold"}
    assert c.record is False and c.in_place is True
    assert c.extra_flags == {"mold": ("--icf=all",), "lld": ("-O2",)}
    assert c.forced == "bfd"
    assert c.files == (str(user), str(proj))
    assert c.sources == {
        "prefer": f"project file {proj} [profile.release]",
        "forbid": f"user file {user} [profile.release]",
        "record": f"user file {user}",
        "in_place": f"user file {user} [profile.release]",
        "linker": "env LINKWRAP_LINKER",
        "profile": f"output path {out}",
        "linkers.mold.extra_flags": f"user file {user}",
        "linkers.lld.extra_flags": f"project file {proj} [profile.release]",
    }
    # another profile: only the top-level tables apply
    c = config.load(req(project, project / "target" / "debug" / "deps" / "app-0123abcd"), {})
    assert (c.profile, c.prefer, c.forbid, c.in_place) == ("debug", ("lld", "mold"), frozenset(), False)


@pytest.mark.parametrize("output, profile", [
    ("/w/target/debug/deps/app-0123", "debug"),
    ("/w/target/release/deps/app-0123", "release"),
    ("/w/target/release/app", "release"),
    ("/w/target/profiling/deps/app-0123", "profiling"),
    ("/w/target/x86_64-unknown-linux-gnu/release/deps/app-0123", "release"),
    ("/w/target/debug/build/foo-0123/build_script_build-0123", "debug"),
    ("/w/target/debug/examples/demo-0123", "debug"),
    ("/elsewhere/ct/release/deps/app-0123", "release"),     # CARGO_TARGET_DIR=/elsewhere/ct
    ("/w/build/app", None),
    ("/w/app", None),
    (None, None),
])
def test_profile_from_the_output_path(output, profile):
    assert config.profile_of(output) == profile


@pytest.mark.parametrize("table", ["dev", "debug"])
def test_cargo_dev_profile_is_target_debug(project, table):
    (project / "linkwrap.toml").write_text(f'[profile.{table}]\nprefer = ["lld"]\n')
    c = config.load(req(project, project / "target" / "debug" / "deps" / "x-1"), {})
    assert c.prefer == ("lld",) and c.sources["prefer"].endswith(f"[profile.{table}]")


def test_linkwrap_profile_overrides_the_path(project):
    (project / "linkwrap.toml").write_text('[profile.ci]\nin_place = false\n')
    c = config.load(req(project, project / "build" / "app"), {"LINKWRAP_PROFILE": "ci"})
    assert (c.profile, c.in_place, c.sources["profile"]) == ("ci", False, "env LINKWRAP_PROFILE")


# --- errors -----------------------------------------------------------------

@pytest.mark.parametrize("text, line, words", [
    ('prefer = ["mold"\nforbid = []\n', 2, "column"),                      # TOML syntax
    ('# comment\nin_place = yes\n', 2, "Invalid value"),
    ('prefer = ["mold", "mld"]\n', 1, "unknown linker 'mld'"),
    ('\n\nforbid = "gold"\n', 3, "'forbid' must be a list of linker names"),
    ('record = true\nrecrod = false\n', 2, "unknown key 'recrod'"),
    ('in_place = 1\n', 1, "'in_place' must be true or false"),
    ('[linkers.mold]\nextra_flags = ["--icf=all"]\n\n[linkers.ldd]\nextra_flags = []\n', 4, "unknown linker 'ldd'"),
    ('[linkers.mold]\nflags = ["-O2"]\n', 2, "unknown key 'linkers.mold.flags'"),
    ('[linkers.mold]\nextra_flags = ["-O2", 3]\n', 2, "must be a list of non-empty strings"),
    ('[profile.release]\nprefer = ["lld"]\nin_place = "no"\n', 3, "'profile.release.in_place' must be true or false"),
    ('[profile.release]\nprofile = {}\n', 2, "unknown key 'profile.release.profile'"),
    ('linkers.wild.extra_flags = "--gc-sections"\n', 1, "must be a list"),
    # what a new user tried (issue: "a wrong type, an unknown key, an unknown table...")
    ('prefer = "mold"\n', 1, "'prefer' must be a list of linker names"),
    ('record = true\nin_place = "yes"\n', 2, "'in_place' must be true or false"),
    ('[weird]\nx = 1\n', 1, "unknown key 'weird' (known: prefer, forbid, in_place, record, linkers, records, memory, choice, bench, incremental, profile)"),
    ('[profile.release]\nprefer = ["lld"]\nbogus = 1\n', 3, "unknown key 'profile.release.bogus'"),
    ('[choice]\nlearn = "yes"\n', 2, "'choice.learn' must be true or false"),
    ('[incremental]\nenabled = "auto"\n', 2, "'incremental.enabled' must be true or false"),
    ('[incremental]\non = true\n', 2, "unknown key 'incremental.on' (known: enabled)"),
    ('[bench]\nsave = "biggest"\n', 2, "'bench.save' must be \"off\", \"all\" or \"largest\""),
    ('[bench]\nkeep = 1\n', 2, "unknown key 'bench.keep' (known: save, background, background_budget_s, "
                               "background_quiet_s, background_load)"),
    ('[bench]\nbackground = "idle"\n', 2, "'bench.background' must be true or false"),
    ('[bench]\nbackground_budget_s = 0\n', 2, "'bench.background_budget_s' must be a number of CPU seconds above 0"),
    ('[bench]\nbackground_quiet_s = -1\n', 2, "'bench.background_quiet_s' must be a number of seconds, 0 or more"),
    ('[bench]\nbackground_load = true\n', 2, "'bench.background_load' must be a fraction of the usable CPUs"),
    ('[bench]\nbackground_budget_s = inf\n', 2, "'bench.background_budget_s' must be a number"),
    ('choice = 1\n', 1, "'choice' must be a table: [choice]"),
    ('profile = "release"\n', 1, "'profile' must be a table"),
    ('[profile]\nrelease = 3\n', 2, "'profile.release' must be a table"),
    ('[linkers]\nmold = "--icf=all"\n', 2, "'linkers.mold' must be a table"),
    ('prefer = ["mold"]\x00\n', 1, "column"),
    ('[memory]\nadmission = "auto"\n', 2, "'memory.admission' must be true or false"),
    ('[memory]\nheadroom_mb = -1\n', 2, "'memory.headroom_mb' must be a whole number of MiB"),
    ('[memory]\nmax_wait_s = 0\n', 2, "'memory.max_wait_s' must be a number of seconds above 0"),
    ('[memory]\nmax_wait = 10\n', 2, "unknown key 'memory.max_wait' (known: admission, headroom_mb, max_wait_s)"),
    ('memory = 1\n', 1, "'memory' must be a table"),
])
def test_malformed_file_is_one_line_naming_file_and_line(project, text, line, words):
    path = project / "linkwrap.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        config.load(req(project), {})
    message = str(e.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert words in message and "\n" not in message


def test_binary_file_is_one_line(project):
    path = project / "linkwrap.toml"
    path.write_bytes(b'prefer = ["mold"]\n\xff\xfe\x00\x01garbage\n')
    with pytest.raises(ConfigError) as e:
        config.load(req(project), {})
    assert str(e.value) == f"{path}:2: not UTF-8 text"


@pytest.mark.parametrize("kind", ["directory", "dangling symlink", "fifo"])
def test_an_unreadable_linkwrap_toml_is_an_error_not_skipped(project, kind):
    """Root reads every file, so "unreadable" is made with a directory, a dangling symlink or
    a FIFO of that name. The search must not walk past it to a parent's file, and a FIFO
    must not be opened (it would block the link)."""
    outer = project / "sub" / "linkwrap.toml"
    outer.write_text('prefer = ["lld"]\n')        # the file the search would find next
    path = project / "sub" / "deeper" / "linkwrap.toml"
    if kind == "directory":
        path.mkdir()
        words = "cannot read: a directory"
    elif kind == "dangling symlink":
        path.symlink_to(project / "missing.toml")
        words = "cannot read: a symbolic link to a missing file"
    else:
        os.mkfifo(path)
        words = "cannot read: not a regular file"
    assert config.find_project_file(str(path.parent)) == str(path)
    for _ in range(2):   # and again from the cache
        with pytest.raises(ConfigError) as e:
            config.load(req(path.parent), {})
        assert str(e.value) == f"{path}: {words}"


def test_an_unreadable_user_file_is_an_error(project, lw_home):
    user_file(lw_home).mkdir()
    with pytest.raises(ConfigError) as e:
        config.load(req(project), {})
    assert str(e.value) == f"{lw_home / 'config' / 'linkwrap.toml'}: cannot read: a directory"


def test_a_user_file_under_a_plain_file_is_absent(project, lw_home):
    (lw_home / "config").write_text("not a directory")   # stat(config/linkwrap.toml): ENOTDIR
    assert config.load(req(project), {}).files == ()


# --- LINKWRAP_LINKER ------------------------------------------------------------

KNOWN_LIST = "mold, wild, lld, rust-lld, bfd, gold, python"


@pytest.mark.parametrize("value, forced", [("mold", "mold"), ("Rust-LLD", "rust-lld"), (" lld ", "lld"),
                                           ("python", "python"), ("", None), ("  ", None)])
def test_linkwrap_linker_known_names(project, value, forced):
    c = config.load(req(project), {"LINKWRAP_LINKER": value})
    assert c.forced == forced
    assert c.sources["linker"] == ("env LINKWRAP_LINKER" if forced else "default")


@pytest.mark.parametrize("value, shown", [("nonsense", "nonsense"), ("ld.lld", "ld.lld"), ("ld64", "ld64"),
                                          ("mo\nld", "mo\\nld")])
def test_an_unknown_linkwrap_linker_is_a_config_error(project, value, shown):
    """Like `prefer = ["nosuch"]` in a file: an error, so the link runs as asked (pipeline.py)
    instead of quietly using the usual choice."""
    with pytest.raises(ConfigError) as e:
        config.load(req(project), {"LINKWRAP_LINKER": value})
    assert str(e.value) == f"LINKWRAP_LINKER={shown}: not a linker linkwrap knows ({KNOWN_LIST})"
    assert "\n" not in str(e.value)


def test_a_known_but_missing_linker_is_not_an_error(project):
    # whether wild is installed or not: a known name is no configuration error
    c = config.load(req(project), {"LINKWRAP_LINKER": "wild"})
    assert c.forced == "wild"


# --- incremental relinks: [incremental] enabled, LINKWRAP_INCREMENTAL, LINKWRAP_LD_INCREMENTAL ---------

@pytest.mark.parametrize("text, env, enabled, source", [
    ("", {}, None, "default"),                                            # unset: by measurement
    ("[incremental]\nenabled = false\n", {}, False, "project file"),
    ("[incremental]\nenabled = true\n", {}, True, "project file"),
    ("", {"LINKWRAP_INCREMENTAL": "1"}, True, "env LINKWRAP_INCREMENTAL"),
    ("", {"LINKWRAP_INCREMENTAL": " Off "}, False, "env LINKWRAP_INCREMENTAL"),
    ("", {"LINKWRAP_LD_INCREMENTAL": "1"}, True, "env LINKWRAP_LD_INCREMENTAL"),
    ("", {"LINKWRAP_LD_INCREMENTAL": "0"}, None, "default"),               # only =1 asks the linker
    # the environment wins over the files, and LINKWRAP_INCREMENTAL=0 over every way of forcing it
    ("[incremental]\nenabled = true\n", {"LINKWRAP_INCREMENTAL": "0"}, False, "env LINKWRAP_INCREMENTAL"),
    ("", {"LINKWRAP_INCREMENTAL": "0", "LINKWRAP_LD_INCREMENTAL": "1"}, False, "env LINKWRAP_INCREMENTAL"),
    ("[incremental]\nenabled = false\n", {"LINKWRAP_INCREMENTAL": "1"}, True, "env LINKWRAP_INCREMENTAL"),
    ("[profile.release.incremental]\nenabled = true\n", {}, None, "default"),   # another profile's
])
def test_incremental_setting_layers_like_the_others(project, text, env, enabled, source):
    (project / "linkwrap.toml").write_text(text)
    c = config.load(req(project, project / "target" / "debug" / "app"), env)
    assert c.incremental is enabled
    assert c.sources.get("incremental.enabled", "default").startswith(source)


def test_an_unknown_linkwrap_incremental_is_a_config_error(project):
    with pytest.raises(ConfigError) as e:
        config.load(req(project), {"LINKWRAP_INCREMENTAL": "auto"})
    assert str(e.value) == "LINKWRAP_INCREMENTAL=auto: must be 0 (off) or 1 (on); unset, the measurements decide"


def test_a_changed_linkwrap_incremental_is_not_served_from_the_last_load(project):
    assert config.load(req(project), {"LINKWRAP_INCREMENTAL": "1"}).incremental is True
    assert config.load(req(project), {"LINKWRAP_INCREMENTAL": "0"}).incremental is False
    assert config.load(req(project), {}).incremental is None


def test_the_caller_can_name_the_profile(project):
    (project / "linkwrap.toml").write_text('[profile.ci]\nin_place = false\n')
    c = config.load(req(project, project / "target" / "debug" / "deps" / "x-1"), {"LINKWRAP_PROFILE": "rel"},
                    profile=("ci", "option --profile"))
    assert (c.profile, c.in_place, c.sources["profile"]) == ("ci", False, "option --profile")


def test_search_end(project, tmp_path):
    assert config.search_end(str(project / "sub" / "deeper")) == str(project)
    (tmp_path / "bare" / "a").mkdir(parents=True)
    assert config.search_end(str(tmp_path / "bare" / "a")) == "/"


# --- the cache ----------------------------------------------------------------

LOAD = textwrap.dedent("""
    import sys
    from linkwrap.request import args, config
    from linkwrap.errors import ConfigError
    request = args.parse(["m.o", "-o", "a.out"], driver="cc", environ={}, cwd=sys.argv[1])
    try:
        print(config.load(request, {}).prefer, end=" ")
    except ConfigError as e:
        print("error", e, end=" ")
    print("tomllib" in sys.modules)
""")


def load_in_new_process(cwd):
    done = subprocess.run([PY, "-c", LOAD, str(cwd)], capture_output=True, text=True, check=True,
                          env={**os.environ})
    return done.stdout.strip()


def test_a_warm_load_does_not_import_tomllib(project, lw_home):
    path = project / "linkwrap.toml"
    path.write_text('prefer = ["lld", "bfd"]\n')
    assert load_in_new_process(project) == "('lld', 'bfd') True"     # cold: parsed
    assert (lw_home / "cache" / "config.marshal").is_file()
    assert load_in_new_process(project) == "('lld', 'bfd') False"    # warm: from the cache
    # an edit of the same size with a new mtime is seen
    path.write_text('prefer = ["bfd", "lld"]\n')
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    assert load_in_new_process(project) == "('bfd', 'lld') True"
    assert load_in_new_process(project) == "('bfd', 'lld') False"


def test_a_broken_file_is_not_reparsed_on_every_link(project):
    (project / "linkwrap.toml").write_text('prefer = [\n')
    first = load_in_new_process(project)
    second = load_in_new_process(project)
    assert first.startswith("error ") and first.endswith(" True")
    assert second == first[:-len("True")] + "False"


def test_no_file_means_no_cache_and_no_parser(project, lw_home):
    assert load_in_new_process(project) == f"{config.DEFAULT_PREFER} False"
    assert not (lw_home / "cache" / "config.marshal").exists()


def test_a_corrupt_cache_is_ignored(project, lw_home):
    (project / "linkwrap.toml").write_text('forbid = ["gold"]\n')
    cache = lw_home / "cache" / "config.marshal"
    cache.parent.mkdir(parents=True)
    cache.write_bytes(b"\x00garbage")
    assert config.load(req(project), {}).forbid == {"gold"}
    assert config.load(req(project), {}).forbid == {"gold"}


# --- the shipped template -----------------------------------------------------

def test_template_is_valid_and_every_example_line_is_too():
    text = resources.template_text("linkwrap.toml")
    assert config.parse_text(text, "linkwrap.toml") == {}   # all commented out: the defaults
    # Uncomment the example lines ("# key = ..." and "# [table]"): still valid, and it uses every key.
    example = re.compile(r"^# (\[[a-z.]+\]|[a-z_]+ = .*)$")
    lines = [line[2:] for line in text.splitlines() if example.match(line)]
    table = config.parse_text("\n".join(lines), "example")
    assert set(table) == {"prefer", "forbid", "in_place", "record", "records", "linkers", "memory", "choice", "bench",
                          "incremental", "profile"}
    assert table["records"] == config.RETENTION  # the template shows the defaults the code uses
    assert table["memory"] == {"admission": True, "headroom_mb": 64, "max_wait_s": 300.0}
    assert table["profile"]["release"]["linkers"]["lld"]["extra_flags"] == ["-O2"]


# --- on the link path: fail-open ------------------------------------------------

def link_hello(project, hello_obj, **env):
    return subprocess.run([script("linkwrap-cc"), str(hello_obj), "-o", "hello"], cwd=project,
                          capture_output=True, text=True, env={**os.environ, **env})


FIX = "(fix it; LINKWRAP_DISABLE=1 links without linkwrap, LINKWRAP_CONFIG_ERRORS=warn links as asked)"


def test_a_broken_linkwrap_toml_fails_the_link_with_one_line(project, lw_home, hello_obj):
    """rustc discards a successful link's stderr: a warning would go unseen and the build would
    quietly run without linkwrap's choice. So the link fails, in the build where the file broke."""
    (project / "linkwrap.toml").write_text('prefer = ["mold"]\nin_place = maybe\n')
    for _ in range(2):  # every link, not once: each one would otherwise run without the user's settings
        done = link_hello(project, hello_obj)
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr.startswith(f"linkwrap: error: {project / 'linkwrap.toml'}:2: Invalid value")
        assert done.stderr.endswith(f" {FIX}\n") and done.stderr.count("\n") == 1
        assert not (project / "hello").exists()
    # the fault is noted for the log, with file and line
    assert f"{project / 'linkwrap.toml'}:2: Invalid value" in (lw_home / "linkwrap.log").read_text()
    # the two ways round that the line names
    done = link_hello(project, hello_obj, LINKWRAP_DISABLE="1")
    assert (done.returncode, done.stderr) == (0, "")
    (project / "hello").unlink()
    done = link_hello(project, hello_obj, LINKWRAP_CONFIG_ERRORS="warn")
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr.startswith(f"linkwrap: warning: {project / 'linkwrap.toml'}:2: ") and done.stderr.count("\n") == 1
    again = link_hello(project, hello_obj, LINKWRAP_CONFIG_ERRORS="warn")
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
    assert subprocess.run([str(project / "hello")], capture_output=True, text=True).stdout == "hello\n"


def test_an_unknown_linkwrap_linker_fails_the_link(project, lw_home, hello_obj):
    """LINKWRAP_LINKER=nonsense used to mean mold, quietly. It is a configuration error: the link fails
    with one line; with LINKWRAP_CONFIG_ERRORS=warn it runs exactly as asked (cc's default, GNU ld here)."""
    message = f"LINKWRAP_LINKER=nonsense: not a linker linkwrap knows ({KNOWN_LIST})"
    done = link_hello(project, hello_obj, LINKWRAP_LINKER="nonsense")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"linkwrap: error: {message} {FIX}\n")
    done = link_hello(project, hello_obj, LINKWRAP_LINKER="nonsense", LINKWRAP_CONFIG_ERRORS="warn")
    assert (done.returncode, done.stdout) == (0, "")
    # said at most once per build; if it is, it is this one line
    assert done.stderr in ("", f"linkwrap: warning: {message}; linking as asked until it is fixed\n"), done.stderr
    assert subprocess.run([str(project / "hello")], capture_output=True, text=True).stdout == "hello\n"
    text = subprocess.run(["readelf", "-p", ".comment", str(project / "hello")], capture_output=True, text=True).stdout
    assert "mold" not in text, text
    assert message in (lw_home / "linkwrap.log").read_text()


@pytest.mark.parametrize("prefer", ["lld", "mold"])
def test_the_project_file_chooses_the_linker(project, lw_home, hello_obj, prefer):
    comment = comment_mark(prefer)
    (project / "linkwrap.toml").write_text(f'prefer = ["{prefer}"]\n')
    done = subprocess.run([script("linkwrap-cc"), str(hello_obj), "-o", "hello"], cwd=project,
                          capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, "")
    text = subprocess.run(["readelf", "-p", ".comment", str(project / "hello")], capture_output=True, text=True).stdout
    assert comment in text, text


def test_a_broken_file_is_a_configuration_error_in_the_summary(project, lw_home, hello_obj):
    (project / "linkwrap.toml").write_text('prefer = "mold"\n')
    assert link_hello(project, hello_obj).returncode == 1
    assert link_hello(project, hello_obj, LINKWRAP_CONFIG_ERRORS="warn").returncode == 0
    table = subprocess.run([script("linkwrap"), "summary"], cwd=project, capture_output=True, text=True,
                           env={**os.environ, "COLUMNS": "200"}).stdout
    assert "as asked (config error)" in table
    assert "a configuration error (fix it, and linkwrap chooses again)" in table
    assert "fault of linkwrap's own" not in table


@pytest.mark.parametrize("text", ["x = " + "[" * 5000, "x = " + "{a=" * 3000])
def test_a_deeply_nested_file_is_a_config_error(project, text):
    (project / "linkwrap.toml").write_text(text)
    with pytest.raises(ConfigError, match=r"linkwrap\.toml: nested too deeply to read$"):
        config.load(req(project), {})


def test_a_deeply_nested_file_is_one_error_line_not_a_traceback(tmp_path, lw_home, hello_obj):
    (tmp_path / "linkwrap.toml").write_text("x = " + "[" * 5000)
    proc = subprocess.run([script("linkwrap-cc"), str(hello_obj), "-o", "prog"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith(f"linkwrap: error: {tmp_path}/linkwrap.toml: nested too deeply to read (fix it;")
    for n in range(2):  # LINKWRAP_CONFIG_ERRORS=warn: said once, the link runs as asked
        proc = subprocess.run([script("linkwrap-cc"), str(hello_obj), "-o", "prog"], cwd=tmp_path,
                              capture_output=True, text=True, env={**os.environ, "LINKWRAP_CONFIG_ERRORS": "warn"})
        assert proc.returncode == 0
        assert proc.stderr == ("" if n else f"linkwrap: warning: {tmp_path}/linkwrap.toml: nested too deeply to "
                               "read; linking as asked until it is fixed\n")
    assert "Traceback" not in (lw_home / "linkwrap.log").read_text()


def test_memory_settings_layer_like_the_others(project, lw_home):
    assert config.load(req(project), {}).memory == {"admission": None, "headroom_mb": 64, "max_wait_s": 300.0}
    (project / "linkwrap.toml").write_text("[memory]\nheadroom_mb = 128\n[profile.release.memory]\nadmission = false\n")
    c = config.load(req(project, "target/release/app"), {})
    assert c.memory == {"admission": False, "headroom_mb": 128, "max_wait_s": 300.0}
    assert c.sources["memory.admission"].endswith("[profile.release]")


def test_bench_background_keys_merge_over_their_defaults_and_say_where_they_came_from(project):
    (project / "linkwrap.toml").write_text("[bench]\nbackground = false\nbackground_budget_s = 30\n")
    c = config.load(req(project), {})
    assert c.background == {**config.BACKGROUND_DEFAULTS, "background": False, "background_budget_s": 30}
    assert c.sources["bench.background"].startswith("project file ")
    assert config.defaults().background["background"] is None   # unset: on, but not in CI nor on battery
