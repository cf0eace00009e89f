"""`linkwrap explain`: real filesystems, real outputs, real linkers; the --json keys are a stable interface."""
import json
import os
import subprocess
import sys

import pytest

import mounts
from clirun import linkwrap

STANDINS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "standins")


def explain(*argv, cwd, env=None):
    done = linkwrap("explain", "--json", *argv, cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return json.loads(done.stdout)


def big_file(path, mib=16):
    """An output large enough for the probe to measure its page cache share; just written, so cached."""
    with open(path, "wb") as f:
        f.write(os.urandom(mib << 20))
    os.chmod(path, 0o755)


def test_json_keys_are_the_stable_interface(tmp_path, lw_home):
    data = explain("out", cwd=tmp_path)
    assert {"probe", "decision"} <= set(data)
    p, d = data["probe"], data["decision"]
    assert {"fs", "fs_options", "kernel", "output", "cpus", "mem_available_mb"} <= set(p)
    assert {"exists", "nlink", "held_by_others", "cached_fraction"} <= set(p["output"])
    assert {"linker", "version", "flags", "write_mode", "reasons"} <= set(d)
    assert d["write_mode"] in ("in-place", "fresh")
    assert isinstance(d["flags"], list) and all(isinstance(f, str) for f in d["flags"])
    assert d["reasons"] and all(isinstance(r, str) for r in d["reasons"])
    # values of this machine (Debian 12, kernel 6.x, mold 1.10.1 first in the default order)
    assert p["output"]["exists"] is False
    assert isinstance(p["cpus"], int) and p["cpus"] >= 1
    assert p["kernel"] == os.uname().release.split("-")[0].split("+")[0]
    assert (d["linker"], d["version"]) == ("mold", "1.10.1")
    assert d["flags"] == ["--no-fork", f"--threads={p['cpus']}"]
    assert d["write_mode"] == "fresh" and d["reasons"][-1] == "no existing output -> fresh"
    assert data["request"] == {"output": str(tmp_path / "out"), "kind": "pie", "cwd": str(tmp_path),
                               "driver": "cc", "fuse_ld": None}


@pytest.mark.parametrize("fstype, options, expect_option", [
    ("btrfs", "compress=zstd", "compress=zstd"),
    ("xfs", None, None),
    ("ext4", None, None),
    ("tmpfs", None, None),
])
def test_each_filesystem_is_named(tmp_path, lw_home, fstype, options, expect_option):
    with mounts.filesystem(tmp_path, fstype, options) as point:
        p = explain(os.path.join(point, "out"), cwd=tmp_path)["probe"]
    assert p["fs"] == fstype
    assert p["fs_local"] is True
    if expect_option:
        assert expect_option in p["fs_options"]


def wild_standin(tmp_path, version):
    """A directory whose `wild` is the recording stand-in (tests/standins/wild.py) of that version."""
    bindir = tmp_path / f"wild-{version}"
    bindir.mkdir()
    exe = bindir / "wild"
    exe.write_text(f'#!/bin/sh\nWILD_STANDIN_VERSION={version} exec {sys.executable} {STANDINS}/wild.py "$@"\n')
    exe.chmod(0o755)
    return {"PATH": f"{bindir}:{os.environ['PATH']}", "LINKWRAP_LINKER": "wild"}


def test_wild_gets_mmap_on_btrfs_and_not_on_ext4(tmp_path, lw_home):
    env = wild_standin(tmp_path, "0.10.0")
    found = {}
    for fstype in ("btrfs", "ext4"):
        with mounts.filesystem(tmp_path, fstype) as point:
            found[fstype] = explain(os.path.join(point, "out"), cwd=tmp_path, env=env)
    btrfs, ext4 = found["btrfs"]["decision"], found["ext4"]["decision"]
    cpus = found["btrfs"]["probe"]["cpus"]
    assert (btrfs["linker"], btrfs["version"]) == ("wild", "0.10.0")
    assert btrfs["flags"] == ["--no-fork", f"--threads={cpus}", "--mmap-output-file", "--no-update-in-place"]
    assert ext4["flags"] == ["--no-fork", f"--threads={cpus}", "--no-update-in-place"]
    assert any("wild buffers its output on btrfs" in r for r in btrfs["reasons"])


def test_in_place_only_while_every_condition_holds(tmp_path, lw_home):
    out = tmp_path / "prog"
    big_file(out)
    d = explain(out, cwd=tmp_path)
    assert d["probe"]["output"]["nlink"] == 1 and d["probe"]["output"]["cached_fraction"] >= 0.5
    assert d["decision"]["write_mode"] == "in-place", d["decision"]["reasons"]

    # a hard link, as Cargo makes
    os.link(out, tmp_path / "uplifted")
    d = explain(out, cwd=tmp_path)
    assert d["probe"]["output"]["nlink"] == 2
    assert d["decision"]["write_mode"] == "fresh"
    assert "output has nlink=2 (a hard link, e.g. Cargo's uplifted copy) -> fresh" in d["decision"]["reasons"]
    os.unlink(tmp_path / "uplifted")

    # another process keeps it open
    holder = subprocess.Popen([sys.executable, "-c", f"f = open({str(out)!r}, 'rb'); input()"],
                              stdin=subprocess.PIPE)
    try:
        # wait until it has the file open
        for _ in range(200):
            if any(os.path.realpath(f"/proc/{holder.pid}/fd/{fd}") == str(out)
                   for fd in os.listdir(f"/proc/{holder.pid}/fd")):
                break
            subprocess.run(["sleep", "0.01"])
        d = explain(out, cwd=tmp_path)
        assert d["probe"]["output"]["held_by_others"] is True
        assert d["decision"]["write_mode"] == "fresh"
        assert "another process holds, maps or runs the output -> fresh" in d["decision"]["reasons"]
    finally:
        holder.communicate(b"\n")
    assert explain(out, cwd=tmp_path)["decision"]["write_mode"] == "in-place"

    # lld never gains from it
    d = explain(out, cwd=tmp_path, env={"LINKWRAP_LINKER": "lld"})["decision"]
    assert (d["linker"], d["write_mode"]) == ("lld", "fresh")


def test_link_arguments_after_double_dash(tmp_path, lw_home):
    data = explain("--", "main.o", "-shared", "-o", "libx.so", cwd=tmp_path)
    assert (data["request"]["kind"], data["request"]["output"]) == ("shared", str(tmp_path / "libx.so"))
    # OUTPUT before -- replaces the command line's -o; --kind overrides the kind
    data = explain("--kind", "exec", "other", "--", "main.o", "-shared", "-o", "libx.so", cwd=tmp_path)
    assert (data["request"]["kind"], data["request"]["output"]) == ("exec", str(tmp_path / "other"))
    # rustc's injected -fuse-ld=lld is not a choice; a C project's own -fuse-ld=gold is
    gcc_ld = "/root/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/lib/rustlib/x86_64-unknown-linux-gnu/bin/gcc-ld"
    d = explain("--", f"-B{gcc_ld}", "-fuse-ld=lld", "main.o", "-o", "app", cwd=tmp_path)["decision"]
    assert d["linker"] == "mold"
    d = explain("--", "-fuse-ld=gold", "main.o", "-o", "app", cwd=tmp_path)["decision"]
    assert d["linker"] == "gold" and d["reasons"][0] == "the command line asks for -fuse-ld=gold: gold 2.40"


def test_forced_linker(tmp_path, lw_home):
    d = explain("out", cwd=tmp_path, env={"LINKWRAP_LINKER": "lld"})
    cpus = d["probe"]["cpus"]
    assert (d["decision"]["linker"], d["decision"]["version"]) == ("lld", "16.0.6")
    assert d["decision"]["flags"] == [f"--threads={cpus}"]
    assert d["decision"]["reasons"][0] == "LINKWRAP_LINKER=lld: lld 16.0.6"
    d = explain("out", cwd=tmp_path, env={"LINKWRAP_LINKER": "bfd"})["decision"]
    assert (d["linker"], d["flags"]) == ("bfd", [])


def test_profile_and_files_from_the_project(tmp_path, lw_home):
    (tmp_path / ".git").mkdir()
    (tmp_path / "linkwrap.toml").write_text('[profile.release]\nprefer = ["lld"]\n')
    data = explain("target/release/deps/app-0123abcd", cwd=tmp_path)
    assert data["config"] == {"profile": "release", "files": [str(tmp_path / "linkwrap.toml")]}
    assert data["decision"]["linker"] == "lld"


def test_a_broken_config_is_explained_as_the_link_would_handle_it(tmp_path, lw_home):
    (tmp_path / "linkwrap.toml").write_text('prefer = ["mold"]\nin_place = maybe\n')
    d = explain("out", cwd=tmp_path)["decision"]
    assert (d["linker"], d["flags"], d["write_mode"]) == (None, [], "fresh")
    assert d["reasons"] == [f"configuration error: {tmp_path / 'linkwrap.toml'}:2: Invalid value (column 12)"
                            " -> the link runs as asked"]


def test_tables_for_people(tmp_path, lw_home):
    done = linkwrap("explain", "out", cwd=tmp_path, env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    text = done.stdout
    for words in ("Facts", "Decision", "Reasons", "filesystem", "kernel", "CPUs usable",
                  "mold 1.10.1", "-Wl,--no-fork", "write mode", "fresh", "1. mold 1.10.1: first installed of"):
        assert words in text, text


def test_bad_usage_is_one_line(tmp_path, lw_home):
    done = linkwrap("explain", "out", "stray", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == "linkwrap: error: unexpected arguments: stray (link arguments go after --)\n"
