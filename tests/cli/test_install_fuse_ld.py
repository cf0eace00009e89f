"""The caller's -fuse-ld= in a real Cargo link through `linkwrap install` wins over rustc's own rust-lld
(issue 31 item 2).

rustc >= 1.90 puts `-B<sysroot>/…/gcc-ld -fuse-ld=lld` on every link line; a `-C link-arg=-fuse-ld=<x>`
the caller adds comes after them (link-args follow rustc's own arguments) and is what gcc obeys. Through
RUSTFLAGS and through [target.<host>].rustflags in the project's .cargo/config.toml, for each linker this
machine has: the output is signed by that linker, and linkwrap's record gives the caller's -fuse-ld= as the
reason, not rustc's default.
"""
import json
import os
import subprocess

import pytest

from cargokit import env_name, host_triple, new_crate
from conftest import comment_mark, machine_linkers, script

LINKERS = ["bfd", "gold", "mold", "lld"]
# What a linker leaves in .comment or as a section of its own (GNU ld leaves nothing of its own).
OTHERS = ("LLD", "mold", ".note.gnu.gold-version", "Linker: Wild", "Linker: linkwrap.ld")


@pytest.fixture
def crate(tmp_path, lw_home, monkeypatch):
    """A fresh std-only crate, with nothing else in the environment choosing its linker or flags."""
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "cargo-home"))
    host = host_triple()
    for var in ("RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_RUSTFLAGS", env_name(host, "RUSTFLAGS"),
                env_name(host, "LINKER")):
        monkeypatch.delenv(var, raising=False)
    return new_crate(tmp_path)


def installed_linker(name):
    found = machine_linkers().get(name)
    # A missing tool fails, as everywhere in the suite (conftest.tool): a skip would test nothing in CI.
    assert found is not None, f"{name} is not installed: scripts/install-test-deps installs the test linkers"
    return found


def install(crate):
    done = subprocess.run([script("linkwrap"), "install"], cwd=crate, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def build(crate, target, **env):
    done = subprocess.run(["cargo", "build", "--quiet"], cwd=crate, capture_output=True, text=True,
                          env={**os.environ, "CARGO_TARGET_DIR": str(target), **env}, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "linkwrap" not in done.stderr  # rustc shows a linker's output: linkwrap adds none
    binary = os.path.join(str(target), "debug", "hello")
    assert subprocess.run([binary], capture_output=True, text=True).stdout == "Hello, world!\n"
    return binary


def signed_by(name, binary) -> bool:
    """Whether the output says `name` linked it (.comment, and gold's own note section)."""
    text = subprocess.run(["readelf", "-W", "-S", "-p", ".comment", binary], capture_output=True, text=True,
                          check=True).stdout
    if name == "bfd":
        return not any(mark in text for mark in OTHERS)
    if name == "gold":
        return ".note.gnu.gold-version" in text and "LLD" not in text and "mold" not in text
    if name == "wild":
        return "Linker: Wild" in text
    return comment_mark(name) in text  # this machine's version: system lld is no rust-lld


def check_recorded_as_the_callers(crate, name):
    done = subprocess.run([script("linkwrap"), "summary", "--json"], cwd=crate, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    [build] = json.loads(done.stdout)["builds"]
    [link] = build["links"]
    assert (link["linker"], link["exit_status"], link["fell_back"]) == (name, 0, False), link
    assert link["reasons"][0].startswith(f"the command line asks for -fuse-ld={name}: "), link["reasons"]
    assert not any("rustc" in reason for reason in link["reasons"]), link["reasons"]


@pytest.mark.parametrize("name", LINKERS)
def test_rustflags_fuse_ld_wins_over_rustcs_lld(crate, tmp_path, name):
    installed_linker(name)
    install(crate)
    binary = build(crate, tmp_path / "target", RUSTFLAGS=f"-C link-arg=-fuse-ld={name}")
    assert signed_by(name, binary)
    check_recorded_as_the_callers(crate, name)


@pytest.mark.parametrize("name", LINKERS)
def test_target_rustflags_in_config_toml_fuse_ld_wins_over_rustcs_lld(crate, tmp_path, name):
    installed_linker(name)
    config = os.path.join(crate, ".cargo", "config.toml")
    os.mkdir(os.path.dirname(config))
    with open(config, "w") as f:
        f.write(f'[target.{host_triple()}]\nrustflags = ["-C", "link-arg=-fuse-ld={name}"]\n')
    install(crate)
    with open(config) as f:
        assert f'"link-arg=-fuse-ld={name}"' in f.read()  # install kept the caller's flags
    binary = build(crate, tmp_path / "target")
    assert signed_by(name, binary)
    check_recorded_as_the_callers(crate, name)


def test_without_the_callers_fuse_ld_linkwrap_chooses_and_says_why(crate, tmp_path):
    """The same build without a -fuse-ld= of the caller's is linkwrap's to choose (rustc's rust-lld
    is a default, not a choice; with nothing measured on this machine the machine's prior order,
    docs/policy.md 1.4): the output is signed by the linker the record names, and no reason speaks
    of a -fuse-ld= -- what the reasons above are told apart from."""
    installed_linker("rust-lld")
    install(crate)
    binary = build(crate, tmp_path / "target")
    done = subprocess.run([script("linkwrap"), "summary", "--json"], cwd=crate, capture_output=True, text=True)
    [link] = json.loads(done.stdout)["builds"][0]["links"]
    assert signed_by(link["linker"], binary), link["linker"]
    assert any("rust-lld" in reason for reason in link["reasons"]), link["reasons"]  # rustc's default, named
    assert not any("-fuse-ld" in reason for reason in link["reasons"]), link["reasons"]
