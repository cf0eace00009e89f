"""The bundled C/C++ examples (examples/c-cmake, examples/c-ninja) built for real with the real wild
through linkwrap-launch: every output linked by wild, the programs run, and ninja shows no linker
chatter (it prints a job's output even when the job succeeds)."""
import os
import shutil

from conftest import script
from install.buildtools import EXAMPLES, comment, run
from linkwrap.install import cmake, ninja


def by_wild(path):
    return "Linker: Wild" in comment(path)


def quiet_build(folder, env):
    done = run(["ninja", "-C", folder], env=env)
    # ninja's own progress line aside, nothing: no wild warning, no linkwrap message.
    chatter = [ln for ln in (done.stdout + done.stderr).splitlines() if not ln.startswith(("[", "ninja: "))]
    assert chatter == [], chatter


def test_cmake_example_with_wild(tmp_path, lw_home, wild):
    source, build = tmp_path / "c-cmake", tmp_path / "build"
    shutil.copytree(os.path.join(EXAMPLES, "c-cmake"), source, ignore=shutil.ignore_patterns("build"))
    run(["cmake", "-S", source, "-B", build, "-G", "Ninja"])
    cmake.plan_cache_install(str(build), script("linkwrap-launch")).apply()
    quiet_build(build, wild.env(LINKWRAP_LINKER="wild"))
    assert run([build / "area"]).stdout == "area of 3x4 rectangle: 12\narea of circle r=1: 3.14159\n"
    assert run([build / "perimeter"]).stdout == "perimeter of 3x4 rectangle: 14\n"
    assert run([build / "version"]).stdout == "libshapes 1.0\n"
    for out in ("area", "perimeter", "version", "libshapes.so"):
        assert by_wild(build / out), out


def test_ninja_example_with_wild(tmp_path, lw_home, wild):
    example = tmp_path / "c-ninja"
    shutil.copytree(os.path.join(EXAMPLES, "c-ninja"), example)
    ninja.plan_install(str(example / "build.ninja"), script("linkwrap-launch"), ()).apply()
    quiet_build(example, wild.env(LINKWRAP_LINKER="wild"))
    assert run([example / "hello"]).stdout == "hello from libgreet\n"
    assert run([example / "count", "one two", "three"]).stdout == "3 words\n"
    for out in ("hello", "count", "libgreet.so"):
        assert by_wild(example / out), out


def test_cmake_example_with_linkwraps_own_linker(tmp_path, lw_home):
    """LINKWRAP_LINKER=python with no fall-back: linkwrap.ld links the C++ shared library and the
    programs that use it (C and C++), and they run."""
    source, build = tmp_path / "c-cmake", tmp_path / "build"
    shutil.copytree(os.path.join(EXAMPLES, "c-cmake"), source, ignore=shutil.ignore_patterns("build"))
    run(["cmake", "-S", source, "-B", build, "-G", "Ninja"])
    cmake.plan_cache_install(str(build), script("linkwrap-launch")).apply()
    quiet_build(build, {**os.environ, "LINKWRAP_LINKER": "python", "LINKWRAP_LD_NO_FALLBACK": "1"})
    assert run([build / "area"]).stdout == "area of 3x4 rectangle: 12\narea of circle r=1: 3.14159\n"
    assert run([build / "perimeter"]).stdout == "perimeter of 3x4 rectangle: 14\n"
    assert run([build / "version"]).stdout == "libshapes 1.0\n"
    for out in ("area", "perimeter", "version", "libshapes.so"):
        assert "Linker: linkwrap.ld" in comment(build / out), out
    assert run(["eu-elflint", "--gnu-ld", build / "libshapes.so"]).returncode == 0
