"""`linkwrap install` in a team: a committed .cargo/config.toml that works in a teammate's clone, and a
state directory that went away (real git, real cargo builds)."""
import json
import os
import shutil

import pytest

from cargokit import host_triple, new_crate
from conftest import SCRIPTS, path_without_linkwrap, stop_servers
from install.buildtools import check_signed_by_the_chosen_linker, linkwrap, run

GIT = ["git", "-c", "user.name=Test", "-c", "user.email=test@example.invalid", "-c", "init.defaultBranch=main"]


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A committed Rust project whose .cargo/config.toml is tracked (as many projects have)."""
    for var in ("RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_RUSTFLAGS", "LINKWRAP_LINKER",
                "LINKWRAP_DISABLE", "LINKWRAP_CC"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "cargo-home"))  # no global config of this machine's
    monkeypatch.setenv("RUSTUP_HOME", os.environ.get("RUSTUP_HOME", os.path.expanduser("~/.rustup")))
    root = new_crate(tmp_path, "team")
    run(["cargo", "generate-lockfile", "--offline"], cwd=root)
    os.mkdir(os.path.join(root, ".cargo"))
    with open(os.path.join(root, ".cargo", "config.toml"), "w") as f:
        f.write('[alias]\nb = "build"\n')
    run([*GIT, "init", "-q"], cwd=root)
    run([*GIT, "add", "-A"], cwd=root)
    run([*GIT, "commit", "-qm", "start"], cwd=root)
    return root


def env_for(home, on_path=True, **more):
    base = path_without_linkwrap()
    return {"LINKWRAP_HOME": str(home), "PATH": f"{SCRIPTS}{os.pathsep}{base}" if on_path else base, **more}


def python_entry(tmp_path) -> str:
    """A directory whose linkwrap-cc is a Python entry point (pip's console script of a linkwrap from
    before the wheel's native client, or the wheel's stand-in built without a compiler): the slow name."""
    d = tmp_path / "py-bin"
    if not d.exists():
        d.mkdir()
        shutil.copy2(os.path.join(SCRIPTS, "linkwrap-cc-python"), d / "linkwrap-cc")
    return str(d)


def links_recorded(cwd, env):
    done = linkwrap("summary", "--json", "--all", cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    return [link for b in json.loads(done.stdout)["builds"] for link in b["links"]]


def test_a_committed_install_builds_through_linkwrap_in_a_fresh_clone(repo, tmp_path):
    mine = env_for(tmp_path / "home-mine")
    done = linkwrap("install", cwd=repo, env=mine)
    assert done.returncode == 0, done.stderr
    config = os.path.join(repo, ".cargo", "config.toml")
    assert f'linker = "linkwrap-cc"' in open(config).read()
    assert f'note: wrote the bare name linker = "linkwrap-cc" (on PATH: {SCRIPTS}/linkwrap-cc)' in done.stdout
    assert (f"note: {config} is tracked by git: once it is committed, every teammate and CI runner needs "
            "linkwrap") in done.stdout
    # The linkwrap-cc pip installed is the native client (setup.py): the bare name is the fast entry point.
    assert "Python script" not in done.stdout and "export PATH=" not in done.stdout
    text = linkwrap("status", cwd=repo, env=mine).stdout
    assert f"linker = linkwrap-cc (runs {SCRIPTS}/linkwrap-cc: the native client, the fast entry point)" in text, text
    # A Python entry point first on PATH instead: install says how to skip it, status that it is slow.
    slow = {**mine, "PATH": f"{python_entry(tmp_path)}{os.pathsep}{mine['PATH']}"}
    done = linkwrap("install", cwd=repo, env=slow)
    fast = json.loads(linkwrap("status", "--json", cwd=repo, env=slow).stdout)["scripts"]["linkwrap-cc"]
    assert open(fast, "rb").read(4) == b"\x7fELF"
    assert (f"note: {python_entry(tmp_path)}/linkwrap-cc is a Python script (its start costs ~20 ms a link); the "
            f"native client skips it on this machine: export PATH={os.path.dirname(fast)}:$PATH") in done.stdout
    text = linkwrap("status", cwd=repo, env=slow).stdout
    assert (f"linker = linkwrap-cc (runs {python_entry(tmp_path)}/linkwrap-cc: a Python script, ~20 ms a link more "
            "than the native client") in text, text
    # With the native client first on PATH, the same committed file runs it.
    faster = {**slow, "PATH": f"{os.path.dirname(fast)}{os.pathsep}{slow['PATH']}"}
    text = linkwrap("status", cwd=repo, env=faster).stdout
    assert f"linker = linkwrap-cc (runs {fast}: the native client, the fast entry point)" in text, text
    run([*GIT, "commit", "-qam", "link through linkwrap"], cwd=repo)

    # A teammate: a fresh clone, another LINKWRAP_HOME, linkwrap on PATH.
    clone = tmp_path / "clone"
    run([*GIT, "clone", "-q", repo, clone])
    theirs = env_for(tmp_path / "home-theirs", CARGO_TARGET_DIR=str(tmp_path / "target-theirs"))
    run(["cargo", "build", "--quiet"], cwd=clone, env=theirs)
    [link] = links_recorded(clone, theirs)
    check_signed_by_the_chosen_linker(link, tmp_path / "target-theirs" / "debug" / "team")

    # Their state directory removed: nothing depended on it.
    stop_servers(tmp_path / "home-theirs")  # a link server of theirs still writes there
    shutil.rmtree(tmp_path / "home-theirs")
    done = linkwrap("status", "--json", cwd=clone, env=theirs)
    info = json.loads(done.stdout)
    assert info["warnings"] == []
    assert info["on_path"] == {"linkwrap-cc": os.path.join(SCRIPTS, "linkwrap-cc")}
    [place] = [p for p in info["places"] if p["kind"] == "cargo-project"]
    assert place["installed"] and place["linkers"] == ["linkwrap-cc"]
    os.utime(clone / "src" / "main.rs")
    run(["cargo", "build", "--quiet"], cwd=clone, env=theirs)
    assert len(links_recorded(clone, theirs)) == 1


def test_without_linkwrap_on_path_status_says_what_fails_and_what_repairs_it(repo, tmp_path):
    config = os.path.join(repo, ".cargo", "config.toml")
    home = tmp_path / "home"
    # The absolute path is the state dir's entry point here, which removing the state dir breaks
    # (the installed native client's path does not depend on it: tests/test_packaging.py).
    build_env = {"CARGO_TARGET_DIR": str(tmp_path / "target"), "LINKWRAP_INSTALL_ENTRY": "state"}
    # Committed with the bare name; then someone without linkwrap-cc on PATH.
    assert linkwrap("install", cwd=repo, env=env_for(home)).returncode == 0
    off = env_for(home, on_path=False, **build_env)
    done = linkwrap("status", cwd=repo, env=off)
    assert (f'warning: {config}: linker = "linkwrap-cc" is not on PATH: Cargo stops with "linker `linkwrap-cc` '
            f'not found" (exit 101); put {SCRIPTS} on PATH, or run `linkwrap install --absolute`') in done.stdout
    turn_off = f"CARGO_TARGET_{host_triple().upper().replace('-', '_')}_LINKER=cc"
    assert f"(this machine only); without linkwrap: {turn_off} cargo build" in done.stdout
    failed = run(["cargo", "build", "--quiet"], cwd=repo, env=off, check=False)
    # What Cargo prints (docs/install.md, "A teammate's first build"), and what status said.
    assert failed.returncode == 101 and "error: linker `linkwrap-cc` not found" in failed.stderr
    # The line status gives builds without linkwrap, the committed file untouched.
    name, value = turn_off.split("=")
    run(["cargo", "build", "--quiet"], cwd=repo, env={**off, name: value, "CARGO_TARGET_DIR": str(tmp_path / "t-off")})
    assert links_recorded(repo, off) == []

    # install there writes the absolute path, and says it must not be committed.
    done = linkwrap("install", cwd=repo, env=off)
    info = json.loads(linkwrap("status", "--json", cwd=repo, env=off).stdout)
    entry = info["scripts"]["linkwrap-cc"]
    assert info["on_path"] == {"linkwrap-cc": None}
    assert f"linker = {entry}" in done.stdout and f'linker = "{entry}"' in open(config).read()
    assert f"linkwrap: warning: {config} is tracked by git, and {entry} exists on this machine only: do not commit it" \
        in done.stderr
    run(["cargo", "build", "--quiet"], cwd=repo, env=off)

    # The state directory removed: status names the failure and the repair; the repair works.
    stop_servers(home)  # a link server the builds above started still writes there
    shutil.rmtree(home)
    done = linkwrap("status", cwd=repo, env=off)
    assert (f"warning: {config}: linker = {entry!r} does not exist: Cargo stops with \"linker `{entry}` not found\" "
            "(exit 101); `linkwrap install` writes it again") in done.stdout
    os.utime(os.path.join(repo, "src", "main.rs"))
    assert run(["cargo", "build", "--quiet"], cwd=repo, env=off, check=False).returncode == 101
    assert linkwrap("install", cwd=repo, env=off).returncode == 0
    assert "warning: " not in linkwrap("status", cwd=repo, env=off).stdout
    run(["cargo", "build", "--quiet"], cwd=repo, env=off)
    assert len(links_recorded(repo, off)) == 1


def test_global_install_is_personal(repo, tmp_path):
    """--global edits $CARGO_HOME/config.toml: nothing in the repository, no word about teammates."""
    done = linkwrap("install", "--global", cwd=repo, env=env_for(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    assert "teammate" not in done.stdout + done.stderr
    assert run([*GIT, "status", "--porcelain"], cwd=repo).stdout == ""
    # A personal file: the native client's absolute path, the fast entry point, though PATH has pip's script.
    fast = json.loads(linkwrap("status", "--json", cwd=repo, env=env_for(tmp_path / "home")).stdout)[
        "scripts"]["linkwrap-cc"]
    assert open(fast, "rb").read(4) == b"\x7fELF"
    assert f'linker = "{fast}"' in (tmp_path / "cargo-home" / "config.toml").read_text()
    assert f"note: a personal file (your own Cargo config): wrote the absolute path {fast}" in done.stdout
    assert host_triple() in (tmp_path / "cargo-home" / "config.toml").read_text()


def test_a_new_config_git_will_commit_gets_the_bare_name_and_an_ignored_one_the_native_client(repo, tmp_path):
    """What decides is what git will commit (issue 34): .cargo/config.toml untracked but not ignored
    (a new file, committed by the next `git add -A`) -> the bare name, which works for teammates; the
    same file ignored by .gitignore or by .git/info/exclude (a personal file) -> the absolute path of
    the native client; each says in one line which was written and why."""
    env = env_for(tmp_path / "home")
    config = os.path.join(repo, ".cargo", "config.toml")
    run([*GIT, "rm", "-q", "--cached", ".cargo/config.toml"], cwd=repo)
    run([*GIT, "commit", "-qm", "untrack"], cwd=repo)
    done = linkwrap("install", cwd=repo, env=env)
    assert done.returncode == 0, done.stderr
    assert 'linker = "linkwrap-cc"' in open(config).read()
    assert (f'note: wrote the bare name linker = "linkwrap-cc" (on PATH: {SCRIPTS}/linkwrap-cc): git will commit '
            "it (in a work tree, not ignored)") in done.stdout
    assert f"note: {config} will be committed (git does not ignore it)" in done.stdout
    assert linkwrap("uninstall", cwd=repo, env=env).returncode == 0
    fast = json.loads(linkwrap("status", "--json", cwd=repo, env=env).stdout)["scripts"]["linkwrap-cc"]

    for ignore in (".gitignore", os.path.join(".git", "info", "exclude")):
        with open(os.path.join(repo, ignore), "a") as f:
            f.write("/.cargo/config.toml\n")
        done = linkwrap("install", cwd=repo, env=env)
        assert done.returncode == 0, done.stderr
        assert f'linker = "{fast}"' in open(config).read(), ignore
        assert f"note: a personal file (git ignores it): wrote the absolute path {fast}" in done.stdout
        assert "do not commit" not in done.stderr and "teammate" not in done.stdout
        info = json.loads(linkwrap("status", "--json", cwd=repo, env=env).stdout)
        [place] = [p for p in info["places"] if p["kind"] == "cargo-project"]
        assert place["runs"] == {fast: {"path": fast, "fast": True, "stand_in": False}}
        if ignore == ".gitignore":
            try:
                run(["cargo", "build", "--quiet"], cwd=repo,
                    env={**env, "CARGO_TARGET_DIR": str(tmp_path / "target")})
                assert len(links_recorded(repo, env)) == 1
            finally:
                stop_servers(tmp_path / "home")  # the client's first link started one
        assert linkwrap("uninstall", cwd=repo, env=env).returncode == 0
        os.remove(os.path.join(repo, ignore)) if ignore == ".gitignore" else None

    # --bare asks for the name in the ignored (personal) file; --absolute for the path where git commits.
    done = linkwrap("install", "--bare", cwd=repo, env=env)
    assert 'linker = "linkwrap-cc"' in open(config).read()
    assert 'note: wrote the bare name linker = "linkwrap-cc" (on PATH: ' in done.stdout and "as asked (--bare)" in done.stdout
    assert linkwrap("uninstall", cwd=repo, env=env).returncode == 0
    os.truncate(os.path.join(repo, ".git", "info", "exclude"), 0)
    done = linkwrap("install", "--absolute", cwd=repo, env=env)
    assert f'linker = "{fast}"' in open(config).read()
    assert f"{config} will be committed (git does not ignore it), and {fast} exists on this machine only" in done.stderr
    assert "`linkwrap install` without --absolute writes the bare name" in done.stderr
    assert linkwrap("install", "--bare", "--absolute", cwd=repo, env=env).returncode == 2


def test_outside_git_a_config_is_personal(tmp_path, monkeypatch):
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "cargo-home"))
    root = new_crate(tmp_path, "alone")
    env = env_for(tmp_path / "home", GIT_CEILING_DIRECTORIES=str(tmp_path))
    done = linkwrap("install", cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    fast = json.loads(linkwrap("status", "--json", cwd=root, env=env).stdout)["scripts"]["linkwrap-cc"]
    assert f'linker = "{fast}"' in open(os.path.join(root, ".cargo", "config.toml")).read()
    assert f"note: a personal file (it is in no git work tree): wrote the absolute path {fast}" in done.stdout


def test_status_exits_non_zero_when_a_build_would_not_run_linkwrap_or_run_the_slow_entry_point(repo, tmp_path):
    """`linkwrap status && cargo build` in scripts and CI (issue 34); install run again gives the advice
    again instead of only "already installed"."""
    home = tmp_path / "home"
    assert linkwrap("install", cwd=repo, env=env_for(home)).returncode == 0
    # the bare name finds the native client (the wheel's linkwrap-cc): every build runs linkwrap fast
    done = linkwrap("status", cwd=repo, env=env_for(home))
    assert done.returncode == 0 and "status: exit" not in done.stdout, done.stdout
    # a Python entry point first on PATH: the slow entry point
    slow_env = {**env_for(home), "PATH": f"{python_entry(tmp_path)}{os.pathsep}{env_for(home)['PATH']}"}
    slow = linkwrap("status", cwd=repo, env=slow_env)
    assert slow.returncode == 1 and "status: exit 1: a build would run the slow Python entry point" in slow.stdout
    again = linkwrap("install", cwd=repo, env=slow_env)
    fast = json.loads(linkwrap("status", "--json", cwd=repo, env=slow_env).stdout)["scripts"]["linkwrap-cc"]
    assert again.returncode == 0 and "already installed" in again.stdout
    assert f"export PATH={os.path.dirname(fast)}:$PATH" in again.stdout  # the advice, again
    # the native client first on PATH: every build runs linkwrap fast
    faster = {**slow_env, "PATH": f"{os.path.dirname(fast)}{os.pathsep}{slow_env['PATH']}"}
    done = linkwrap("status", cwd=repo, env=faster)
    assert done.returncode == 0 and "status: exit" not in done.stdout, done.stdout
    assert json.loads(linkwrap("status", "--json", cwd=repo, env=faster).stdout)["ok"] is True
    # no linkwrap-cc on PATH: Cargo would stop; status says so and fails
    off = env_for(home, on_path=False)
    done = linkwrap("status", cwd=repo, env=off)
    assert done.returncode == 1 and "status: exit 1: a build would not run linkwrap" in done.stdout
    assert json.loads(linkwrap("status", "--json", cwd=repo, env=off).stdout)["not_running_linkwrap"]


# ---- the same rule for the files `install --ninja` / `--cmake` write into a source tree ----

def source_repo(tmp_path, example, commit_it=True):
    """A copy of examples/<example> in a git work tree of its own (committed, or files left untracked)."""
    from install.buildtools import EXAMPLES
    root = tmp_path / example
    shutil.copytree(os.path.join(EXAMPLES, example), root, ignore=shutil.ignore_patterns("build"))
    run([*GIT, "init", "-q"], cwd=root)
    if commit_it:
        run([*GIT, "add", "-A"], cwd=root)
        run([*GIT, "commit", "-qm", "start"], cwd=root)
    return root


def native_launches(calls):
    """The links that ran the linkwrap-launch PATH found (the native client; each then execs its
    -python entry point, as no server runs)."""
    return [argv for program, argv in calls if program == os.path.join(SCRIPTS, "linkwrap-launch")]


def launch_entry(env):
    done = linkwrap("status", "--json", cwd=env.get("PWD", "/"), env=env)
    return json.loads(done.stdout)["scripts"]["linkwrap-launch"]


def test_a_ninja_file_git_will_commit_gets_the_bare_launcher_and_builds_through_it(tmp_path):
    from install.buildtools import execs
    root = source_repo(tmp_path, "c-ninja")
    env = env_for(tmp_path / "home")
    done = linkwrap("install", "--ninja", cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    ninja_file = root / "build.ninja"
    assert "command = linkwrap-launch $cc " in ninja_file.read_text()
    assert (f"note: wrote the bare name the link rules' prefix linkwrap-launch (on PATH: {SCRIPTS}/linkwrap-launch): "
            "it is tracked by git") in done.stdout
    assert (f"note: {ninja_file} is tracked by git: once it is committed, every teammate and CI runner needs "
            'linkwrap') in done.stdout
    # The shell ninja runs each command with finds it on PATH: every link ran linkwrap-launch.
    # (No warm server: strace would wait for the one the native client starts, a traced child.)
    _, calls = execs(["ninja"], cwd=root, env={**env, "LINKWRAP_LINKER": "mold", "LINKWRAP_SERVER": "off"},
                     tmp=tmp_path)
    assert len(native_launches(calls)) == 3  # libgreet.so, hello, count
    assert run([root / "hello"], env={"LD_LIBRARY_PATH": str(root)}).returncode == 0
    assert json.loads(linkwrap("status", "--json", cwd=root, env=env).stdout)["ok"]

    # A teammate without linkwrap on PATH: status names what fails and exits 1.
    off = env_for(tmp_path / "home", on_path=False)
    done = linkwrap("status", cwd=root, env=off)
    assert done.returncode == 1
    assert (f"{ninja_file}: the link rules' prefix linkwrap-launch is not on PATH: the link stops with "
            '"linkwrap-launch: not found" (exit 127)') in done.stdout, done.stdout

    # Ignored now (.git/info/exclude) and untracked: a personal file, install rewrites our prefix to the path.
    run([*GIT, "rm", "-q", "--cached", "build.ninja"], cwd=root)
    (root / ".git" / "info" / "exclude").write_text("build.ninja\n")
    done = linkwrap("install", "--ninja", cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    path = launch_entry(env)
    assert f"command = {path} $cc " in ninja_file.read_text()
    assert f"rules solink link now link through {path}" in done.stdout
    assert "note: a personal file (git ignores it): wrote the absolute path" in done.stdout
    assert linkwrap("uninstall", "--ninja", cwd=root, env=env).returncode == 0
    assert ninja_file.read_bytes() == run([*GIT, "show", "HEAD:build.ninja"], cwd=root).stdout.encode()


def test_a_cmake_preset_git_will_commit_gets_the_bare_launcher_and_an_ignored_one_the_path(tmp_path):
    from install.buildtools import execs
    root = source_repo(tmp_path, "c-cmake")
    env = env_for(tmp_path / "home")
    done = linkwrap("install", "--cmake", cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    presets = root / "CMakeUserPresets.json"
    [ours] = json.loads(presets.read_text())["configurePresets"]
    assert ours["cacheVariables"]["CMAKE_C_LINKER_LAUNCHER"] == "linkwrap-launch"
    assert ("note: wrote the bare name the preset's <LANG>_LINKER_LAUNCHER linkwrap-launch (on PATH: "
            f"{SCRIPTS}/linkwrap-launch): git will commit it (in a work tree, not ignored)") in done.stdout
    assert f"note: {presets} will be committed (git does not ignore it)" in done.stdout
    # CMake puts the bare word at the front of its link rules; the build's shell finds it.
    run(["cmake", "--preset", "linkwrap", "-G", "Ninja"], cwd=root, env=env)
    _, calls = execs(["ninja", "-C", root / "build" / "linkwrap"], cwd=root, tmp=tmp_path,
                     env={**env, "LINKWRAP_LINKER": "mold", "LINKWRAP_SERVER": "off"})
    assert len(native_launches(calls)) == 4
    assert "mold" in run(["readelf", "-p", ".comment", root / "build" / "linkwrap" / "area"]).stdout
    assert linkwrap("uninstall", "--cmake", cwd=root, env=env).returncode == 0
    assert not presets.exists()

    # The user's global ignore or the project's .gitignore names the file (as CMake advises): the path.
    (root / ".gitignore").write_text("CMakeUserPresets.json\nbuild/\n")
    done = linkwrap("install", "--cmake", cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    [ours] = json.loads(presets.read_text())["configurePresets"]
    assert ours["cacheVariables"]["CMAKE_C_LINKER_LAUNCHER"] == launch_entry(env)
    assert "note: a personal file (git ignores it): wrote the absolute path" in done.stdout
    assert "will be committed" not in done.stdout and not done.stderr


def test_a_cmake_build_dir_gets_the_path_and_bare_forces_the_name_anywhere(tmp_path):
    root = source_repo(tmp_path, "c-cmake")
    env = env_for(tmp_path / "home")
    build = root / "out"  # inside the work tree and not ignored: still a build directory, never committed
    run(["cmake", "-S", root, "-B", build, "-G", "Ninja"], env=env)
    done = linkwrap("install", "--cmake", build, cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    from linkwrap.install import cmake
    assert cmake.read_cache(str(build))["CMAKE_C_LINKER_LAUNCHER"][1] == launch_entry(env)
    assert linkwrap("uninstall", "--cmake", build, cwd=root, env=env).returncode == 0
    done = linkwrap("install", "--cmake", build, "--bare", cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    assert cmake.read_cache(str(build))["CMAKE_C_LINKER_LAUNCHER"][1] == "linkwrap-launch"
    done = linkwrap("install", "--ninja", "--bare", "--absolute", cwd=root, env=env)
    assert done.returncode == 2 and "--bare and --absolute do not go together" in done.stderr
