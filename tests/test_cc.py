"""linkwrap-cc and linkwrap-launch, the entry points that stand in for a cc driver."""
import os
import subprocess
import sys
import textwrap

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


@pytest.mark.parametrize("broken", ["linkwrap/facts/probe.py", "linkwrap/pipeline.py"])
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


# --- ^C while an entry point starts -------------------------------------------------

def written_launcher(name):
    """The entry point `linkwrap install` writes (the native client: the wheel's where it was built,
    else the state dir's) and the state dir's script (sh, then python -IS), which a build runs where
    no client compiled."""
    from linkwrap.install import launcher
    script = os.path.join(os.path.dirname(launcher.fast_script(name)), "py", name)
    return launcher.entry_point(name), script


def interrupted_starts(argv, cwd, env):
    """Start argv again and again, each time sending SIGINT to its process group (as a terminal's ^C does)
    a little later, until it has ended before the signal three times running. -> [(returncode, stderr)].

    A ^C while Python itself starts is ignored (the launcher's doing: see cc.SIGINT_ENV), and the link
    then ends as if none came: a clean exit, which is why only an end before the signal stops the loop."""
    import signal
    import time
    outcomes, ended_first, delay = [], 0, 0.0
    while ended_first < 3 and len(outcomes) < 600:
        p = subprocess.Popen(argv, cwd=cwd, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        time.sleep(delay)
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGINT)
                ended_first = 0
            except ProcessLookupError:
                ended_first += 1
        else:
            ended_first += 1
        err = p.communicate()[1].decode("utf-8", "replace")
        outcomes.append((p.returncode, err))
        delay += 0.0005
    return outcomes


def test_a_ctrl_c_that_falls_in_a_finaliser_is_not_lost(tmp_path, lw_home, hello_obj):
    """A ^C handled while Python runs a weakref callback or __del__ (importlib's _get_module_lock
    callback, while the link path imports) cannot be raised there: Python printed "Exception
    ignored in ..." and the link ran on. It must still end the link, quietly, of SIGINT."""
    import signal
    code = textwrap.dedent(f"""
        import os, sys, types
        import linkwrap.pipeline as pipeline

        class Late:
            def __del__(self):
                os.kill(os.getpid(), 2)  # the ^C, handled before this finaliser returns
                sum(range(1000))

        class Importing(types.ModuleType):
            @property
            def main(self):  # what the link path's import runs: here, a finaliser
                Late()
                return pipeline.main

        sys.modules["linkwrap.pipeline"] = Importing("linkwrap.pipeline")
        sys.argv = ["linkwrap-cc", {str(hello_obj)!r}, "-o", "prog"]
        from linkwrap.cc import main
        main()
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "LINKWRAP_SERVER": "off"})
    assert (done.returncode, done.stderr) == (-signal.SIGINT, "")
    assert not (tmp_path / "prog").exists()


def test_a_ctrl_c_that_falls_in_a_finaliser_later_on_the_link_path_stops_the_link(tmp_path, lw_home, hello_obj):
    """The same ^C, in a finaliser after the link path's imports (a lazy import, a __del__) and
    before the linker starts: the link stops as soon as it has started, and dies quietly of SIGINT."""
    import signal
    code = textwrap.dedent(f"""
        import os, sys
        from linkwrap.run import run

        class Late:
            def __del__(self):
                os.kill(os.getpid(), 2)  # the ^C, handled before this finaliser returns
                sum(range(1000))

        command = run.direct_command

        def direct_command(*a, **k):
            Late()
            return command(*a, **k)

        run.direct_command = direct_command
        sys.argv = ["linkwrap-cc", {str(hello_obj)!r}, "-o", "prog"]
        from linkwrap.cc import main
        main()
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "LINKWRAP_SERVER": "off", "LINKWRAP_LINKER": "mold"})
    assert (done.returncode, done.stderr) == (-signal.SIGINT, "")
    assert not (tmp_path / "prog").exists()


@pytest.mark.parametrize("which", ["native client", "script"])
def test_ctrl_c_at_any_point_of_a_start_dies_quietly_of_sigint(tmp_path, lw_home, hello_obj, which):
    import signal
    native, script_path = written_launcher("linkwrap-launch")
    argv = [native if which == "native client" else script_path, "cc", str(hello_obj), "-o", "hello"]
    env = {**os.environ, "LINKWRAP_SERVER": "off"}  # the start itself, not a warm server's answer
    outcomes = interrupted_starts(argv, tmp_path, env)
    assert any(code == -signal.SIGINT for code, _ in outcomes)  # some starts were interrupted
    for code, err in outcomes:
        assert code in (0, -signal.SIGINT) and err == "", (code, err)
    assert subprocess.run([str(tmp_path / "hello")], capture_output=True, text=True).stdout == "hello\n"


@pytest.mark.parametrize("ignored", [True, False])
def test_a_sigint_the_caller_ignored_stays_ignored_for_the_driver(tmp_path, lw_home, hello_obj, ignored):
    _, script_path = written_launcher("linkwrap-launch")
    driver = tmp_path / "driver"
    driver.write_text("#!/bin/sh\ngrep SigIgn /proc/$$/status > sigign; env > env; exec cc \"$@\"\n")
    driver.chmod(0o755)
    trap = "trap '' INT; " if ignored else ""
    subprocess.run(["sh", "-c", f'{trap}exec "$@"', "sh", script_path, str(driver), str(hello_obj), "-o", "h"],
                   cwd=tmp_path, check=True)
    sigign = int((tmp_path / "sigign").read_text().split()[1], 16)
    assert bool(sigign & (1 << (2 - 1))) == ignored
    assert "LINKWRAP_SIGINT" not in (tmp_path / "env").read_text()
