"""linkwrap/request/target.py: each target links through its own driver and its own linkers.

Real cross builds: Debian's gcc-aarch64-linux-gnu and qemu-user (scripts/install-test-deps) for C and
C++ through the CMake launcher with a toolchain file, and a Cargo project built for two targets at
once (no aarch64 Rust standard library can be installed here: the program uses no core library).
"""
import os
import shutil
import sqlite3
import subprocess

import pytest

from cargokit import env_name, host_triple
from conftest import tool
from install.buildtools import EXAMPLES, SIGNATURE, comment, linkwrap, run
from linkwrap.install import cargo
from linkwrap.request import args, target

HERE = os.path.dirname(os.path.abspath(__file__))
CROSS = "aarch64-linux-gnu"              # Debian's cross toolchain prefix
CROSS_TRIPLE = "aarch64-unknown-linux-gnu"
PROGRAMS = {"area": "area of 3x4 rectangle: 12\narea of circle r=1: 3.14159\n",
            "perimeter": "perimeter of 3x4 rectangle: 14\n", "version": "libshapes 1.0\n"}


def cross_sysroot() -> str:
    """Where the cross C library lives (qemu's -L), as the cross compiler finds it."""
    libc = run([tool(f"{CROSS}-gcc"), "-print-file-name=libc.so.6"]).stdout.strip()
    return os.path.dirname(os.path.dirname(os.path.realpath(libc)))


def qemu(program, **env):
    return subprocess.run([tool("qemu-aarch64"), "-L", cross_sysroot(), str(program)], capture_output=True,
                          text=True, env={**os.environ, **env})


def links_in(home):
    """Every link record in LINKWRAP_HOME=home, as dicts (the store, after `summary` ingested the spool)."""
    assert linkwrap("summary", cwd=home, env={"LINKWRAP_HOME": str(home)}).returncode == 0
    conn = sqlite3.connect(os.path.join(home, "links.db"))
    conn.row_factory = sqlite3.Row
    return [dict(r) for r in conn.execute("SELECT * FROM links ORDER BY id")]


# ---- which target ----

def test_the_target_is_the_rustlib_directory_a_link_names():
    sysroot = "/home/u/.rustup/toolchains/stable/lib/rustlib"
    argv = [f"-B{sysroot}/x86_64-unknown-linux-gnu/bin/gcc-ld", "-fuse-ld=lld", "main.o",
            "-L", f"{sysroot}/{CROSS_TRIPLE}/lib", "-o", "main"]
    assert target.of_args(argv) == CROSS_TRIPLE
    assert target.of_args(["x.o", f"{sysroot}/riscv64gc-unknown-linux-gnu/lib/libcore-1a.rlib"]) \
        == "riscv64gc-unknown-linux-gnu"
    assert target.of_args([f"-B{sysroot}/x86_64-unknown-linux-gnu/bin/gcc-ld", "main.o", "-o", "m"]) is None
    assert target.of_driver(f"/usr/bin/{CROSS}-g++-12") == CROSS
    assert target.of_driver("gcc-12") is None and target.of_driver("cc") is None
    here = os.uname().machine
    other = "riscv64" if here != "riscv64" else "aarch64"
    assert not target.is_foreign(f"{here}-unknown-linux-gnu") and target.is_foreign(f"{other}-unknown-linux-gnu")
    assert target.env_key("thumbv7em-none-eabihf") == cargo.env_key("thumbv7em-none-eabihf") == "THUMBV7EM_NONE_EABIHF"


def test_a_cargo_links_driver_per_target(tmp_path):
    here = os.uname().machine
    other = "riscv64" if here != "riscv64" else "aarch64"
    foreign = f"{other}-unknown-linux-gnu"
    host = f"{here}-unknown-linux-gnu"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    cross = bindir / f"{other}-linux-gnu-gcc"
    cross.write_text("#!/bin/sh\nexit 0\n")
    cross.chmod(0o755)
    env = {"PATH": str(bindir), "CARGO_HOME": str(tmp_path / "no-cargo-home")}
    # guessed from the triple for another machine's target; the host keeps LINKWRAP_CC, else cc
    assert target.driver_for(foreign, str(tmp_path), env)[0] == cross.name
    assert target.driver_for(host, str(tmp_path), env) == ("cc", "default")
    assert target.driver_for(host, str(tmp_path), {**env, "LINKWRAP_CC": "clang"})[0] == "clang"
    assert target.driver_for(None, str(tmp_path), {**env, "LINKWRAP_CC": "clang"})[0] == "clang"
    # LINKWRAP_CC_<TRIPLE> wins
    own = {**env, f"LINKWRAP_CC_{target.env_key(foreign)}": "my-cross-cc"}
    assert target.driver_for(foreign, str(tmp_path), own)[0] == "my-cross-cc"
    # the driver install --force took over, kept in its marker, wins over the guess and LINKWRAP_CC
    config = tmp_path / ".cargo" / "config.toml"
    config.parent.mkdir()
    config.write_text(f'[target.{foreign}]\nlinker = "/opt/x/{other}-gcc"  # "mine"\n'
                      f'[target.{host}]\nlinker = "ld.lld"\n')
    cargo.plan_install(str(config), [foreign, host], "linkwrap-cc", force=True).apply()
    sub = tmp_path / "crate" / "src"
    sub.mkdir(parents=True)
    assert target.driver_for(foreign, str(sub), {**env, "LINKWRAP_CC": "clang"})[0] == f"/opt/x/{other}-gcc"
    assert target.driver_for(host, str(sub), env)[0] == "cc"  # ld.lld is a linker, not a driver
    # the request carries both
    request = args.parse(["m.o", "-L", f"/sysroot/lib/rustlib/{foreign}/lib", "-o", "m"], None, env, cwd=str(sub))
    assert (request.target, request.driver) == (foreign, f"/opt/x/{other}-gcc")
    request = args.parse(["m.o", "-o", "m"], f"{other}-linux-gnu-g++", env, cwd=str(sub))
    assert (request.target, request.driver) == (f"{other}-linux-gnu", f"{other}-linux-gnu-g++")


def test_install_checks_the_target_against_rustcs_list(tmp_path, lw_home):
    (tmp_path / "Cargo.toml").write_text('[package]\nname = "p"\nversion = "0.1.0"\n')
    done = linkwrap("install", "--target", "bogus-triple", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == "linkwrap: error: --target bogus-triple: not a target rustc knows"
    done = linkwrap("install", "--target", CROSS_TRIPLE[:-1], cwd=tmp_path)
    assert f"did you mean {CROSS_TRIPLE}" in done.stderr and done.returncode == 1
    assert not (tmp_path / ".cargo").exists()


# ---- real cross builds ----

@pytest.fixture
def cross_cmake(tmp_path, lw_home):
    source = tmp_path / "c-cmake"
    shutil.copytree(os.path.join(EXAMPLES, "c-cmake"), source, ignore=shutil.ignore_patterns("build"))
    toolchain = tmp_path / "aarch64.cmake"
    toolchain.write_text(f"set(CMAKE_SYSTEM_NAME Linux)\nset(CMAKE_SYSTEM_PROCESSOR aarch64)\n"
                         f"set(CMAKE_C_COMPILER {tool(CROSS + '-gcc')})\n"
                         f"set(CMAKE_CXX_COMPILER {tool(CROSS + '-g++')})\n")
    build = tmp_path / "build"
    run(["cmake", "-S", source, "-B", build, "-G", "Ninja", f"-DCMAKE_TOOLCHAIN_FILE={toolchain}"])
    assert linkwrap("install", "--cmake", build, cwd=tmp_path).returncode == 0
    return build


@pytest.mark.parametrize("linker", ["mold", "lld", "bfd", None])
def test_c_and_cxx_cross_build_through_the_cmake_launcher_runs_under_qemu(cross_cmake, lw_home, linker):
    build = cross_cmake
    env = {"LINKWRAP_LINKER": linker} if linker else {}
    run(["ninja", "-C", build], env=env)
    for name, expected in PROGRAMS.items():
        done = qemu(build / name, LD_LIBRARY_PATH=str(build))
        assert (done.returncode, done.stdout) == (0, expected), done.stderr
        assert "AArch64" in run(["readelf", "-h", build / name]).stdout
    links = links_in(lw_home)
    assert {os.path.basename(link["output_path"]) for link in links} == {"libshapes.so", *PROGRAMS}
    for link in links:
        assert link["exit_status"] == 0 and not link["fell_back"] and link["linker"] != "as asked", link
        assert os.path.basename(link["driver"]).startswith(f"{CROSS}-"), link
        if linker:
            assert link["linker"] == linker
        if link["linker"] in ("bfd", "gold"):  # the host's GNU ld knows x86-64 only
            assert os.path.basename(link["linker_path"]).startswith(f"{CROSS}-ld"), link
        if link["linker"] in SIGNATURE:
            assert SIGNATURE[link["linker"]] in comment(link["output_path"])
        assert link["linker"] != "python"  # linkwrap's own linker is x86-64 only


def test_cargo_with_two_targets_links_each_through_its_own_driver(tmp_path, lw_home, monkeypatch):
    """The cross target's links reach the cross driver (guessed from the triple); the host's links —
    the host target and the build script, which is linked for the host whatever --target says —
    reach the host's. Each program then runs: the aarch64 one under qemu."""
    host = host_triple()
    crate = tmp_path / "nocore"
    shutil.copytree(os.path.join(HERE, "crates", "nocore"), crate)
    env = {"RUSTC_BOOTSTRAP": "1", "CARGO_HOME": str(tmp_path / "cargo-home"),
           "RUSTUP_HOME": os.environ.get("RUSTUP_HOME", os.path.expanduser("~/.rustup"))}
    for var in (env_name(host), env_name(CROSS_TRIPLE), "LINKWRAP_CC", f"LINKWRAP_CC_{target.env_key(host)}",
                f"LINKWRAP_CC_{target.env_key(CROSS_TRIPLE)}", "RUSTFLAGS", "CARGO_BUILD_TARGET"):
        monkeypatch.delenv(var, raising=False)
    done = linkwrap("install", "--target", CROSS_TRIPLE, "--target", host, cwd=crate, env=env)
    assert done.returncode == 0, done.stderr
    run(["cargo", "build", "--quiet", "--target", CROSS_TRIPLE, "--target", host], cwd=crate, env=env)
    assert run([crate / "target" / host / "debug" / "nocore"], check=False).returncode == 42
    assert qemu(crate / "target" / CROSS_TRIPLE / "debug" / "nocore").returncode == 42

    by_output = {}
    for link in links_in(lw_home):
        parts = os.path.relpath(link["output_path"], crate / "target").split(os.sep)
        kind = "build script" if parts[1] == "build" else parts[0]
        by_output[kind] = link
    assert set(by_output) == {"build script", host, CROSS_TRIPLE}
    assert os.path.basename(by_output[CROSS_TRIPLE]["driver"]) == f"{CROSS}-gcc"
    assert by_output[host]["driver"] == by_output["build script"]["driver"] == "cc"
    for link in by_output.values():
        assert link["exit_status"] == 0 and not link["fell_back"] and link["linker"] != "as asked", link
