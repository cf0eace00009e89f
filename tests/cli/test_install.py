"""`linkwrap install` / `linkwrap uninstall` from the command line: messages, exit codes, files."""
import os
import shutil

import pytest

from conftest import path_without_linkwrap, script
from install.buildtools import EXAMPLES, linkwrap
from users import other_user, reachable_dir  # noqa: F401

HOST = "x86_64-unknown-linux-gnu"


def lw(*argv, cwd, env=None):
    return linkwrap(*argv, cwd=cwd, env=env)


def entry(name):
    """The entry point `linkwrap install` writes (install/launcher.py): the installed native client,
    else the fast entry point under LINKWRAP_HOME/bin (LINKWRAP_INSTALL_ENTRY=state asks for that)."""
    from linkwrap.install import launcher
    return launcher.entry_point(name, write=False)


def lasts(name):
    """What install's note says the written path lasts for."""
    from linkwrap.install import launcher
    return ("while linkwrap's state directory is kept" if launcher.in_state_dir(entry(name))
            else "while linkwrap stays installed there (an upgrade or reinstall keeps the path)")


@pytest.fixture
def project(tmp_path, lw_home, monkeypatch):
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "cargo-home"))
    monkeypatch.setenv("PATH", path_without_linkwrap())  # the absolute path is written (test_install_git.py: PATH)
    for var in ("RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_RUSTFLAGS",
                f"CARGO_TARGET_{HOST.upper().replace('-', '_')}_LINKER"):
        monkeypatch.delenv(var, raising=False)
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text('[package]\nname = "proj"\nversion = "0.1.0"\n')
    return root


def test_install_twice_then_uninstall(project):
    config = project / ".cargo" / "config.toml"
    done = lw("install", cwd=project / "src")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"linkwrap: installed in {config} for {HOST}: linker = {entry('linkwrap-cc')}",
        f"linkwrap: note: linkwrap-cc is not on PATH, so the absolute path {entry('linkwrap-cc')} was written: "
        f"it works on this machine only, {lasts('linkwrap-cc')}; with linkwrap's bin "
        "directory on PATH, `linkwrap install` writes the bare name (or `--bare` now)",
        "linkwrap: note: Cargo hashes the linker's path, so the next build rebuilds everything once"]
    assert done.stderr == ""
    assert f'linker = "{entry("linkwrap-cc")}"' in config.read_text()
    once = config.read_bytes()

    # Run again: nothing written, and the same advice as the first time (issue 34), not only this.
    again = lw("install", cwd=project)
    assert again.returncode == 0 and again.stdout.splitlines() == [
        f"linkwrap: already installed in {config} for {HOST}", done.stdout.splitlines()[1]]
    assert config.read_bytes() == once

    gone = lw("uninstall", cwd=project)
    assert gone.returncode == 0, gone.stderr
    # It made the file and .cargo/: it says it removed them, not that it edited a file now gone.
    assert gone.stdout.startswith(f"linkwrap: removed {config}: linkwrap had created it for the linker of {HOST}\n"
                                  f"linkwrap: removed {config.parent}: linkwrap had created it, and it is empty now\n")
    assert not config.exists() and not config.parent.exists()


def test_existing_linker_refused_then_forced_then_restored(project):
    config = project / ".cargo" / "config.toml"
    config.parent.mkdir()
    original = f"# mine\n[target.{HOST}]\nlinker = \"clang\"\n"
    config.write_text(original)
    done = lw("install", cwd=project)
    assert done.returncode == 1 and done.stdout == ""
    first, hint = done.stderr.splitlines()
    assert first.startswith(f"linkwrap: error: {config} already sets a linker for {HOST} ('clang')")
    assert hint.startswith("hint: `linkwrap install --force`")
    assert config.read_text() == original
    assert lw("install", "--force", cwd=project).returncode == 0
    assert lw("uninstall", cwd=project).returncode == 0
    assert config.read_text() == original


def test_every_uninstall_says_what_it_did_and_gives_the_file_back(project, tmp_path):
    """Each way an uninstall can end, in one line of its own words: a line taken out of the user's
    file, their linker put back, one target of two, nothing there to take out; the file's bytes as
    they were before the install."""
    config = project / ".cargo" / "config.toml"
    config.parent.mkdir()
    cleanup = "linkwrap: note: Cargo hashes the linker's path, so the next build rebuilds everything once"

    def round_trip(before, *install, uninstall=()):
        config.write_text(before)
        assert lw("install", *install, cwd=project).returncode == 0
        gone = lw("uninstall", *uninstall, cwd=project)
        assert gone.returncode == 0 and gone.stderr == "", gone.stderr
        return gone.stdout.splitlines()

    mine = "[build]\njobs = 2\n"
    assert round_trip(mine) == [f"linkwrap: removed the linker for {HOST} from {config}", cleanup]
    assert config.read_text() == mine
    clang = f'[target.{HOST}]\nlinker = "clang"\n'
    assert round_trip(clang, "--force") == [f"linkwrap: restored the linker for {HOST} in {config}: 'clang'", cleanup]
    assert config.read_text() == clang
    other = "aarch64-unknown-linux-gnu"
    config.write_text(mine)
    assert lw("install", cwd=project).returncode == 0
    assert round_trip(config.read_text(), "--target", other, uninstall=("--target", other)) == [
        f"linkwrap: removed the linker for {other} from {config}", cleanup]
    assert lw("uninstall", cwd=project).stdout.splitlines()[0] == f"linkwrap: removed the linker for {HOST} from {config}"
    assert config.read_text() == mine
    # Nothing of linkwrap's there: said, exit 0 (an uninstall in a script is done either way), untouched.
    nothing = lw("uninstall", cwd=project)
    assert nothing.returncode == 0 and nothing.stdout == f"linkwrap: not installed in {config}\n"
    config.unlink()
    nothing = lw("uninstall", cwd=project)
    assert nothing.returncode == 0 and nothing.stdout == f"linkwrap: not installed in {config} (no such file)\n"
    assert not config.exists()


def test_malformed_config_is_one_line_and_untouched(project):
    config = project / ".cargo" / "config.toml"
    config.parent.mkdir()
    config.write_text("[build]\njobs = \n")
    done = lw("install", cwd=project)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"linkwrap: error: {config}:2: malformed TOML")
    assert "Traceback" not in done.stderr
    assert config.read_text() == "[build]\njobs = \n"


def test_dry_run_writes_nothing(project):
    done = lw("install", "--dry-run", "--target", "aarch64-unknown-linux-gnu", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "+[target.aarch64-unknown-linux-gnu]" in done.stdout and done.stdout.startswith("--- /dev/null")
    assert not (project / ".cargo").exists()


def test_fighting_settings_are_warned_about_one_line_each(project):
    env = {"RUSTFLAGS": "-C link-arg=-fuse-ld=gold", f"CARGO_TARGET_{HOST.upper().replace('-', '_')}_LINKER": "cc"}
    done = lw("install", cwd=project, env=env)
    assert done.returncode == 0
    warnings = done.stderr.splitlines()
    assert len(warnings) == 2 and all(w.startswith("linkwrap: warning: ") for w in warnings)
    assert any("RUSTFLAGS has link-arg=-fuse-ld=gold" in w for w in warnings)


def test_global_install_goes_to_cargo_home(project, tmp_path):
    done = lw("install", "--global", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    config = tmp_path / "cargo-home" / "config.toml"
    assert entry("linkwrap-cc") in config.read_text()
    assert lw("uninstall", "--global", cwd=tmp_path).returncode == 0
    assert not config.exists() and not config.parent.exists()


def test_no_cargo_project_says_what_to_do(tmp_path, lw_home):
    done = lw("install", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == f"linkwrap: error: no Cargo.toml in {tmp_path} or above"
    assert "--cmake" in done.stderr.splitlines()[1]


@pytest.mark.parametrize("flag, what", [("--cmake", "DIR"), ("--ninja", "FILE")])
def test_each_command_hints_at_itself(tmp_path, lw_home, flag, what):
    for command in ("install", "uninstall"):
        done = lw(command, flag, tmp_path / "nothing-here", cwd=tmp_path)
        assert done.returncode == 1 and len(done.stderr.splitlines()) == 2, done.stderr
        hint = done.stderr.splitlines()[1]
        assert f"linkwrap {command} {flag} {what}" in hint
        other = "install" if command == "uninstall" else "uninstall"
        assert f"linkwrap {other} " not in hint


def test_options_of_different_paths_do_not_mix(tmp_path, lw_home):
    done = lw("install", "--cmake", ".", "--target", HOST, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr == "linkwrap: error: --target is for Cargo projects, not --cmake\n"
    done = lw("install", "--ninja", "--global", cwd=tmp_path)
    assert done.returncode == 2 and "do not go together" in done.stderr


def test_ninja_and_cmake_paths_round_trip(tmp_path, lw_home):
    nj = tmp_path / "c-ninja"
    shutil.copytree(os.path.join(EXAMPLES, "c-ninja"), nj)
    original = (nj / "build.ninja").read_bytes()
    done = lw("install", "--ninja", cwd=nj)
    assert done.returncode == 0, done.stderr
    # One more line says which was written and why (issue 34): outside git, a personal file.
    assert done.stdout.startswith(f"linkwrap: installed in {nj / 'build.ninja'}: rules solink link now link through "
                                  f"{entry('linkwrap-launch')}\nlinkwrap: note: ")
    assert len(done.stdout.splitlines()) == 2 and "it is in no git work tree" in done.stdout
    assert lw("uninstall", "--ninja", "build.ninja", cwd=nj).returncode == 0
    assert (nj / "build.ninja").read_bytes() == original

    src = tmp_path / "c-cmake"
    shutil.copytree(os.path.join(EXAMPLES, "c-cmake"), src)
    done = lw("install", "--cmake", cwd=src)
    assert done.returncode == 0, done.stderr
    assert "configure preset 'linkwrap'" in done.stdout
    assert lw("uninstall", "--cmake", str(src), cwd=tmp_path).returncode == 0
    assert not (src / "CMakeUserPresets.json").exists()


def test_a_symlinked_config_stays_a_symlink(project, tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "cargo-config.toml"
    real.write_text("# mine\n[build]\njobs = 2\n")
    original = real.read_bytes()
    (project / ".cargo").mkdir()
    link = project / ".cargo" / "config.toml"
    link.symlink_to(real)
    done = lw("install", cwd=project)
    assert done.returncode == 0
    assert f"linkwrap: note: {link} is a symbolic link: its target {real} was edited" in done.stdout
    assert link.is_symlink() and entry("linkwrap-cc") in real.read_text()
    assert lw("uninstall", cwd=project).returncode == 0
    assert link.is_symlink() and real.read_bytes() == original


def test_forcing_over_a_compiler_driver_keeps_it_as_the_driver(project):
    (project / ".cargo").mkdir()
    (project / ".cargo" / "config.toml").write_text(f'[target.{HOST}]\nlinker = "clang"\n')
    done = lw("install", "--force", cwd=project)
    assert done.returncode == 0, done.stderr
    assert (f"linkwrap: note: linkwrap links {HOST} through 'clang' as the compiler driver (kept in its marker; "
            f"LINKWRAP_CC_{HOST.upper().replace('-', '_')} names another)") in done.stdout


def test_a_linkwrap_home_in_another_users_directory_is_refused_and_nothing_written(project, reachable_dir,
                                                                                     other_user):
    """Issue 31: the shared directory's owner could rename bin/<hash> away and put their own linkwrap-cc
    there, which the next build runs as us. Refused before anything is written, in one line."""
    if os.geteuid() != 0:
        pytest.skip("plays another user: needs root to chown")
    shared = os.path.join(reachable_dir, "shared")
    home = os.path.join(shared, "lw")
    os.makedirs(home, mode=0o700)
    os.chown(shared, other_user[1], other_user[2])
    done = lw("install", cwd=project, env={"LINKWRAP_HOME": home})
    assert done.returncode == 1
    assert done.stderr == (f"linkwrap: error: {shared} is owned by user {other_user[0]} and writable by them: "
                           "not used for linkwrap's state (set LINKWRAP_HOME to a directory of your own)\n")
    assert os.listdir(home) == [] and not (project / ".cargo").exists()


def test_an_install_whose_bin_was_handed_to_another_user_is_refused(project, lw_home, other_user, monkeypatch):
    """After a good install, bin/ becomes another user's (who could swap bin/<hash>): install again refuses,
    naming it, and writes nothing through it."""
    if os.geteuid() != 0:
        pytest.skip("plays another user: needs root to chown")
    monkeypatch.setenv("LINKWRAP_INSTALL_ENTRY", "state")  # the entry point under the state dir's bin/
    assert lw("install", cwd=project).returncode == 0
    os.chown(lw_home / "bin", other_user[1], other_user[2])
    cc = entry("linkwrap-cc")
    before = os.stat(cc)
    done = lw("install", "--force", cwd=project / "src")
    assert done.returncode == 1
    assert done.stderr == (f"linkwrap: error: {lw_home / 'bin'} is owned by user {other_user[0]} and writable by "
                           "them: not used for linkwrap's state (set LINKWRAP_HOME to a directory of your own)\n")
    assert os.stat(cc).st_mtime_ns == before.st_mtime_ns


def test_a_crlf_config_gets_crlf_lines_cargo_builds_through_them_and_uninstall_gives_its_bytes_back(project):
    """Issue 31 item 6, end to end: a .cargo/config.toml written on Windows (CRLF) gets install's block
    in CRLF too, Cargo reads it and links through linkwrap, and uninstall leaves the exact bytes."""
    import subprocess
    (project / "src" / "main.rs").write_text("fn main() {}\n")
    (project / ".cargo").mkdir()
    config = project / ".cargo" / "config.toml"
    crlf = b'[build]\r\njobs = 2\r\n\r\n[alias]\r\nb = "build"\r\n'
    config.write_bytes(crlf)
    done = lw("install", cwd=project)
    assert done.returncode == 0, done.stderr
    data = config.read_bytes()
    assert b"linkwrap-cc" in data and data.count(b"\n") == data.count(b"\r\n") > crlf.count(b"\n"), data
    built = subprocess.run(["cargo", "build", "--quiet"], cwd=project, capture_output=True, text=True,
                           env={**os.environ, "CARGO_TARGET_DIR": str(project / "target")}, timeout=600)
    assert built.returncode == 0, built.stderr
    summary = lw("summary", "--json", cwd=project)
    assert summary.returncode == 0 and '"output_path": "' + str(project / "target") in summary.stdout, summary.stdout
    gone = lw("uninstall", cwd=project)
    assert gone.returncode == 0, gone.stderr
    assert config.read_bytes() == crlf
