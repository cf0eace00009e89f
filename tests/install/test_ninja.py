"""linkwrap/install/ninja.py: prefix the link rules of a hand-written build.ninja, build it for real."""
import os
import shutil
import textwrap
import time

import pytest

from conftest import script
from install.buildtools import EXAMPLES, comment, execs, ran, run
from linkwrap.errors import InstallError
from linkwrap.install import ninja

LAUNCH = "/opt/linkwrap/bin/linkwrap-launch"


@pytest.fixture
def example(tmp_path):
    root = tmp_path / "c-ninja"
    shutil.copytree(os.path.join(EXAMPLES, "c-ninja"), root)
    return root


def install(path, launcher=LAUNCH, rules=()):
    change = ninja.plan_install(str(path), launcher, rules)
    change.apply()
    return change


def uninstall(path):
    change = ninja.plan_uninstall(str(path))
    change.apply()
    return change


def test_example_link_rules_are_prefixed_and_nothing_else_changes(example):
    path = example / "build.ninja"
    original = path.read_text()
    install(path)
    new = path.read_text().splitlines()
    old = original.splitlines()
    assert new[0].startswith("# linkwrap (ID: ") and "link rules: solink link;" in new[0]
    changed = [(a, b) for a, b in zip(old, new[1:]) if a != b]
    assert len(new) == len(old) + 1 and len(changed) == 2
    for before, after in changed:
        assert after == before.replace("command = $cc", f"command = {LAUNCH} $cc")
    # The compile rule runs `cc -c`: not a link, untouched.
    assert "  command = $cc $cflags -fPIC -MD -MF $out.d -c $in -o $out" in new


def test_round_trip_is_byte_identical(example):
    path = example / "build.ninja"
    original = path.read_bytes()
    install(path)
    assert path.read_bytes() != original
    uninstall(path)
    assert path.read_bytes() == original


def test_second_install_changes_nothing(example):
    path = example / "build.ninja"
    install(path)
    once = path.read_bytes()
    stamp = os.stat(path).st_mtime_ns
    again = install(path)
    assert not again.changes_anything and "already installed" in again.said[0]
    assert path.read_bytes() == once and os.stat(path).st_mtime_ns == stamp


def test_a_rule_added_later_is_prefixed_by_the_next_install(example):
    path = example / "build.ninja"
    install(path)
    path.write_text(path.read_text() + "\nrule link2\n  command = g++ -o $out $in\n")
    install(path)
    text = path.read_text()
    assert "link rules: solink link link2;" in text.splitlines()[0]
    assert f"command = {LAUNCH} g++ -o $out $in" in text
    uninstall(path)
    assert LAUNCH not in path.read_text() and "linkwrap (ID" not in path.read_text()


def test_variables_continuations_env_and_ccache_are_understood(tmp_path):
    path = tmp_path / "build.ninja"
    original = textwrap.dedent("""\
        cxx = /usr/bin/clang++-16
        ar = ar
        rule link_exe
          command = cd $builddir && LANG=C ccache $cxx $ldflags $
              -o $out $in $libs
        rule archive
          command = rm -f $out && $ar crs $out $in
        rule compile
          command = $cxx -c $in -o $out
        rule stamp
          command = touch $out
        """)
    path.write_text(original)
    install(path)
    text = path.read_text()
    assert f"command = cd $builddir && LANG=C ccache {LAUNCH} $cxx $ldflags $" in text
    assert text.count(LAUNCH) == 1  # not ar, not a compile, not touch
    uninstall(path)
    assert path.read_text() == original


def test_explicit_rules(tmp_path):
    path = tmp_path / "build.ninja"
    original = "rule ld_it\n  command = ./mylinker.sh $out $in\nrule other\n  command = cc -o $out $in\n"
    path.write_text(original)
    install(path, rules=["ld_it"])
    assert path.read_text().splitlines()[1:] == [
        "rule ld_it", f"  command = {LAUNCH} ./mylinker.sh $out $in", "rule other", "  command = cc -o $out $in"]
    with pytest.raises(InstallError, match="no rule named 'nope'"):
        install(path, rules=["nope"])
    uninstall(path)
    assert path.read_text() == original


def test_a_launcher_path_with_spaces_and_dollars_is_quoted(tmp_path):
    path = tmp_path / "build.ninja"
    original = "rule link\n  command = cc -o $out $in\n"
    path.write_text(original)
    install(path, launcher="/opt/my tools/$x/linkwrap-launch")
    assert "  command = '/opt/my tools/$$x/linkwrap-launch' cc -o $out $in" in path.read_text()
    uninstall(path)
    assert path.read_text() == original


def test_no_link_rule_is_refused_with_a_hint(tmp_path):
    path = tmp_path / "build.ninja"
    path.write_text("rule cc\n  command = cc -c $in -o $out\n")
    with pytest.raises(InstallError) as e:
        install(path)
    assert "--rule NAME" in str(e.value)


@pytest.fixture
def cmake_build(tmp_path):
    build = tmp_path / "cmake-build"
    run(["cmake", "-S", os.path.join(EXAMPLES, "c-cmake"), "-B", build, "-G", "Ninja"])
    return build


def test_a_cmake_generated_file_is_refused_with_the_cmake_hint(cmake_build):
    path = cmake_build / "build.ninja"
    before = path.read_bytes()
    with pytest.raises(InstallError) as e:
        install(path)
    first, hint = str(e.value).split("\n")
    assert "generated by CMake" in first
    assert hint.startswith("hint:") and "linkwrap install --cmake" in hint
    assert path.read_bytes() == before
    with pytest.raises(InstallError, match="generated by CMake"):
        install(cmake_build / "CMakeFiles" / "rules.ninja")


def test_a_meson_generated_file_is_refused(tmp_path):
    path = tmp_path / "build.ninja"
    path.write_text("# This is the build file for project \"demo\"\n# It is autogenerated by the Meson build system.\n"
                    "rule c_LINKER\n command = cc -o $out $in\n")
    with pytest.raises(InstallError, match="generated by meson"):
        install(path)


def test_example_builds_through_linkwrap_and_relinks_after_a_touch(example, tmp_path, lw_home):
    path = example / "build.ninja"
    original = path.read_bytes()
    install(path, launcher=script("linkwrap-launch"))
    env = {"LINKWRAP_LINKER": "mold"}
    done, calls = execs(["ninja"], cwd=example, env=env, tmp=tmp_path)
    launched = ran(calls, "linkwrap-launch")
    assert len(launched) == 3  # libgreet.so, hello, count
    assert run([example / "hello"]).stdout == "hello from libgreet\n"
    assert run([example / "count", "one two", "three"]).stdout == "3 words\n"
    for out in ("hello", "count", "libgreet.so"):
        assert "mold" in comment(example / out), out

    # Change one source: only that program relinks, again through linkwrap.
    time.sleep(0.01)
    src = example / "src" / "hello.c"
    src.write_text(src.read_text().replace('printf("%s\\n", greeting());', 'printf("%s!\\n", greeting());'))
    done, calls = execs(["ninja"], cwd=example, env=env, tmp=tmp_path)
    launched = ran(calls, "linkwrap-launch")
    assert len(launched) == 1 and '"hello"' in launched[0]
    assert run([example / "hello"]).stdout == "hello from libgreet!\n"

    uninstall(path)
    assert path.read_bytes() == original
