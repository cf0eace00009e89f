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
# Likewise SIGHUP, which a run under nohup starts with ignored: the tests that send it to a link then
# waited for ever. A handler of the run's own still lets a hangup pass the run by, and what it starts
# begins with SIGHUP's default again (exec resets a handler, not an ignored signal).
if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
    signal.signal(signal.SIGHUP, lambda *_: None)


@pytest.fixture
def lw_home(tmp_path, monkeypatch):
    """A private LINKWRAP_HOME (records, cache, config) for one test."""
    home = tmp_path / "lw-home"
    home.mkdir()
    monkeypatch.setenv("LINKWRAP_HOME", str(home))
    monkeypatch.delenv("LINKWRAP_LINKER", raising=False)
    monkeypatch.delenv("LINKWRAP_DISABLE", raising=False)
    yield home
    stop_servers(home)


@pytest.fixture(autouse=True)
def _forget_memos():
    """Each test starts as a new process would: without what an earlier test's links kept in memory
    (a server's spare keeps them between the links it rehearses and serves; args, direct, linkers)."""
    from linkwrap.request import args, config
    from linkwrap.facts import build, linkers, probe
    from linkwrap.facts import filesystems
    from linkwrap.run import direct
    args._last = config._last = direct._split = linkers._last = None
    filesystems._FS_LAST.clear()
    direct._lines.clear()
    build._seen.clear()
    yield


def stop_servers(home):
    """Stop the link servers a test's links started (the native entry point starts one when none runs)."""
    run = os.path.join(str(home), "run")
    try:
        names = [n for n in os.listdir(run) if n.startswith("s-") and not n.endswith(".lock")]
    except OSError:
        return
    from linkwrap.cli.server import ask
    for n in names:
        ask(os.path.join(run, n), "stop")
    # and wait for them to be gone (the server holds an flock on <socket>.lock while it lives): a spare
    # still rehearsing writes into the state directory a test may be about to remove
    import fcntl
    import time
    deadline = time.monotonic() + 10
    for n in names:
        try:
            fd = os.open(os.path.join(run, n + ".lock"), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.02)
        finally:
            os.close(fd)


SCRIPTS = sysconfig.get_path("scripts")


def script(name: str) -> str:
    """A console script of this package, by its real path (not a pyenv shim, ~60 ms each).

    linkwrap-cc and linkwrap-launch are the wheel's native client (setup.py) when a compiler built it:
    their Python entry points (<name>-python, what that client execs without a server) are what the
    link path's tests mean; the client itself is tests/test_packaging.py's and tests/server/'s."""
    if os.path.exists(os.path.join(SCRIPTS, f"{name}-python")):
        name = f"{name}-python"
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


@pytest.fixture
def big_hello_obj(tmp_path):
    """hello.o as hello_obj's, with a constant array that makes it no small link (linkrecords.not_small):
    for tests of the static order that is not the small links'."""
    from linkrecords import not_small
    src = tmp_path / "hello.c"
    src.write_text(not_small('#include <stdio.h>\nint main(void){puts("hello");return 0;}\n'))
    subprocess.run(["cc", "-c", str(src), "-o", str(tmp_path / "hello.o")], check=True)
    return tmp_path / "hello.o"


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Wild:
    """The real wild these tests run: its path, the directory to put on PATH, its version."""

    def __init__(self, path, version):
        self.path, self.dir, self.version = path, os.path.dirname(path), version

    def env(self, **extra):
        """os.environ with this wild first on PATH (how linkwrap finds it), plus extra."""
        return {**os.environ, "PATH": f"{self.dir}{os.pathsep}{os.environ['PATH']}", **extra}


def _trusted_binary(path) -> bool:
    """An ELF file owned by root or us and writable by nobody else (not a stand-in script)."""
    try:
        st = os.stat(path)
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError:
        return False
    return magic == b"\x7fELF" and st.st_uid in (0, os.getuid()) and not st.st_mode & 0o022


def find_wild():
    """A real wild: on PATH, else the newest under shared/tools/wild/<version>/ in a directory
    holding this checkout (CI clones main next to a copy of shared/). None when there is none."""
    from linkwrap.facts.linkers import parse_version, version_text
    candidates = [shutil.which("wild")]
    d = REPO
    while os.path.dirname(d) != d:
        d = os.path.dirname(d)
        tools = os.path.join(d, "shared", "tools", "wild")
        if os.path.isdir(tools):
            found = [os.path.join(tools, v, "wild") for v in os.listdir(tools)]
            found = [(parse_version("wild", f"Wild {os.path.basename(os.path.dirname(p))}") or (), p)
                     for p in found if os.access(p, os.X_OK)]
            candidates += [p for _, p in sorted(found, reverse=True)]
            break
    for path in candidates:
        if path and _trusted_binary(path):
            version = parse_version("wild", version_text("wild", path))
            if version:
                return Wild(os.path.realpath(path), version)
    return None


@pytest.fixture(scope="session")
def wild():
    """The real wild linker. Missing, the test fails: put shared/tools/wild/<version>/ on PATH
    (as .ci/run does). Other versions' behaviour is tested with tests/standins/wild.py."""
    found = find_wild()
    assert found, "no real wild found on PATH or in shared/tools/wild/ beside the checkout (see .ci/run)"
    return found


_MACHINE = {}


def machine_linkers() -> dict:
    """{name: LinkerInfo} as linkwrap discovers them on this machine (paths and versions come from
    here, never from a test's literal), with rust-lld where rustc says; asked once per session."""
    if not _MACHINE:
        import tempfile
        from linkwrap.facts import linkers
        with tempfile.TemporaryDirectory() as home:
            saved = os.environ.get("LINKWRAP_HOME")
            os.environ["LINKWRAP_HOME"] = home
            try:
                _MACHINE.update(linkers.discover())
            finally:
                if saved is None:
                    del os.environ["LINKWRAP_HOME"]
                else:
                    os.environ["LINKWRAP_HOME"] = saved
    return _MACHINE


def comment_mark(name: str) -> str:
    """What a binary's .comment says when this machine's `name` linked it ("LLD 16.", "mold 1.10.1")."""
    info = machine_linkers()[name]
    if name in ("lld", "rust-lld"):
        return f"LLD {info.version[0]}."
    return f"{name} {'.'.join(map(str, info.version))}"


def rust_gcc_ld() -> str:
    """The -B directory rustc >= 1.90 injects: <sysroot>/lib/rustlib/<host>/bin/gcc-ld."""
    sysroot = subprocess.run([tool("rustc"), "--print", "sysroot"], capture_output=True, text=True).stdout.strip()
    info = subprocess.run([tool("rustc"), "-vV"], capture_output=True, text=True).stdout
    host = next(line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("host:"))
    return os.path.join(sysroot, "lib", "rustlib", host, "bin", "gcc-ld")


@pytest.fixture(scope="session", autouse=True)
def _stop_link_servers_the_tests_started(tmp_path_factory):
    """A link through the native client starts a warm server that lives until 15 idle minutes pass or its
    socket goes: end those whose LINKWRAP_HOME is under this run's temporary directory, so a test run
    leaves no process behind (a user's own servers, elsewhere, are not touched)."""
    yield
    import signal as signals
    import pids
    # os.sep: /tmp/pytest-of-root/pytest-5 is no prefix of a concurrent run's pytest-50
    base = os.path.join(str(tmp_path_factory.getbasetemp()), "")

    def ours(pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"linkwrap.server.server" not in f.read():
                    return False
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
        except (OSError, ValueError):
            return False
        return env.get(b"LINKWRAP_HOME", b"").decode(errors="replace").startswith(base)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if ours(pid):
            pids.send((int(pid), None), signals.SIGTERM, still=ours)  # judged again once pinned by a pidfd
