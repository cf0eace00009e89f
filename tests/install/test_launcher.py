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
    assert path == str(lw_home / "bin" / "linkwrap-cc")
    first = open(path).readline()
    assert first.startswith("#!/") and first.rstrip().endswith(" -IS")
    hello(tmp_path)
    done = subprocess.run([path, "h.o", "-o", "h"], cwd=tmp_path, capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert subprocess.run([str(tmp_path / "h")], capture_output=True, text=True).stdout == "hi\n"


def test_writing_it_again_changes_nothing(lw_home):
    path = launcher.fast_script("linkwrap-launch")
    before = os.stat(path)
    assert launcher.fast_script("linkwrap-launch") == path
    assert os.stat(path).st_ino == before.st_ino and os.stat(path).st_mtime_ns == before.st_mtime_ns


def test_a_moved_linkwrap_still_links_as_asked(tmp_path, lw_home):
    path = launcher.fast_script("linkwrap-cc")
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
