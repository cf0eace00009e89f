"""linkwrap/install/cmake.py: real cmake + ninja builds through linkwrap-launch, exact undo."""
import json
import os
import shutil
import time

import pytest

from conftest import script
from install.buildtools import EXAMPLES, comment, execs, ran, run
from linkwrap.errors import ConfigError, InstallError
from linkwrap.install import cmake

LAUNCH = "/opt/linkwrap/bin/linkwrap-launch"
PROGRAMS = {"area": "area of 3x4 rectangle: 12\narea of circle r=1: 3.14159\n",
            "perimeter": "perimeter of 3x4 rectangle: 14\n",
            "version": "libshapes 1.0\n"}


@pytest.fixture
def source(tmp_path):
    root = tmp_path / "c-cmake"
    shutil.copytree(os.path.join(EXAMPLES, "c-cmake"), root, ignore=shutil.ignore_patterns("build"))
    return root


@pytest.fixture
def build(source, tmp_path):
    out = tmp_path / "build"
    run(["cmake", "-S", source, "-B", out, "-G", "Ninja"])
    return out


def check_programs(folder):
    for name, expected in PROGRAMS.items():
        assert run([folder / name]).stdout == expected, name


# ---- build directory ----

def test_build_dir_links_through_linkwrap_and_relinks_after_a_touch(build, source, tmp_path, lw_home):
    before = cmake.read_cache(build)
    change = cmake.plan_cache_install(str(build), script("linkwrap-launch"))
    change.apply()
    cache = cmake.read_cache(build)
    assert cache["CMAKE_C_LINKER_LAUNCHER"][1] == cache["CMAKE_CXX_LINKER_LAUNCHER"][1] == script("linkwrap-launch")
    assert cmake.check_generated(str(build), script("linkwrap-launch")) == []

    env = {"LINKWRAP_LINKER": "mold"}
    _, calls = execs(["ninja", "-C", build], cwd=build, env=env, tmp=tmp_path)
    assert len(ran(calls, "linkwrap-launch")) == 4  # libshapes.so, area, perimeter, version
    check_programs(build)
    for out in ("area", "perimeter", "version", "libshapes.so"):
        assert "mold" in comment(build / out), out

    time.sleep(0.01)
    src = source / "src" / "perimeter.cpp"
    src.write_text(src.read_text().replace("perimeter of", "Perimeter of"))
    _, calls = execs(["ninja", "-C", build], cwd=build, env=env, tmp=tmp_path)
    launched = ran(calls, "linkwrap-launch")
    assert len(launched) == 1 and "-o perimeter" in launched[0].replace('", "', " ")
    assert run([build / "perimeter"]).stdout == "Perimeter of 3x4 rectangle: 14\n"

    cmake.plan_cache_uninstall(str(build)).apply()
    assert cmake.read_cache(build) == before


def test_build_dir_second_install_changes_nothing(build):
    cmake.plan_cache_install(str(build), LAUNCH).apply()
    stamp = os.stat(build / "CMakeCache.txt").st_mtime_ns
    again = cmake.plan_cache_install(str(build), LAUNCH)
    assert not again.changes_anything and "already installed" in again.said[0]
    again.apply()
    assert os.stat(build / "CMakeCache.txt").st_mtime_ns == stamp


def test_build_dir_existing_launcher_is_refused_then_forced_and_restored(source, tmp_path):
    out = tmp_path / "build"
    run(["cmake", "-S", source, "-B", out, "-G", "Ninja", "-DCMAKE_CXX_LINKER_LAUNCHER:FILEPATH=/usr/bin/env"])
    before = cmake.read_cache(out)
    with pytest.raises(InstallError) as e:
        cmake.plan_cache_install(str(out), LAUNCH)
    assert "'/usr/bin/env'" in str(e.value) and "--force" in str(e.value).split("\n")[1]
    cmake.plan_cache_install(str(out), LAUNCH, force=True).apply()
    assert cmake.read_cache(out)["CMAKE_CXX_LINKER_LAUNCHER"] == ("FILEPATH", LAUNCH)
    cmake.plan_cache_uninstall(str(out)).apply()
    after = cmake.read_cache(out)
    assert after["CMAKE_CXX_LINKER_LAUNCHER"] == ("FILEPATH", "/usr/bin/env")
    assert after == before


def test_status_of_a_build_dir(build):
    assert cmake.cache_installed(str(build)) is None
    cmake.plan_cache_install(str(build), LAUNCH).apply()
    found = cmake.cache_installed(str(build))
    assert found == {"entries": {"CMAKE_C_LINKER_LAUNCHER": LAUNCH, "CMAKE_CXX_LINKER_LAUNCHER": LAUNCH},
                     "marked": True}


def test_a_directory_that_is_neither_is_refused(tmp_path):
    with pytest.raises(InstallError, match="neither CMakeCache.txt nor CMakeLists.txt"):
        cmake.classify(str(tmp_path))


# ---- source directory: CMakeUserPresets.json ----

PRESET_FILES = {
    "tabs and two presets": ('{\n\t"version": 3,\n\t"configurePresets": [\n'
                             '\t\t{"name": "dev", "binaryDir": "b", "generator": "Ninja"},\n'
                             '\t\t{\n\t\t\t"name": "rel"\n\t\t}\n\t]\n}\n'),
    "empty list and build presets": ('{\n  "version": 3,\n  "configurePresets": [],\n'
                                     '  "buildPresets": [ {"name": "b", "configurePreset": "dev"} ]\n}'),
    "no configurePresets": '{\n    "version": 6,\n    "testPresets": []\n}\n',
}


@pytest.mark.parametrize("case", PRESET_FILES)
def test_presets_round_trip_is_byte_identical(source, case):
    path = source / cmake.PRESETS
    path.write_text(PRESET_FILES[case])
    cmake.plan_presets_install(str(source), LAUNCH).apply()
    data = json.loads(path.read_text())
    old = json.loads(PRESET_FILES[case])
    ours = [p for p in data["configurePresets"] if p["name"] == "linkwrap"]
    assert len(ours) == 1 and ours[0]["cacheVariables"]["CMAKE_CXX_LINKER_LAUNCHER"] == LAUNCH
    # Everything that was there is still there.
    assert [p for p in data["configurePresets"] if p["name"] != "linkwrap"] == old.get("configurePresets", [])
    assert {k: v for k, v in data.items() if k != "configurePresets"} == \
        {k: v for k, v in old.items() if k != "configurePresets"}
    again = cmake.plan_presets_install(str(source), LAUNCH)
    assert not again.changes_anything
    cmake.plan_presets_uninstall(str(source)).apply()
    assert path.read_text() == PRESET_FILES[case]


def test_presets_file_created_by_install_is_removed(source):
    path = source / cmake.PRESETS
    cmake.plan_presets_install(str(source), LAUNCH).apply()
    assert json.loads(path.read_text())["version"] == 3
    cmake.plan_presets_uninstall(str(source)).apply()
    assert not path.exists()


def test_presets_name_clash_and_malformed_file(source):
    path = source / cmake.PRESETS
    path.write_text('{"version": 3, "configurePresets": [{"name": "linkwrap"}]}')
    with pytest.raises(InstallError, match="already has a configure preset named 'linkwrap'"):
        cmake.plan_presets_install(str(source), LAUNCH)
    bad = '{\n  "version": 3,\n  "configurePresets": [\n}\n'
    path.write_text(bad)
    with pytest.raises(ConfigError) as e:
        cmake.plan_presets_install(str(source), LAUNCH)
    assert "\n" not in str(e.value) and str(e.value).startswith(f"{path}:4: malformed JSON")
    assert path.read_text() == bad


def test_preset_inherits(source):
    (source / "CMakePresets.json").write_text(json.dumps(
        {"version": 3, "configurePresets": [{"name": "dev", "generator": "Ninja", "binaryDir": "${sourceDir}/out/dev"}]}))
    cmake.plan_presets_install(str(source), LAUNCH, inherits="dev").apply()
    ours = json.loads((source / cmake.PRESETS).read_text())["configurePresets"][0]
    assert ours["inherits"] == "dev" and "binaryDir" not in ours


def test_preset_configures_builds_and_runs_through_linkwrap(source, tmp_path, lw_home):
    cmake.plan_presets_install(str(source), script("linkwrap-launch")).apply()
    run(["cmake", "--preset", "linkwrap", "-G", "Ninja"], cwd=source)
    out = source / "build" / "linkwrap"
    _, calls = execs(["ninja", "-C", out], cwd=source, env={"LINKWRAP_LINKER": "mold"}, tmp=tmp_path)
    assert len(ran(calls, "linkwrap-launch")) == 4
    check_programs(out)
    assert "mold" in comment(out / "area")


def test_preset_uninstall_also_cleans_the_build_dir_configured_from_it(source, tmp_path, lw_home):
    from linkrecords import lw
    lw("install", "--cmake", source, cwd=source)
    run(["cmake", "--preset", "linkwrap", "-G", "Ninja"], cwd=source)
    out = source / "build" / "linkwrap"
    assert cmake.configured_from(str(out), str(source))
    done = lw("uninstall", "--cmake", ".", cwd=source)
    assert f"removed linkwrap's launcher from the CMake build directory {out}" in done.stdout
    # Said as what happened: the preset linkwrap wrote set it, and the build directory stays the user's.
    assert f"set by linkwrap's 'linkwrap' preset, which configured it); the directory and its build stay yours" in done.stdout
    assert not [n for n in cmake.read_cache(out) if n.endswith("_LINKER_LAUNCHER")]
    _, calls = execs(["ninja", "-C", out], cwd=source, tmp=tmp_path)
    assert not ran(calls, "linkwrap-launch")
    check_programs(out)


def test_preset_build_dir_follows_inherits_and_gives_up_on_environment_macros(source):
    (source / "CMakePresets.json").write_text(json.dumps({"version": 3, "configurePresets": [
        {"name": "dev", "binaryDir": "${sourceParentDir}/out/${presetName}"},
        {"name": "env", "binaryDir": "$env{HOME}/b"}]}))
    cmake.plan_presets_install(str(source), LAUNCH, inherits="dev").apply()
    assert cmake.preset_build_dir(str(source)) == str(source.parent / "out" / "linkwrap")
    cmake.plan_presets_uninstall(str(source)).apply()
    cmake.plan_presets_install(str(source), LAUNCH, inherits="env").apply()
    assert cmake.preset_build_dir(str(source)) is None
