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

from tests.facts import snap
from tests.facts.test_filesystems import MOUNTINFO


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
