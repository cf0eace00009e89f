"""`linkwrap status`: where linkwrap is installed (Cargo project, global, CMake, ninja), text and --json."""
import json
import os
import shutil

import pytest

from conftest import SCRIPTS, path_without_linkwrap, script
from install.buildtools import EXAMPLES, linkwrap, run
from users import other_user  # noqa: F401

HOST = "x86_64-unknown-linux-gnu"


def lw(*argv, cwd, env=None):
    return linkwrap(*argv, cwd=cwd, env=env)


@pytest.fixture
def project(tmp_path, lw_home, monkeypatch):
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "cargo-home"))
    monkeypatch.setenv("PATH", path_without_linkwrap())  # the absolute path is written (test_install_git.py: PATH)
    monkeypatch.delenv("RUSTFLAGS", raising=False)
    root = tmp_path / "proj"
    root.mkdir()
    (root / "Cargo.toml").write_text('[package]\nname = "proj"\nversion = "0.1.0"\n')
    return root


def status(cwd, env=None):
    done = lw("status", "--json", cwd=cwd, env=env)
    info = json.loads(done.stdout)
    # exit 1 exactly when a build would not run linkwrap or would run the slow entry point (issue 34)
    assert done.returncode == (0 if info["ok"] else 1), done.stderr
    assert info["ok"] == (not info["not_running_linkwrap"] and not info["slow_entry_points"])
    return info


def test_nothing_installed(project, tmp_path):
    info = status(project)
    from linkwrap.install import launcher
    assert info["scripts"] == {n: launcher.entry_point(n, write=False) for n in ("linkwrap-cc", "linkwrap-launch")}
    kinds = {p["kind"]: p for p in info["places"]}
    assert set(kinds) == {"cargo-project", "cargo-global"}
    assert not any(p["installed"] for p in info["places"])
    text = lw("status", cwd=project).stdout
    assert f"cargo project    {project / '.cargo' / 'config.toml'}: not installed (no such file)" in text


def test_every_kind_of_install_is_listed_then_gone(project, tmp_path):
    nj = tmp_path / "c-ninja"
    shutil.copytree(os.path.join(EXAMPLES, "c-ninja"), nj)
    src = tmp_path / "c-cmake"
    shutil.copytree(os.path.join(EXAMPLES, "c-cmake"), src)
    build = tmp_path / "cmake-build"
    run(["cmake", "-S", src, "-B", build, "-G", "Ninja"])
    for argv in (("install",), ("install", "--ninja", nj / "build.ninja"), ("install", "--cmake", src),
                 ("install", "--cmake", build)):
        done = lw(*argv, cwd=project)
        assert done.returncode == 0, done.stderr

    info = status(project, env={"RUSTFLAGS": "-Clinker=clang"})
    places = {p["kind"]: p for p in info["places"]}
    assert places["cargo-project"]["installed"] and places["cargo-project"]["targets"] == [HOST]
    assert places["cargo-project"]["marked"] is True
    from linkwrap.install import launcher
    launch = launcher.entry_point("linkwrap-launch", write=False)
    # Outside git, the ninja file is personal: the absolute launcher, and what it runs.
    assert places["ninja"].pop("runs") == {launch: {"path": launch, "fast": True, "stand_in": False}}
    assert places["ninja"] == {"kind": "ninja", "path": str(nj / "build.ninja"), "installed": True,
                               "rules": ["solink", "link"]}
    assert places["cmake-presets"]["installed"] and places["cmake-presets"]["preset"] == "linkwrap"
    assert places["cmake-cache"]["entries"] == ["CMAKE_CXX_LINKER_LAUNCHER", "CMAKE_C_LINKER_LAUNCHER"]
    assert info["warnings"] == ["RUSTFLAGS has -Clinker=clang: it fights the linker linkwrap chooses"]

    text = lw("status", cwd=project).stdout.splitlines()
    assert f"cargo project    {project / '.cargo' / 'config.toml'}: installed for {HOST}" in text
    assert f"ninja file       {nj / 'build.ninja'}: installed (rules: solink link)" in text
    assert f"cmake build dir  {build}: installed (CMAKE_CXX_LINKER_LAUNCHER, CMAKE_C_LINKER_LAUNCHER)" in text

    # Removed by hand: status reads the file again and says so.
    shutil.copy(os.path.join(EXAMPLES, "c-ninja", "build.ninja"), nj / "build.ninja")
    assert {p["kind"]: p for p in status(project)["places"]}["ninja"]["installed"] is False

    for argv in (("uninstall",), ("uninstall", "--cmake", src), ("uninstall", "--cmake", build)):
        assert lw(*argv, cwd=project).returncode == 0
    info = status(project)
    assert not any(p["installed"] for p in info["places"])
    assert {p["kind"] for p in info["places"]} == {"cargo-project", "cargo-global", "ninja"}


def test_a_linker_set_by_hand_is_shown_as_such(project):
    (project / ".cargo").mkdir()
    (project / ".cargo" / "config.toml").write_text(f'[target.{HOST}]\nlinker = "{os.path.join(SCRIPTS, "linkwrap-cc")}"\n')
    text = lw("status", cwd=project).stdout
    assert f"installed for {HOST} (set by hand)" in text


def test_malformed_config_is_reported_not_raised(project):
    (project / ".cargo").mkdir()
    (project / ".cargo" / "config.toml").write_text("[target\n")
    done = lw("status", cwd=project)
    assert done.returncode == 0
    assert f"{project / '.cargo' / 'config.toml'}: unreadable: {project / '.cargo' / 'config.toml'}:1: malformed TOML" \
        in done.stdout


def test_an_entry_point_whose_python_is_gone_is_reported(project, tmp_path, monkeypatch):
    monkeypatch.setenv("LINKWRAP_INSTALL_ENTRY", "state")  # the state dir's client and its script
    assert lw("install", cwd=project).returncode == 0
    info = status(project)
    [cargo_place] = [p for p in info["places"] if p["kind"] == "cargo-project"]
    [entry] = cargo_place["linkers"]
    assert info["warnings"] == []
    # As after deleting the virtual environment linkwrap was installed from (the native client's script).
    entry = os.path.join(os.path.dirname(entry), "py", os.path.basename(entry))
    text = open(entry).read()
    open(entry, "w").write("\n".join("py=/deleted/venv/bin/python" if l.startswith("py=") else l
                                     for l in text.splitlines()) + "\n")
    after = status(project)
    warnings = after["warnings"]
    assert len(warnings) == 1 and "its Python /deleted/venv/bin/python is gone" in warnings[0]
    assert after["ok"] is False and after["not_running_linkwrap"] == warnings
    done = lw("status", cwd=project)
    assert "warning: " in done.stdout and done.returncode == 1
    assert done.stdout.splitlines()[-1] == "status: exit 1: a build would not run linkwrap"


def test_an_install_whose_home_was_handed_to_another_user_is_named(project, lw_home, other_user, monkeypatch):
    """Issue 31: once linkwrap's home is another user's, status says so -- both as the state's problem
    and as the reason the installed linker (the state dir's client) will not run linkwrap."""
    if os.geteuid() != 0:
        pytest.skip("plays another user: needs root to chown")
    monkeypatch.setenv("LINKWRAP_INSTALL_ENTRY", "state")
    assert lw("install", cwd=project).returncode == 0
    os.chown(lw_home, other_user[1], other_user[2])
    warnings = status(project)["warnings"]
    theirs = f"{lw_home} is owned by user {other_user[0]} and writable by them"
    assert warnings[0] == (f"{theirs}: linkwrap's state is not used there (links run as asked, without "
                           "linkwrap); set LINKWRAP_HOME to a directory of your own")
    assert any(f"will not run linkwrap ({theirs}: its owner could put their own program there)" in w
               for w in warnings[1:]), warnings
