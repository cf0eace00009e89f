"""Linker discovery and version parsing, against the real version strings."""
import os
import stat
import subprocess

import pytest

from conftest import tool
from linkwrap.facts import linkers

# Version strings as shared/reference/linkers.md quotes them (§1.5, §2.4, §3.3, §4).
VERSION_TEXTS = [
    ("mold", "mold 1.10.1 (compatible with GNU ld)", (1, 10, 1)),
    ("mold", "mold 2.40.4 (6e57fb1b4ba4a4d1ee3f1f3b9d0e4b3c2f9aa0b1; compatible with GNU ld)", (2, 40, 4)),
    ("mold", "mold (sold) 1.11.0 (compatible with GNU ld)", (1, 11, 0)),
    ("mold", "mold 1.0.0 (3f1f3b9d; compatible with GNU ld and GNU gold)", (1, 0, 0)),
    ("wild", "Wild version 0.6.0 (compatible with GNU linkers)", (0, 6, 0)),
    ("wild", "Wild version 0.8.0 (0123456789abcdef0123456789abcdef01234567) (compatible with GNU linkers)", (0, 8, 0)),
    ("wild", "Wild 0.9.0 (compatible with GNU linkers)", (0, 9, 0)),
    ("wild", "Wild 0.10.0 non-git-build (compatible with GNU linkers)", (0, 10, 0)),
    ("wild", "Wild 0.9.0 1a2b3c4d-modified (compatible with GNU linkers)", (0, 9, 0)),
    ("wild", "Wild 1a2b3c4d5e (compatible with GNU linkers)", None),  # a main build: no number
    ("lld", "Debian LLD 16.0.6 (compatible with GNU linkers)", (16, 0, 6)),
    ("lld", "Ubuntu LLD 18.1.3 (compatible with GNU linkers)", (18, 1, 3)),
    ("rust-lld", "LLD 22.1.2 (/checkout/src/llvm-project/llvm 1cb4e38) (compatible with GNU linkers)", (22, 1, 2)),
    ("bfd", "GNU ld (GNU Binutils for Debian) 2.40", (2, 40)),
    ("bfd", "GNU ld (GNU Binutils) 2.42", (2, 42)),
    ("bfd", "GNU ld version 2.40-14.fc39", (2, 40)),
    ("gold", "GNU gold (GNU Binutils for Debian 2.40) 1.16", (2, 40)),
    ("gold", "GNU gold (version 2.40-14.fc39) 1.16", (2, 40)),
    ("mold", "", None),
]


@pytest.mark.parametrize("name,text,expected", VERSION_TEXTS)
def test_parse_version(name, text, expected):
    assert linkers.parse_version(name, text) == expected


def _asked(cmd):
    """The first line a tool prints for --version, asked here, not by linkwrap."""
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"}).stdout
    return out.strip().splitlines()[0]


def test_discovers_this_machines_linkers_with_real_versions(lw_home):
    found = linkers.discover()
    for name, exe in (("mold", "mold"), ("bfd", "ld.bfd"), ("gold", "ld.gold")):
        assert found[name].path == tool(exe)
        assert found[name].version == linkers.parse_version(name, _asked([tool(exe), "--version"])) is not None
    assert os.path.basename(found["lld"].path).startswith("ld.lld")
    assert found["lld"].version == linkers.parse_version("lld", _asked([found["lld"].path, "--version"]))
    assert found["rust-lld"].path == rust_lld()  # from `rustc --print sysroot`
    assert found["rust-lld"].version == linkers.parse_version(
        "rust-lld", _asked([rust_lld(), "-flavor", "gnu", "--version"]))
    assert found["python"].path.endswith("linkwrap-ld")


def rust_lld():
    sysroot = subprocess.run([tool("rustc"), "--print", "sysroot"], capture_output=True, text=True).stdout.strip()
    host = next(l.split(":", 1)[1].strip() for l in subprocess.run(
        [tool("rustc"), "-vV"], capture_output=True, text=True).stdout.splitlines() if l.startswith("host:"))
    return os.path.join(sysroot, "lib", "rustlib", host, "bin", "rust-lld")


def _lld_version(path):
    flavor = ["-flavor", "gnu"] if path.endswith("rust-lld") else []
    return linkers.parse_version("lld", _asked([path, *flavor, "--version"]))


def system_lld():
    """This machine's own ld.lld-NN or ld.lld (not rust-lld), found by name on PATH."""
    for d in os.environ["PATH"].split(os.pathsep):
        for n in sorted(os.listdir(d) if os.path.isdir(d) else []):
            if n == "ld.lld" or n.startswith("ld.lld-") and n[7:].isdigit():
                return os.path.join(d, n)
    raise AssertionError("no ld.lld on PATH: run scripts/install-test-deps")


@pytest.mark.parametrize("plain_is_newer", [False, True])
def test_the_newest_ld_lld_is_chosen_whatever_its_name(tmp_path, lw_home, plain_is_newer):
    # Two real LLDs of different versions: the system's and rustc's (LLD answers to ld.lld* names).
    older, newer = sorted([system_lld(), rust_lld()], key=_lld_version)
    v_old, v_new = _lld_version(older), _lld_version(newer)
    assert v_old < v_new
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    if plain_is_newer:  # ld.lld later on PATH but newer
        os.symlink(older, first / f"ld.lld-{v_old[0]}")
        os.symlink(newer, second / "ld.lld")
        expected = second / "ld.lld"
    else:  # Debian's lld (14) as ld.lld first on PATH, lld-16 as ld.lld-16
        os.symlink(older, first / "ld.lld")
        os.symlink(newer, second / f"ld.lld-{v_new[0]}")
        expected = second / f"ld.lld-{v_new[0]}"
    found = linkers.discover(environ={"PATH": f"{first}:{second}"})
    assert found["lld"].path == str(expected) and found["lld"].version == v_new


def _recording_stand_in(path, log):
    """A stand-in for a linker that only answers --version and logs each call."""
    path.write_text(f'#!/bin/sh\necho "$@" >> {log}\necho "mold 9.9.9 (compatible with GNU ld)"\n')
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_warm_discovery_runs_no_version_process(tmp_path, lw_home):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "calls.log"
    _recording_stand_in(bindir / "mold", log)
    env = {"PATH": str(bindir)}
    assert linkers.discover(environ=env)["mold"].version == (9, 9, 9)
    assert linkers.discover(environ=env)["mold"].version == (9, 9, 9)
    assert log.read_text().splitlines() == ["--version"]  # once, then cached
    # A changed binary (new mtime and size) is asked again.
    _recording_stand_in(bindir / "mold", log)
    (bindir / "mold").write_text((bindir / "mold").read_text().replace("9.9.9", "9.10.0") + "\n")
    os.utime(bindir / "mold", ns=(1, 1))
    assert linkers.discover(environ=env)["mold"].version == (9, 10, 0)


def test_shim_dir_points_every_name_at_the_linker(lw_home):
    info = linkers.discover()["mold"]
    d = linkers.shim_dir(info)
    for n in ("ld", "ld.lld", "ld.bfd", "ld.gold", "ld.mold", "ld.wild"):
        assert os.path.realpath(os.path.join(d, n)) == os.path.realpath(info.path)
    assert sorted(os.listdir(d)) == sorted(["ld", "ld.lld", "ld.bfd", "ld.gold", "ld.mold", "ld.wild"])
    assert linkers.shim_dir(info) == d


def test_a_shim_whose_ld_points_elsewhere_is_made_anew(lw_home):
    info = linkers.discover()["mold"]
    d = linkers.shim_dir(info)
    os.unlink(os.path.join(d, "ld"))
    os.symlink("/bin/true", os.path.join(d, "ld"))  # a stale shim (or one left half made)
    assert linkers.shim_dir(info) == d
    assert os.readlink(os.path.join(d, "ld")) == info.path
    assert sorted(os.listdir(d)) == sorted(["ld", "ld.lld", "ld.bfd", "ld.gold", "ld.mold", "ld.wild"])


def test_a_linker_installed_later_is_found(tmp_path, lw_home):
    """The PATH search is cached per directory mtime: a new binary must still be seen."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    env = {"PATH": str(bindir)}
    assert "mold" not in linkers.discover(environ=env)
    _recording_stand_in(bindir / "mold", tmp_path / "calls.log")
    assert linkers.discover(environ=env)["mold"].version == (9, 9, 9)
    (bindir / "mold").unlink()
    assert "mold" not in linkers.discover(environ=env)


def test_a_link_rustc_did_not_make_never_runs_rustc(tmp_path, lw_home):
    """rustup resolves a toolchain per directory (and may download one): C links must not ask it."""
    from linkwrap.request import args
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "rustc.log"
    (bindir / "rustc").write_text(f'#!/bin/sh\necho "$@" >> {log}\nexit 1\n')  # a recording stand-in
    (bindir / "rustc").chmod(0o755)
    env = {"PATH": f"{bindir}:/usr/bin:/bin"}
    request = args.parse(["hello.o", "-o", "hello"], environ=env, cwd=str(tmp_path))
    assert "rust-lld" not in linkers.discover(request, env)
    assert not log.exists()


def test_a_links_linkers_kept_in_memory_are_found_again_when_anything_changed(tmp_path, lw_home):
    """A server's spare keeps what it found for the link it rehearsed (discover's memo): a linker
    installed, replaced by another version or removed is still seen by the next link."""
    from linkwrap.request import args
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "calls.log"
    env = {"PATH": str(bindir)}
    request = args.parse(["x.o", "-o", "x"], "cc", env, cwd=str(tmp_path))
    assert "mold" not in linkers.discover(request, env)
    _recording_stand_in(bindir / "mold", log)
    assert linkers.discover(request, env)["mold"].version == (9, 9, 9)
    kept = linkers._last
    assert linkers.discover(request, env)["mold"].version == (9, 9, 9)
    assert linkers._last is kept and log.read_text().splitlines() == ["--version"]  # from memory
    replaced = tmp_path / "mold.new"
    _recording_stand_in(replaced, log)
    replaced.write_text(replaced.read_text().replace("9.9.9", "9.10.0"))
    os.rename(replaced, bindir / "mold")  # as a package manager installs it
    assert linkers.discover(request, env)["mold"].version == (9, 10, 0)
    (bindir / "mold").unlink()
    assert "mold" not in linkers.discover(request, env)


STAND_IN = """#!/bin/sh
# a stand-in linker (named as one): answers --version only once the other one has been asked too
touch {dir}/{me}.asked
i=0
while [ ! -e {dir}/{other}.asked ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if [ -e {dir}/{other}.asked ]; then echo "{together}"; else echo "{alone}"; fi
"""


def test_a_cold_cache_asks_every_linker_for_its_version_at_once(lw_home, tmp_path):
    """The first link of a fresh install waits for the slowest `--version`, not for their sum: two
    stand-ins that each answer one version when asked alongside the other and another when asked
    alone (after 5 s of waiting for it) show which way discovery asked them."""
    d = tmp_path / "bin"
    d.mkdir()
    for me, other, together, alone in (("mold", "wild", "mold 9.1.0 (compatible with GNU ld)", "mold 1.0.0"),
                                       ("wild", "mold", "Wild version 9.2.0 (compatible with GNU linkers)",
                                        "Wild version 0.1.0")):
        p = d / me
        p.write_text(STAND_IN.format(dir=d, me=me, other=other, together=together, alone=alone))
        p.chmod(0o755)
    found = linkers.discover(environ={"PATH": str(d)})
    assert (found["mold"].version, found["wild"].version) == ((9, 1, 0), (9, 2, 0))
    # and the cache answers the next discovery without asking again
    (d / "mold.asked").unlink()
    (d / "wild.asked").unlink()
    again = linkers.discover(environ={"PATH": str(d)})
    assert (again["mold"].version, again["wild"].version) == ((9, 1, 0), (9, 2, 0))
    assert not (d / "mold.asked").exists()
