"""Shared fixtures. Tests use real tools; a missing one is a failed test, not a skip
(scripts/install-test-deps installs them)."""
import os
import shutil
import signal
import subprocess
import sysconfig

import pytest

# A test run started with SIGINT ignored (a background job of a non-interactive shell, as CI may be)
# would hand that to every process it starts, and the tests that interrupt a link would test nothing:
# give the run the interpreter's usual handler, so children start with SIGINT's default again.
signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def lw_home(tmp_path, monkeypatch):
    """A private LINKWRAP_HOME (records, cache, config) for one test."""
    home = tmp_path / "lw-home"
    home.mkdir()
    monkeypatch.setenv("LINKWRAP_HOME", str(home))
    monkeypatch.delenv("LINKWRAP_LINKER", raising=False)
    monkeypatch.delenv("LINKWRAP_DISABLE", raising=False)
    return home


SCRIPTS = sysconfig.get_path("scripts")


def script(name: str) -> str:
    """A console script of this package, by its real path (not a pyenv shim, ~60 ms each)."""
    path = os.path.join(SCRIPTS, name)
    assert os.access(path, os.X_OK), f"{name} is not installed in {SCRIPTS}: pip install -e '.[test]'"
    return path


def path_without_linkwrap(path=None) -> str:
    """PATH without the directories that hold a linkwrap-cc: `install` then writes an absolute path."""
    dirs = (path if path is not None else os.environ.get("PATH", "")).split(os.pathsep)
    return os.pathsep.join(d for d in dirs if d and not os.path.exists(os.path.join(d, "linkwrap-cc")))


def tool(name: str) -> str:
    """Absolute path of a required tool; fails the test when it is missing."""
    path = shutil.which(name)
    assert path, f"{name} is not installed: run scripts/install-test-deps"
    return path


@pytest.fixture
def linkwrap_cc():
    return script("linkwrap-cc")


@pytest.fixture
def hello_obj(tmp_path):
    """hello.o in tmp_path: a C program that prints "hello"."""
    src = tmp_path / "hello.c"
    src.write_text('#include <stdio.h>\nint main(void){puts("hello");return 0;}\n')
    subprocess.run(["cc", "-c", str(src), "-o", str(tmp_path / "hello.o")], check=True)
    return tmp_path / "hello.o"
