"""linkwrap/install/trial.py: `linkwrap run -- <build>` links through linkwrap without touching a file."""
import json
import os
import shutil

from cargokit import env_name, host_triple, new_crate
from install.buildtools import EXAMPLES, check_signed_by_the_chosen_linker, run
from linkrecords import lw
from linkwrap.install import cmake, trial

def snapshot(root):
    """{relative path: bytes or symlink target} of every file under root."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                out[rel] = ("link", os.readlink(path))
            else:
                with open(path, "rb") as f:
                    out[rel] = f.read()
    return out


def test_cargo_build_in_an_untouched_project_links_through_linkwrap(tmp_path, lw_home):
    crate = new_crate(tmp_path)
    run(["cargo", "generate-lockfile", "--offline"], cwd=crate)
    before = snapshot(crate)
    target = tmp_path / "target"
    done = lw("run", "--json", "--", "cargo", "build", "--quiet", cwd=crate, env={"CARGO_TARGET_DIR": str(target)})
    assert snapshot(crate) == before  # not one byte of the project changed
    assert not (lw_home / "installs").exists() or not os.listdir(lw_home / "installs")  # nothing noted either
    [b] = json.loads(done.stdout)["builds"]
    [link] = b["links"]
    check_signed_by_the_chosen_linker(link, target / "debug" / "hello")
    assert run([target / "debug" / "hello"]).stdout == "Hello, world!\n"
    assert "Cargo links through linkwrap for this run only" in done.stderr
    # An explicit --target gets its own variable (the host's triple here: no other std is installed).
    env, notes = trial.prepare(["cargo", "build", "--target", host_triple()], {"PATH": os.environ["PATH"]})
    assert os.path.basename(env[env_name(host_triple())]) == "linkwrap-cc"


def test_cargo_targets_come_from_the_command_line_then_the_environment_then_the_config():
    argv = ["build", "--target", "a-b-c", "--target=d-e-f", "--", "--target", "not-this"]
    assert trial.cargo_targets(argv, {}, []) == ["a-b-c", "d-e-f"]
    assert trial.cargo_targets(["build"], {"CARGO_BUILD_TARGET": "x-y-z"}, []) == ["x-y-z"]
    configs = [("near", {"build": {"target": ["p-q-r", "s-t-u"]}}), ("far", {"build": {"target": "no"}})]
    assert trial.cargo_targets(["build"], {}, configs) == ["p-q-r", "s-t-u"]
    assert trial.env_key("aarch64-unknown-linux-gnu") == "AARCH64_UNKNOWN_LINUX_GNU"
    assert trial.env_key("thumbv7em-none-eabihf.json") == "THUMBV7EM_NONE_EABIHF_JSON"


def test_a_linker_someone_set_stays_in_charge(tmp_path, monkeypatch, lw_home):
    host = host_triple()
    crate = new_crate(tmp_path)
    monkeypatch.chdir(crate)
    os.mkdir(os.path.join(crate, ".cargo"))
    config = os.path.join(crate, ".cargo", "config.toml")
    base = {"PATH": os.environ["PATH"]}
    # A compiler driver in the config: linkwrap links, through that driver.
    with open(config, "w") as f:
        f.write(f'[target.{host}]\nlinker = "clang"\n')
    env, _ = trial.prepare(["cargo", "build"], base)
    assert os.path.basename(env[env_name(host)]) == "linkwrap-cc"
    assert env[f"LINKWRAP_CC_{trial.env_key(host)}"] == "clang"
    # A linker in the config (rustc calls it as ld): left alone, and said.
    with open(config, "w") as f:
        f.write(f'[target.{host}]\nlinker = "ld.lld"\n')
    env, notes = trial.prepare(["cargo", "build"], base)
    assert env_name(host) not in env
    assert notes == [f"the Cargo config sets linker = 'ld.lld' for {host}: left in charge, "
                     "its links do not go through linkwrap"]
    # The environment's own choice wins over everything.
    env, notes = trial.prepare(["cargo", "build"], {**base, env_name(host): "/usr/bin/cc"})
    assert env[env_name(host)] == "/usr/bin/cc"
    assert notes == [f"{env_name(host)}=/usr/bin/cc is set: {host} links run it, not linkwrap"]


def test_cmake_configure_and_build_link_through_linkwrap(tmp_path, lw_home):
    source = tmp_path / "c-cmake"
    shutil.copytree(os.path.join(EXAMPLES, "c-cmake"), source, ignore=shutil.ignore_patterns("build"))
    before = snapshot(source)
    build = tmp_path / "build"
    done = lw("run", "--", "cmake", "-S", source, "-B", build, "-G", "Ninja", cwd=tmp_path)
    assert f"the new build directory {build} links through linkwrap" in done.stderr
    done = lw("run", "--json", "--", "cmake", "--build", build, cwd=tmp_path)
    assert "linkwrap: note:" not in done.stderr  # configured with the launcher: nothing to say
    [b] = json.loads(done.stdout)["builds"]
    links = {os.path.basename(link["output_path"]): link for link in b["links"]}
    assert set(links) == {"libshapes.so", "area", "perimeter", "version"}
    for name, link in links.items():
        check_signed_by_the_chosen_linker(link, build / name)
    assert snapshot(source) == before


def test_a_build_directory_configured_by_run_is_listed_and_uninstalled(tmp_path, lw_home):
    source = tmp_path / "c-cmake"
    shutil.copytree(os.path.join(EXAMPLES, "c-cmake"), source, ignore=shutil.ignore_patterns("build"))
    build = tmp_path / "my build"  # the hint is a command to copy: quoted where a shell needs it
    done = lw("run", "--", "cmake", "-S", source, "-B", build, "-G", "Ninja", cwd=tmp_path)
    assert f"`linkwrap uninstall --cmake '{build}'` takes it out" in done.stderr
    assert f"cmake build dir  {build}: installed (CMAKE_CXX_LINKER_LAUNCHER, CMAKE_C_LINKER_LAUNCHER) (no marker" in lw("status", cwd=tmp_path).stdout
    assert "already installed" in lw("install", "--cmake", build, cwd=tmp_path).stdout
    done = lw("uninstall", "--cmake", build, cwd=tmp_path)
    assert "removed linkwrap's launcher" in done.stdout and "CMAKE_CXX_LINKER_LAUNCHER" in done.stdout
    assert not [n for n in cmake.read_cache(build) if n.endswith("_LINKER_LAUNCHER")]
    assert "linkwrap-launch" not in (build / "CMakeFiles" / "rules.ninja").read_text()
    assert "not installed" in lw("uninstall", "--cmake", build, cwd=tmp_path).stdout
    assert str(build) not in lw("status", cwd=tmp_path).stdout


def test_a_build_directory_configured_without_linkwrap_gets_the_install_command(tmp_path, lw_home):
    source = tmp_path / "c-cmake"
    shutil.copytree(os.path.join(EXAMPLES, "c-cmake"), source, ignore=shutil.ignore_patterns("build"))
    build = tmp_path / "my build"
    run(["cmake", "-S", source, "-B", build, "-G", "Ninja"])
    done = lw("run", "--", "cmake", "--build", build, cwd=tmp_path)
    hint = f"`linkwrap install --cmake '{build}'` makes them run linkwrap"
    assert hint in done.stderr
    done = lw("run", "--", "ninja", "-C", build, cwd=tmp_path)
    assert hint in done.stderr


def test_a_hand_written_ninja_file_gets_the_install_command_and_is_left_alone(tmp_path, lw_home):
    folder = tmp_path / "c-ninja"
    shutil.copytree(os.path.join(EXAMPLES, "c-ninja"), folder)
    before = (folder / "build.ninja").read_bytes()
    done = lw("run", "--", "ninja", cwd=folder)
    lines = [line for line in done.stderr.splitlines() if line.startswith("linkwrap: note:")]
    assert lines == [f"linkwrap: note: {folder / 'build.ninja'} does not run linkwrap, and a ninja file's link "
                     f"rules cannot be redirected from outside: `linkwrap install --ninja {folder / 'build.ninja'}` "
                     "makes them (`linkwrap uninstall --ninja` undoes it)"]
    assert (folder / "build.ninja").read_bytes() == before
    # Installed, it has nothing to say.
    lw("install", "--ninja", folder / "build.ninja", cwd=folder)
    done = lw("run", "--", "ninja", cwd=folder)
    assert "linkwrap: note:" not in done.stderr


def test_a_foreign_script_with_linkwraps_name_and_an_unbalanced_quote_is_not_an_install(tmp_path):
    # Found in review: shlex's ValueError escaped, and `status` / `run` ended with "unexpected error".
    odd = tmp_path / "linkwrap-cc"
    odd.write_text('#!/bin/sh\npy="/usr/bin/python3\nexec "$py" -m linkwrap.cc "$@"\n')
    odd.chmod(0o755)
    assert trial.install_of(str(odd)) is None
    assert trial.other_install(str(odd)) is None
