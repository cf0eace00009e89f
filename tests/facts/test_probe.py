"""probe.snapshot against real filesystems, real processes, a real cargo build and real cgroups.

Runs as root: loop mounts, cgroups and a privilege drop need it. A mount that
fails fails the test (tests/mounts.py).
"""
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
from linkwrap.facts import filesystems
from linkwrap.facts import cgroups


def snap(output, inputs=(), cwd=None):
    argv = ["-o", output] if output is not None else []
    return probe.snapshot(args.parse([*argv, *inputs], cwd=cwd or os.getcwd()))


# --- filesystems -----------------------------------------------------------

@pytest.mark.parametrize("fstype, options, expect_option", [
    ("btrfs", "compress=zstd", "compress=zstd"),
    ("xfs", None, None),
    ("ext4", None, None),
    ("tmpfs", None, None),
    ("overlay", None, "lowerdir="),
])
def test_names_the_filesystem_of_a_real_mount(tmp_path, fstype, options, expect_option):
    with mounts.filesystem(tmp_path, fstype, options) as point:
        # The output and its directory do not exist yet: the probe walks up.
        facts = snap(os.path.join(point, "target", "debug", "deps", "app"))
        assert facts.fs == fstype
        assert facts.fs_local is True
        assert facts.output == probe.NO_OUTPUT
        if expect_option:
            assert expect_option in facts.fs_options
        # And the output that does exist, in the mount's root.
        out = os.path.join(point, "app")
        with open(out, "wb") as f:
            f.write(b"\x7fELF")
        facts = snap(out)
        assert (facts.fs, facts.output.exists, facts.output.size) == (fstype, True, 4)


def test_a_kept_mount_table_is_read_again_only_after_a_mount_changed(tmp_path, monkeypatch):
    """keep_mountinfo() (the server's spares): the table is read again when poll() tells a mount
    came or went, and given up when its fd number was given to another file."""
    monkeypatch.setattr(filesystems, "_MOUNTINFO", [])
    filesystems.keep_mountinfo()
    fd = filesystems._MOUNTINFO[0]
    kept = probe.read_mountinfo()
    assert probe.read_mountinfo() is kept  # nothing changed: not read again
    outside = snap(str(tmp_path / "a")).fs
    with mounts.tmpfs_mount(tmp_path) as point:
        assert snap(os.path.join(point, "a")).fs == "tmpfs"
        assert probe.read_mountinfo() is not kept and f" {point} " in probe.read_mountinfo()
    assert snap(os.path.join(point, "a")).fs == outside != "tmpfs"
    assert f" {point} " not in probe.read_mountinfo()
    r, w = os.pipe()
    os.dup2(r, fd)  # as the server's child puts a client's jobserver fd at its own number
    try:
        assert probe.read_mountinfo() == probe._read("/proc/self/mountinfo") and filesystems._MOUNTINFO == []
        os.write(w, b"+")
        assert os.read(fd, 1) == b"+"  # the pipe was neither read nor closed
    finally:
        for f in (r, w, fd):
            os.close(f)


def test_a_mount_that_fails_fails_the_test(tmp_path):
    with pytest.raises(AssertionError, match="no_such_option"):
        with mounts.loop_mount(tmp_path, "ext4", "no_such_option"):
            pass


def test_root_filesystem_is_not_the_mounts(tmp_path):
    with mounts.tmpfs_mount(tmp_path) as point:
        assert snap(os.path.join(point, "a")).fs == "tmpfs"
        # A sibling of the mount point is on the filesystem holding tmp_path.
        assert snap(str(tmp_path / "a")).fs == probe.filesystem(str(tmp_path), probe.read_mountinfo())[0]
        assert snap(str(tmp_path / "a")).fs != "tmpfs"


def test_btrfs_subvolume_has_its_own_device_yet_is_named_btrfs(tmp_path):
    with mounts.loop_mount(tmp_path, "btrfs", "compress=zstd:1") as point:
        sub = os.path.join(point, "sub")
        mounts._run(["btrfs", "subvolume", "create", sub])
        # The premise: st_dev of a subvolume matches no mountinfo line.
        st = os.stat(sub)
        dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
        assert dev not in [m.dev for m in filesystems.mounts()]
        facts = snap(os.path.join(sub, "out"))
        assert facts.fs == "btrfs"
        assert "compress=zstd:1" in facts.fs_options


def test_bind_mount_is_named_after_what_it_shows(tmp_path):
    with mounts.loop_mount(tmp_path, "xfs") as point:
        os.mkdir(os.path.join(point, "shared"))
        with mounts.mounted(["--bind", os.path.join(point, "shared")], str(tmp_path / "bound")) as bound:
            assert snap(os.path.join(bound, "out")).fs == "xfs"


@pytest.mark.parametrize("fstype, name", [
    ("btrfs", "btrfs"), ("xfs", "xfs"), ("ext4", "ext2/3/4"), ("tmpfs", "tmpfs"), ("overlay", "overlay"),
])
def test_statfs_fallback_without_proc(tmp_path, fstype, name):
    # The path taken when /proc/self/mountinfo cannot be read: the magic only.
    with mounts.filesystem(tmp_path, fstype) as point:
        assert probe.filesystem(point, None) == (name, None)


MOUNTINFO = textwrap.dedent("""\
    27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
    30 27 0:40 / /home/me/My\\040Build rw,relatime shared:5 - btrfs /dev/sdb1 rw,compress=zstd:3,subvolid=5
    31 27 0:41 / /net/src rw,relatime - nfs4 srv:/src rw,vers=4.2
    32 27 0:42 / /mnt/remote rw,nosuid - fuse.sshfs me@host: rw,user_id=0
    33 27 0:43 / /mnt/disk rw - fuseblk /dev/sdc1 rw
    34 27 0:28 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate
""")


def test_mountinfo_parsing_unescapes_and_merges_options():
    table = filesystems.mounts(MOUNTINFO)
    assert [m.point for m in table] == [
        "/", "/home/me/My Build", "/net/src", "/mnt/remote", "/mnt/disk", "/sys/fs/cgroup"]
    btrfs = table[1]
    assert (btrfs.dev, btrfs.fstype, btrfs.source) == ("0:40", "btrfs", "/dev/sdb1")
    assert filesystems._merge_options(btrfs.options, btrfs.super_options) == \
        "rw,relatime,compress=zstd:3,subvolid=5"
    assert filesystems._longest_prefix(table, "/home/me/My Build/t/x").fstype == "btrfs"
    assert filesystems._longest_prefix(table, "/home/me/My Buildings").fstype == "ext4"
    assert filesystems.mounts("garbage\n\n") == []


@pytest.mark.parametrize("fstype, local", [
    ("ext4", True), ("btrfs", True), ("xfs", True), ("tmpfs", True), ("overlay", True), ("zfs", True),
    ("f2fs", True), ("vfat", True), ("fuseblk", True),
    ("nfs", False), ("nfs4", False), ("cifs", False), ("smb3", False), ("ceph", False), ("9p", False),
    ("fuse.sshfs", False), ("fuse", None), ("fuse.unknownfs", None),
])
def test_which_filesystems_are_local(fstype, local):
    assert probe.is_local(fstype) is local


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


# --- weird outputs: never raise --------------------------------------------

@pytest.mark.parametrize("output", [None, "dir", "missing/dir/out", "/dev/null", "file/below/a/file",
                                    "/proc/self/mem", "/", "unreadable"])
def test_snapshot_never_raises_for_weird_outputs(tmp_path, output):
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x")
    (tmp_path / "unreadable").write_text("x")
    os.chmod(tmp_path / "unreadable", 0)
    facts = snap(output if output is None or output.startswith("/") else str(tmp_path / output),
                 cwd=str(tmp_path))
    assert isinstance(facts, probe.Probe)
    assert facts.kernel and facts.cpus >= 1
    if output in ("dir", "/dev/null", "/"):
        assert facts.output.exists is True and facts.output.is_regular is False
        assert facts.output.held_by_others is None
    if output in (None, "missing/dir/out", "file/below/a/file"):
        assert facts.output == probe.NO_OUTPUT
        assert facts.fs is not None


def test_output_none_means_a_out_in_the_working_directory(tmp_path):
    (tmp_path / "a.out").write_bytes(b"12345")
    facts = snap(None, cwd=str(tmp_path))
    assert facts.output.size == 5


def test_snapshot_survives_a_broken_request():
    facts = probe.snapshot(None)
    assert facts.output == probe.UNKNOWN_OUTPUT and facts.input_bytes is None
    assert facts.kernel is not None


def test_input_bytes_sums_existing_inputs(tmp_path):
    (tmp_path / "a.o").write_bytes(b"x" * 100)
    (tmp_path / "b.rlib").write_bytes(b"x" * 23)
    facts = snap(str(tmp_path / "out"), ["a.o", "b.rlib", "missing.o", "-lc"], cwd=str(tmp_path))
    assert facts.input_bytes == 123


def _small(inputs, cwd, kind_flags=()):
    return probe.small_inputs(args.parse(["-o", "out", *kind_flags, *inputs], cwd=str(cwd)))


def test_small_inputs_are_few_files_under_the_threshold(tmp_path):
    half = probe.SMALL_INPUT_BYTES // 2
    (tmp_path / "a.o").write_bytes(b"x" * (half - 1))
    (tmp_path / "b.o").write_bytes(b"x" * half)
    assert _small(["a.o"], tmp_path) is True
    assert _small(["a.o", "b.o"], tmp_path) is True  # one byte under
    (tmp_path / "c.o").write_bytes(b"x" * 2)
    assert _small(["a.o", "b.o", "c.o"], tmp_path) is False
    assert snap(str(tmp_path / "out"), ["a.o"], cwd=str(tmp_path)).small_inputs is True
    # Unknown, not small: an input that cannot be stat()ed, or none named
    assert _small(["a.o", "missing.o"], tmp_path) is None
    assert _small([], tmp_path) is None


def test_many_inputs_are_not_small_whatever_their_size(tmp_path):
    names = []
    for i in range(probe.SMALL_INPUT_FILES + 1):
        (tmp_path / f"o{i}.o").write_bytes(b"x")
        names.append(f"o{i}.o")
    assert _small(names[:-1], tmp_path) is True
    assert _small(names, tmp_path) is False


def test_a_library_but_the_c_librarys_own_or_a_cxx_driver_makes_the_size_unknown(tmp_path):
    """What the linker reads that the command line does not show: libstdc++ (GNU ld took 3x mold's time
    on a C++ hello world here), libcrypto (1.25x); the C library's own -lm, -lpthread cost nothing."""
    (tmp_path / "main.o").write_bytes(b"x" * 100)
    assert _small(["main.o", "-lm", "-l", "pthread", "-ldl"], tmp_path) is True
    for other in (["-lcrypto"], ["-l", "stdc++"], ["-L.", "-lfoo"], ["-l:libfoo.a"]):
        assert _small(["main.o", *other], tmp_path) is None, other
    cxx = args.parse(["-o", "out", "main.o"], driver="/usr/bin/x86_64-linux-gnu-g++", cwd=str(tmp_path))
    assert probe.small_inputs(cxx) is None
    assert probe.small_inputs(cxx._replace(driver="clang")) is True


@pytest.mark.parametrize("flags", [["-static"], ["-static-pie"], ["-static-libgcc"], ["-Wl,-Bstatic"],
                                   ["-Wl,--as-needed,-Bstatic"], ["-Xlinker", "-Bstatic"], ["-T", "x.ld"],
                                   ["-Tx.ld"], ["-Wl,-T,x.ld"], ["-Wl,--script=x.ld"], ["-Xlinker", "--script=x.ld"]])
def test_archives_the_command_line_does_not_name_make_the_size_unknown(tmp_path, flags):
    """libc.a, libgcc.a, a -Bstatic library, a linker script's INPUT: read by the linker, named nowhere
    on the command line."""
    (tmp_path / "main.o").write_bytes(b"x" * 100)
    assert _small(["main.o"], tmp_path) is True
    assert _small(["main.o", *flags, "-lm"], tmp_path) is None


# --- the machine -------------------------------------------------------------

@pytest.mark.parametrize("release, version", [
    ("6.18.44-fc-v669", (6, 18, 44)),
    ("5.15.0-1051-azure", (5, 15, 0)),
    ("5.15.90.1-microsoft-standard-WSL2", (5, 15, 90)),
    ("6.10-rc1", (6, 10)),
    ("7.2.0", (7, 2, 0)),
    ("6.11.0+", (6, 11, 0)),
    ("4.19.0-26-amd64", (4, 19, 0)),
    ("6", (6,)),
    ("", None),
    ("linux", None),
])
def test_kernel_version(release, version):
    assert probe.kernel_version(release) == version


def test_kernel_version_of_this_machine():
    assert probe.kernel_version() == tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:3])


@pytest.mark.parametrize("text, n", [
    ("max 100000\n", None), ("150000 100000\n", 2), ("50000 100000", 1), ("200000 100000", 2),
    ("400000 100000", 4), ("max", None), ("100000 50000", 2),
])
def test_cpu_max(text, n):
    assert cgroups.parse_cpu_max(text) == n


@pytest.mark.parametrize("quota, period, n", [("-1\n", "100000\n", None), ("250000", "100000", 3)])
def test_cfs_quota(quota, period, n):
    assert cgroups.parse_cfs_quota(quota, period) == n


@pytest.mark.parametrize("text, limit", [
    ("max\n", None), ("536870912\n", 512 << 20), ("9223372036854771712\n", None),
])
def test_memory_max(text, limit):
    assert cgroups.parse_memory_max(text) == limit


def test_cgroup_dirs_v2_walk_up_from_the_leaf():
    dirs = probe.cgroup_dirs(MOUNTINFO, "0::/user.slice/user-0.slice/session-3.scope\n")
    assert dirs.cpu == dirs.memory == [
        "/sys/fs/cgroup/user.slice/user-0.slice/session-3.scope",
        "/sys/fs/cgroup/user.slice/user-0.slice", "/sys/fs/cgroup/user.slice", "/sys/fs/cgroup"]


def test_cgroup_dirs_with_the_hierarchy_mounted_at_root_end():
    dirs = probe.cgroup_dirs("5 1 0:28 / / rw - cgroup2 cgroup2 rw\n", "0::/a/b\n")
    assert dirs.cpu == ["/a/b", "/a", "/"]
    dirs = probe.cgroup_dirs(MOUNTINFO, "0::/\n")
    assert dirs.memory == ["/sys/fs/cgroup"]


def test_cgroup_dirs_v1_per_controller():
    table = textwrap.dedent("""\
        27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
        32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
        35 31 0:32 /docker /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
    """)
    dirs = probe.cgroup_dirs(table, "4:memory:/docker/abc\n2:cpu,cpuacct:/docker/abc\n0::/\n")
    assert dirs.cpu == ["/sys/fs/cgroup/cpu,cpuacct/docker/abc", "/sys/fs/cgroup/cpu,cpuacct/docker",
                        "/sys/fs/cgroup/cpu,cpuacct"]
    # The memory mount shows the hierarchy from /docker on.
    assert dirs.memory == ["/sys/fs/cgroup/memory/abc", "/sys/fs/cgroup/memory"]


def _cgroup_v1_dir(controller):
    for m in filesystems.mounts():
        if m.fstype == "cgroup" and controller in m.super_options.split(","):
            return m.point
    for m in filesystems.mounts():
        if m.fstype == "cgroup2":
            return m.point
    pytest.fail("no cgroup hierarchy mounted")


def test_real_cgroup_limits_reach_the_probe(tmp_path):
    # A child cgroup with half a CPU and 256 MiB; a process moved into it probes.
    cpu_dir = os.path.join(_cgroup_v1_dir("cpu"), f"linkwrap-test-{os.getpid()}")
    mem_dir = os.path.join(_cgroup_v1_dir("memory"), f"linkwrap-test-{os.getpid()}")
    v2 = cpu_dir == mem_dir
    os.mkdir(cpu_dir)
    if not v2:
        os.mkdir(mem_dir)
    try:
        if v2:
            with open(os.path.join(cpu_dir, "cpu.max"), "w") as f:
                f.write("50000 100000")
            with open(os.path.join(mem_dir, "memory.max"), "w") as f:
                f.write(str(256 << 20))
        else:
            with open(os.path.join(cpu_dir, "cpu.cfs_quota_us"), "w") as f:
                f.write("50000")
            with open(os.path.join(mem_dir, "memory.limit_in_bytes"), "w") as f:
                f.write(str(256 << 20))
        code = textwrap.dedent(f"""
            import os
            for d in {sorted({cpu_dir, mem_dir})!r}:
                with open(os.path.join(d, 'cgroup.procs'), 'w') as f:
                    f.write(str(os.getpid()))
            from linkwrap.facts import probe
            from linkwrap.request import args
            p = probe.snapshot(args.parse(['-o', 'x']))
            print(p.cpus, p.mem_limit_mb)
        """)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert out.stdout.split() == ["1", "256"]
    finally:
        for d in {cpu_dir, mem_dir}:
            os.rmdir(d)


def test_cpus_without_limits_is_the_affinity():
    assert probe.snapshot(args.parse(["-o", "x"])).cpus == min(
        len(os.sched_getaffinity(0)), cgroups.cgroup_cpu_limit(probe.cgroup_dirs(probe.read_mountinfo())) or 10**6)


def test_cpus_follow_affinity_of_the_process():
    code = ("import os; os.sched_setaffinity(0, {0}); "
            "from linkwrap.facts import probe; from linkwrap.request import args; print(probe.snapshot(args.parse(['-o', 'x'])).cpus)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"


def test_memory_and_thp_of_this_machine():
    facts = probe.snapshot(args.parse(["-o", "x"]))
    with open("/proc/meminfo") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:"))
    assert abs(facts.mem_available_mb - kb // 1024) < 256  # it moves between the two reads
    with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
        assert f"[{facts.thp}]" in f.read()


@pytest.mark.parametrize("text, mode", [
    ("always [madvise] never\n", "madvise"), ("[always] madvise never", "always"),
    ("always madvise [never]", "never"), ("", None),
])
def test_thp_mode(text, mode):
    assert probe.thp_mode(text) == mode


@pytest.mark.parametrize("env, present", [
    ({}, False),
    ({"MAKEFLAGS": " -j8 --jobserver-auth=3,4"}, True),
    ({"MAKEFLAGS": "-j --jobserver-auth=fifo:/tmp/GMfifo1"}, True),
    ({"CARGO_MAKEFLAGS": "-j --jobserver-fds=5,6 --jobserver-auth=5,6"}, True),
    ({"MAKEFLAGS": "-j8"}, False),
])
def test_jobserver(env, present):
    assert probe.snapshot(args.parse(["-o", "x"]), environ=env).jobserver is present


def test_a_memory_groups_use_counts_heap_and_not_file_cache(tmp_path):
    sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
    import memgroup
    big = tmp_path / "cached"
    with memgroup.memory_cgroup(limit_kb=1 << 20) as group:
        # Inside the group: write 64 MiB of file (page cache, charged to the group), hold 96 MiB of heap.
        code = textwrap.dedent(f"""
            import os
            with open({str(big)!r}, 'wb') as f:
                f.write(os.urandom(1 << 20) * 64)
            held = bytearray(96 << 20)
            from linkwrap.facts import probe
            from linkwrap.request import args
            p = probe.snapshot(args.parse(['-o', 'x']))
            print(p.mem_limit_mb, p.mem_used_mb, p.mem_group)
        """)
        out = group.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        limit, used, where = out.stdout.split()
        assert int(limit) == 1024 and where == group.path
        # The heap and the interpreter, not the 64 MiB of cache the group is also charged for.
        assert 96 <= int(used) < 96 + 60, out.stdout


def test_the_tightest_memory_limit_names_its_group(tmp_path):
    for d, limit in (("outer", 512 << 20), ("outer/inner", 256 << 20), ("outer/inner/leaf", None)):
        os.makedirs(tmp_path / d)
        (tmp_path / d / "memory.max").write_text(str(limit) if limit else "max\n")
    dirs = cgroups.CgroupDirs([], [str(tmp_path / "outer/inner/leaf"), str(tmp_path / "outer/inner"),
                                 str(tmp_path / "outer")])
    assert probe.memory_group(dirs) == (256 << 20, str(tmp_path / "outer/inner"))
    (tmp_path / "outer/inner/memory.current").write_text(str(300 << 20))
    (tmp_path / "outer/inner/memory.stat").write_text(
        f"anon {100 << 20}\nfile {200 << 20}\nactive_file {150 << 20}\ninactive_file {50 << 20}\n")
    assert probe.group_used_kb(str(tmp_path / "outer/inner")) == 100 << 10
