"""facts/output_file.py against real holders (a process that maps, opens or runs the output), real
leases on each filesystem, hard links Cargo makes, and the page cache (cachestat and mincore)."""
import mmap
import os
import subprocess
import sys
import textwrap

import pytest

import mounts
from conftest import tool
from linkwrap.request import args
from linkwrap import libc
from linkwrap.facts import probe
from linkwrap.facts import output_file

from tests.facts import snap


# --- the existing output: who holds it -------------------------------------

HOLDERS = {
    # mmap MAP_PRIVATE, then close the descriptor: only the mapping remains.
    "maps": """
        # ctypes, not the mmap module: that one keeps a dup() of the descriptor.
        import ctypes, mmap, os, sys
        libc = ctypes.CDLL(None)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
        fd = os.open(sys.argv[1], os.O_RDONLY)
        addr = libc.mmap(None, os.fstat(fd).st_size, mmap.PROT_READ, mmap.MAP_PRIVATE, fd, 0)
        assert addr not in (None, ctypes.c_void_p(-1).value)
        os.close(fd)
        assert any(sys.argv[1] in line for line in open('/proc/self/maps'))
        assert not [n for n in os.listdir('/proc/self/fd') if os.path.realpath(f'/proc/self/fd/{n}') == sys.argv[1]]
        print('ready', flush=True); sys.stdin.read()
    """,
    "opens": """
        import sys
        f = open(sys.argv[1], 'rb')
        print('ready', flush=True); sys.stdin.read()
    """,
}

SLEEPER_C = r"""
#include <stdio.h>
#include <unistd.h>
int main(void) { puts("ready"); fflush(stdout); char c; read(0, &c, 1); return 0; }
"""


def _start_holder(how, path):
    if how == "runs":
        proc = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    else:
        code = textwrap.dedent(HOLDERS[how])
        proc = subprocess.Popen([sys.executable, "-c", code, path],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


@pytest.mark.parametrize("how", ["maps", "opens", "runs"])
def test_held_by_another_process_then_free_after_it_exits(tmp_path, how):
    out = str(tmp_path / "app")
    src = tmp_path / "sleeper.c"
    src.write_text(SLEEPER_C)
    subprocess.run([tool("gcc"), "-O1", "-o", out, str(src)], check=True)
    assert snap(out).output.held_by_others is False
    proc = _start_holder(how, out)
    try:
        facts = snap(out).output
        assert facts.held_by_others is True
        assert (facts.exists, facts.is_regular) == (True, True)
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    assert snap(out).output.held_by_others is False


@pytest.mark.parametrize("fstype", ["btrfs", "xfs", "tmpfs", "overlay"])
def test_leases_answer_on_each_filesystem(tmp_path, fstype):
    with mounts.filesystem(tmp_path, fstype) as point:
        out = os.path.join(point, "app")
        with open(out, "wb") as f:
            f.write(b"x" * 4096)
        assert snap(out).output.held_by_others is False
        with open(out, "rb"):
            assert snap(out).output.held_by_others is True
        assert snap(out).output.held_by_others is False


def test_lease_refused_without_ownership_is_unknown(tmp_path):
    # Not our file and no CAP_LEASE: the kernel refuses the lease (EACCES).
    out = tmp_path / "app"
    out.write_bytes(b"x" * 4096)
    fd = os.open(out, os.O_RDONLY)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: drop root, then ask
        try:
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            os.write(w, repr(output_file.held_by_others(fd)).encode())
        finally:
            os._exit(0)
    os.close(w)
    answer = os.read(r, 100).decode()
    os.waitpid(pid, 0)
    os.close(fd)
    assert answer == "None"
    assert output_file.held_by_others(os.open(out, os.O_RDONLY)) is False  # root may


def test_held_by_others_leaves_sigio_as_it_was():
    import signal
    before = signal.getsignal(signal.SIGIO)
    probe.snapshot(args.parse(["-o", sys.executable]))
    assert signal.getsignal(signal.SIGIO) == before


# --- hard links --------------------------------------------------------------

def test_hard_linked_output_has_nlink_2(tmp_path):
    out = tmp_path / "app"
    out.write_bytes(b"x")
    assert snap(str(out)).output.nlink == 1
    os.link(out, tmp_path / "other")
    facts = snap(str(out)).output
    assert (facts.nlink, facts.inode) == (2, os.stat(out).st_ino)


def test_cargo_build_output_in_deps_has_nlink_2(tmp_path):
    crate = tmp_path / "hello"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "hello"\nversion = "0.1.0"\nedition = "2021"\n')
    (crate / "src" / "main.rs").write_text('fn main() { println!("hi"); }\n')
    env = {**os.environ, "CARGO_TARGET_DIR": str(crate / "target")}
    env.pop("RUSTFLAGS", None)
    subprocess.run([tool("cargo"), "build", "--offline", "-q"], cwd=crate, env=env, check=True)
    deps = crate / "target" / "debug" / "deps"
    built = [p for p in deps.iterdir() if p.name.startswith("hello-") and "." not in p.name]
    assert len(built) == 1, sorted(p.name for p in deps.iterdir())
    facts = snap(str(built[0]))
    assert facts.output.nlink == 2
    assert facts.output.inode == os.stat(crate / "target" / "debug" / "hello").st_ino
    assert facts.output.held_by_others is False


# --- the page cache --------------------------------------------------------

def _big_file(path, size=16 << 20):
    with open(path, "wb") as f:
        f.write(os.urandom(size))
        f.flush()
        os.fsync(f.fileno())  # clean pages: DONTNEED can drop them
    return str(path)


def _drop(path):
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def _read_all(path):
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


@pytest.mark.parametrize("where", ["tmp", "btrfs", "xfs"])
def test_cached_fraction_follows_the_page_cache(tmp_path, where):
    with (mounts.filesystem(tmp_path, where) if where != "tmp" else _nothing(tmp_path)) as d:
        path = _big_file(os.path.join(d, "big"))
        _read_all(path)
        assert snap(path).output.cached_fraction > 0.95
        _drop(path)
        assert snap(path).output.cached_fraction < 0.05
        # Half of it read back in, without readahead.
        with open(path, "rb", buffering=0) as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
            f.read(8 << 20)
        assert 0.45 < snap(path).output.cached_fraction < 0.6


def test_mincore_agrees_with_cachestat(tmp_path):
    path = _big_file(tmp_path / "big")
    fd = os.open(path, os.O_RDONLY)
    try:
        pages = (16 << 20) // mmap.PAGESIZE
        _read_all(path)
        assert output_file.pages_cached_cachestat(fd) == pages
        assert output_file.pages_cached_mincore(fd, 16 << 20) == pages
        _drop(path)
        assert output_file.pages_cached_cachestat(fd) == 0
        assert output_file.pages_cached_mincore(fd, 16 << 20) == 0
    finally:
        os.close(fd)


def test_syscall_is_built_on_ctypes_c_half_and_reports_errno():
    import errno
    syscall, c_long, _, get_errno = libc.syscall()
    assert type(syscall).__name__ == "Syscall"  # not the 1.5-3 ms ctypes fallback
    assert syscall(c_long(100000)) == -1 and get_errno() == errno.ENOSYS
    sys_getpid = {"x86_64": 39, "aarch64": 172}[os.uname().machine]
    assert syscall(c_long(sys_getpid)) == os.getpid()


def test_small_outputs_are_not_measured(tmp_path):
    out = tmp_path / "small"
    out.write_bytes(b"x" * (output_file.CACHE_PROBE_MIN_BYTES - 1))
    assert snap(str(out)).output.cached_fraction is None


class _nothing:
    def __init__(self, d):
        self.d = str(d)

    def __enter__(self):
        return self.d

    def __exit__(self, *exc):
        return False


def test_the_page_cache_share_left_for_later_is_measured_then(tmp_path):
    """An output with another name (Cargo's uplifted copy) is written fresh whatever it caches: its
    page-cache share is measured while the linker runs (cached_later()), not before the choice."""
    out = tmp_path / "app"
    out.write_bytes(b"\0" * (output_file.CACHE_PROBE_MIN_BYTES + 4096))
    os.link(out, tmp_path / "uplifted")
    early = output_file.output_facts(str(out), cache=False)
    assert early.nlink == 2 and early.cached_fraction is None
    later = output_file.cached_later(early, str(out))
    assert later.cached_fraction is not None and later.cached_fraction > 0  # just written: cached
    assert output_file.output_facts(str(out)).cached_fraction is not None   # measured at once by default
    os.unlink(tmp_path / "uplifted")
    lone = output_file.output_facts(str(out), cache=False)
    assert lone.nlink == 1 and lone.cached_fraction is not None  # a lone output's share may decide
    (tmp_path / "other").write_bytes(b"\0" * (output_file.CACHE_PROBE_MIN_BYTES + 4096))
    os.replace(tmp_path / "other", out)                          # replaced since: not the output seen
    assert output_file.cached_later(early, str(out)).cached_fraction is None
