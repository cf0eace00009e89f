"""The fast entry point `linkwrap install` writes (linkwrap/install/launcher.py)."""
import os
import subprocess

from conftest import script
from linkwrap.install import launcher


def hello(tmp_path):
    (tmp_path / "h.c").write_text('#include <stdio.h>\nint main(void){puts("hi");return 0;}\n')
    subprocess.run(["cc", "-c", "h.c"], cwd=tmp_path, check=True)


def test_fast_entry_point_links_silently(tmp_path, lw_home):
    path = launcher.fast_script("linkwrap-cc")
    assert path.startswith(str(lw_home / "bin")) and path.endswith("/linkwrap-cc")
    assert open(launcher.script_path("linkwrap-cc")).readline() == "#!/bin/sh\n"
    hello(tmp_path)
    for entry in (path, launcher.script_path("linkwrap-cc")):  # the native client, the script
        done = subprocess.run([entry, "h.o", "-o", "h"], cwd=tmp_path, capture_output=True, text=True)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        assert subprocess.run([str(tmp_path / "h")], capture_output=True, text=True).stdout == "hi\n"


def test_writing_it_again_changes_nothing(lw_home):
    path = launcher.fast_script("linkwrap-launch")
    before = os.stat(path)
    assert launcher.fast_script("linkwrap-launch") == path
    assert os.stat(path).st_ino == before.st_ino and os.stat(path).st_mtime_ns == before.st_mtime_ns


def test_a_deleted_interpreter_still_links_as_asked(tmp_path, lw_home):
    launcher.fast_script("linkwrap-cc")
    path = launcher.script_path("linkwrap-cc")
    lines = open(path).read().splitlines(keepends=True)
    gone = tmp_path / "gone-linkwrap-cc"
    gone.write_text("".join("py=/deleted/venv/bin/python\n" if l.startswith("py=") else l for l in lines))
    gone.chmod(0o755)
    hello(tmp_path)
    done = subprocess.run([str(gone), "h.o", "-o", "h"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stderr == ("linkwrap: warning: /deleted/venv/bin/python is gone; linking without linkwrap "
                           "(run `linkwrap install` again)\n")
    assert subprocess.run([str(tmp_path / "h")], capture_output=True, text=True).stdout == "hi\n"


def test_each_interpreter_gets_its_own_entry_point(lw_home, monkeypatch):
    mine = launcher.fast_script("linkwrap-cc", write=False)
    monkeypatch.setattr(launcher.sys, "executable", "/some/other/venv/bin/python")
    assert launcher.fast_script("linkwrap-cc", write=False) != mine


def test_a_moved_linkwrap_still_links_as_asked(tmp_path, lw_home):
    launcher.fast_script("linkwrap-cc")
    path = launcher.script_path("linkwrap-cc")
    # As after `pip uninstall` or a moved environment: linkwrap cannot be imported.
    moved = open(path).read().replace("sys.path.insert(0, ", "sys.modules['linkwrap'] = None; sys.path.insert(0, ")
    stale = tmp_path / "linkwrap-cc"
    stale.write_text(moved)
    stale.chmod(0o755)
    hello(tmp_path)
    done = subprocess.run([str(stale), "h.o", "-o", "h"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stderr.startswith("linkwrap: warning: cannot import linkwrap") and done.stderr.count("\n") == 1
    assert subprocess.run([str(tmp_path / "h")], capture_output=True, text=True).stdout == "hi\n"


def test_console_script_on_request(lw_home):
    assert launcher.entry_point("linkwrap-cc", console_script=True) == script("linkwrap-cc")
