"""linkwrap-cc and linkwrap-launch, the entry points that stand in for a cc driver."""
import os
import subprocess
import sys

import pytest

from conftest import script


def test_launch_help_and_missing_driver():
    done = subprocess.run([script("linkwrap-launch"), "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("usage: linkwrap-launch [--] <compiler driver>")
    done = subprocess.run([script("linkwrap-launch")], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.startswith("usage: linkwrap-launch") and done.stdout == ""
    done = subprocess.run([script("linkwrap"), "launch", "--", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("usage: linkwrap launch -- DRIVER ARGS...")


def test_launch_links_with_the_given_driver(tmp_path, lw_home, hello_obj):
    done = subprocess.run([script("linkwrap-launch"), "--", "c++", str(hello_obj), "-o", "hello"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert subprocess.run([str(tmp_path / "hello")], capture_output=True, text=True).stdout == "hello\n"


def test_a_missing_driver_is_one_line_and_127(tmp_path, lw_home, hello_obj):
    done = subprocess.run([script("linkwrap-launch"), "no-such-cc", str(hello_obj), "-o", "x"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 127
    assert done.stderr == "linkwrap: error: cannot run no-such-cc: No such file or directory\n"


def test_launch_version():
    done = subprocess.run([script("linkwrap-launch"), "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("linkwrap-launch (linkwrap ")


@pytest.mark.parametrize("broken", ["linkwrap/wrap/probe.py", "linkwrap/wrap/pipeline.py"])
def test_a_partial_install_links_as_asked(tmp_path, lw_home, hello_obj, broken):
    # A pip uninstall or upgrade racing the build: a module of the link path is gone.
    import shutil
    import linkwrap
    pkg = tmp_path / "site"
    shutil.copytree(os.path.dirname(linkwrap.__file__), pkg / "linkwrap")
    (pkg / broken).unlink()
    code = (f"import sys; sys.path.insert(0, {str(pkg)!r}); sys.argv = ['linkwrap-cc', {str(hello_obj)!r}, "
            "'-o', 'prog']; from linkwrap.cc import main; main()")
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True).stdout == "hello\n"
    assert "ModuleNotFoundError" in (lw_home / "linkwrap.log").read_text()
