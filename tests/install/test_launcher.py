"""The fast entry point `linkwrap install` writes (linkwrap/install/launcher.py)."""
import os
import subprocess
import sys

from conftest import SCRIPTS, script
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
    """pip's linkwrap-cc command (the wheel's native client, or its stand-in), as installed."""
    assert launcher.entry_point("linkwrap-cc", console_script=True) == os.path.join(SCRIPTS, "linkwrap-cc")


def _dynamic(path) -> bool:
    """Whether the ELF file at path asks for a dynamic loader (has a PT_INTERP program header)."""
    import struct
    data = open(path, "rb").read()
    assert data[:4] == b"\x7fELF" and data[4] == 2, "not a 64-bit ELF file"
    phoff, = struct.unpack_from("<Q", data, 32)
    size, count = struct.unpack_from("<HH", data, 54)
    return any(struct.unpack_from("<I", data, phoff + i * size)[0] == 3 for i in range(count))


def test_the_native_client_is_static_where_the_c_library_allows(tmp_path, lw_home):
    (tmp_path / "t.c").write_text("int main(void){return 0;}\n")
    can = subprocess.run(["cc", "-static", "t.c", "-o", "t"], cwd=tmp_path, capture_output=True).returncode == 0
    path = launcher.fast_script("linkwrap-cc")
    assert _dynamic(path) == (not can)
    hello(tmp_path)
    done = subprocess.run([path, "h.o", "-o", "h"], cwd=tmp_path, capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


STATIC_FAILS = r"""#!/bin/sh
# A STAND-IN for a cc without a static C library (not a real toolchain): refuses -static as ld
# does when libc.a is missing, and passes everything else to the real cc.
for a in "$@"; do
  if [ "$a" = "-static" ]; then echo "/usr/bin/ld: cannot find -lc: No such file or directory" >&2; exit 1; fi
done
exec {cc} "$@"
"""


def test_a_cc_that_cannot_link_statically_gives_a_dynamic_client(tmp_path, lw_home, monkeypatch):
    import shutil
    bin_dir = tmp_path / "cc-bin"
    bin_dir.mkdir()
    (bin_dir / "cc").write_text(STATIC_FAILS.format(cc=shutil.which("cc")))
    (bin_dir / "cc").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    path = launcher.fast_script("linkwrap-cc")
    assert open(path, "rb").read(4) == b"\x7fELF" and _dynamic(path)
    hello(tmp_path)
    done = subprocess.run([path, "h.o", "-o", "h"], cwd=tmp_path, capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert subprocess.run([str(tmp_path / "h")], capture_output=True, text=True).stdout == "hi\n"


def test_the_installed_native_client_is_the_entry_point_unless_the_state_dir_is_asked(lw_home, monkeypatch):
    """Issue 34: the wheel's linkwrap-cc (an ELF client with its -python entry point beside it) is the
    stable path install writes; LINKWRAP_INSTALL_ENTRY=state asks for the state dir's own."""
    installed = os.path.join(SCRIPTS, "linkwrap-cc")
    if launcher.wheel_script(installed):
        assert launcher.entry_point("linkwrap-cc", write=False) == installed
        assert not launcher.in_state_dir(installed)
    else:  # the stand-in wheel (no compiler when it was built): the state dir's client is the fast one
        assert launcher.entry_point("linkwrap-cc", write=False) == launcher.fast_script("linkwrap-cc", write=False)
    monkeypatch.setenv("LINKWRAP_INSTALL_ENTRY", "state")
    state = launcher.entry_point("linkwrap-cc", write=False)
    assert state == launcher.fast_script("linkwrap-cc", write=False) and launcher.in_state_dir(state)


def test_a_wheel_client_whose_python_is_gone_is_a_problem(tmp_path, lw_home):
    """The wheel's client beside a console script whose interpreter went with its environment: said
    as such, in both forms pip writes (a #! line; #!/bin/sh and an exec line for a long path)."""
    import shutil
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(mode=0o755)
    os.chmod(tmp_path, 0o755)
    client = bin_dir / "linkwrap-cc"
    launcher.fast_script("linkwrap-cc")  # any ELF file stands for the client here: the one install compiles
    shutil.copy(launcher.fast_script("linkwrap-cc", write=False), client)
    script_ = bin_dir / "linkwrap-cc-python"
    live = open(os.path.join(SCRIPTS, "linkwrap-cc-python")).read().splitlines()[0]
    gone = {"#!/gone/venv/bin/python3": "/gone/venv/bin/python3",
            "#!/bin/sh\n'''exec' /gone/long/venv/bin/python3 \"$0\" \"$@\"\n' '''": "/gone/long/venv/bin/python3"}
    for head in (live, *gone):
        script_.write_text(head + "\nimport sys\n")
        os.chmod(script_, 0o755)
        said = launcher.problem(str(client))
        if head == live:
            assert said is None or "is gone" not in said, said
        else:
            assert said == f"its Python {gone[head]} is gone", said


def test_a_checkout_run_beside_the_installed_linkwrap_does_not_write_that_ones_client(tmp_path, lw_home):
    """A linkwrap run from another checkout (its directory first on sys.path, another linkwrap
    installed in the interpreter): the environment's client would run the installed code, so the
    entry point is the checkout's own under the state dir."""
    import shutil
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    checkout = tmp_path / "checkout"
    shutil.copytree(os.path.join(repo, "linkwrap"), checkout / "linkwrap",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(os.path.join(repo, "templates"), checkout / "templates")
    ask = ("import linkwrap; from linkwrap.install import launcher; "
           "print(linkwrap.__file__); print(launcher.entry_point('linkwrap-cc', write=False))")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LINKWRAP_INSTALL_ENTRY")}
    here = subprocess.run([sys.executable, "-c", ask], capture_output=True, text=True, cwd=repo, env=env)
    there = subprocess.run([sys.executable, "-c", ask], capture_output=True, text=True, cwd=checkout, env=env)
    assert here.returncode == there.returncode == 0, here.stderr + there.stderr
    assert there.stdout.splitlines()[0] == str(checkout / "linkwrap" / "__init__.py")
    installed = launcher.installed_client("linkwrap-cc")
    assert installed, "the editable install's native client (setup.py) is beside this interpreter"
    assert here.stdout.splitlines()[1] == installed
    assert there.stdout.splitlines()[1] != installed and there.stdout.splitlines()[1].startswith(str(lw_home))
