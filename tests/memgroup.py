"""Real memory cgroups and links whose memory is heap, for the admission tests and benchmark.

A memory cgroup is made for a test (cgroup v1: /sys/fs/cgroup/memory/<name>; v2: /sys/fs/cgroup/<name>),
given a limit, and the test's child processes are moved into it; it is removed afterwards, its
leftover processes killed first. Needs root (CI runs as root); a missing controller fails the test.

heavy_objects() writes a C main and assembler files full of mergeable strings: GNU ld reads every
input string into its heap to merge them, so its charge is anonymous memory (what the OOM killer
counts) and scales with the strings, while the objects assemble in about a second and the output
stays small (the files repeat the same strings).
"""
import contextlib
import itertools
import os
import signal
import subprocess
import time

import pids

V1_ROOT = "/sys/fs/cgroup/memory"
V2_ROOT = "/sys/fs/cgroup"
_names = itertools.count()


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _read(path):
    with open(path) as f:
        return f.read()


class Group:
    def __init__(self, path, v2):
        self.path, self.v2 = path, v2

    def enter(self):
        """For preexec_fn: move the calling (child) process into the group."""
        _write(os.path.join(self.path, "cgroup.procs"), str(os.getpid()))

    def run(self, argv, **kw):
        return subprocess.run(argv, preexec_fn=self.enter, **kw)

    def popen(self, argv, **kw):
        return subprocess.Popen(argv, preexec_fn=self.enter, **kw)

    def oom_kills(self) -> int:
        text = _read(os.path.join(self.path, "memory.events" if self.v2 else "memory.oom_control"))
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        raise AssertionError(f"no oom_kill count in {self.path}")

    def peak_kb(self) -> int:
        return int(_read(os.path.join(self.path, "memory.peak" if self.v2 else "memory.max_usage_in_bytes"))) >> 10

    def procs(self):
        return [int(p) for p in _read(os.path.join(self.path, "cgroup.procs")).split()]

    def holds(self, pid) -> bool:
        """The process with this pid is in the group now."""
        want = self.path[len(V2_ROOT if self.v2 else V1_ROOT):]
        try:
            with open(f"/proc/{pid}/cgroup") as f:
                lines = f.read().splitlines()
        except OSError:
            return False
        for line in lines:
            _, controllers, path = line.split(":", 2)
            if (controllers == "") if self.v2 else ("memory" in controllers.split(",")):
                return path == want
        return False


def _root():
    if os.path.exists(os.path.join(V1_ROOT, "memory.limit_in_bytes")):
        return V1_ROOT, False
    controllers = os.path.join(V2_ROOT, "cgroup.controllers")
    assert os.path.exists(controllers) and "memory" in _read(controllers).split(), \
        "no memory cgroup controller (v1 or v2) on this machine"
    subtree = os.path.join(V2_ROOT, "cgroup.subtree_control")
    if "memory" not in _read(subtree).split():
        _write(subtree, "+memory")
    return V2_ROOT, True


@contextlib.contextmanager
def memory_cgroup(limit_kb=None):
    root, v2 = _root()
    path = os.path.join(root, f"linkwrap-test-{os.getpid()}-{next(_names)}")
    os.mkdir(path)
    group = Group(path, v2)
    try:
        if limit_kb is not None:
            limit = str(limit_kb << 10)
            if v2:
                _write(os.path.join(path, "memory.max"), limit)
                if os.path.exists(os.path.join(path, "memory.swap.max")):
                    _write(os.path.join(path, "memory.swap.max"), "0")
            else:
                _write(os.path.join(path, "memory.limit_in_bytes"), limit)
                memsw = os.path.join(path, "memory.memsw.limit_in_bytes")
                if os.path.exists(memsw):  # no swapping out of the test: the limit is the limit
                    _write(memsw, limit)
        yield group
    finally:
        for _ in range(100):
            procs = group.procs()
            if not procs:
                break
            for pid in procs:
                # still in the group once pinned: never a process that got a listed pid since
                pids.send((pid, None), signal.SIGKILL, still=group.holds)
            time.sleep(0.05)
        for _ in range(100):
            try:
                os.rmdir(path)
                break
            except OSError:
                time.sleep(0.05)
        assert not os.path.exists(path), f"{path} could not be removed"


MAIN_C = '#include <stdio.h>\nint main(void){puts("linked");return 0;}\n'


def heavy_objects(directory, files=6, strings=200_000):
    """main.o and files x s<N>.o in directory (the same strings in each); -> their paths."""
    directory = str(directory)
    _write(os.path.join(directory, "main.c"), MAIN_C)
    subprocess.run(["cc", "-c", "main.c", "-o", "main.o"], cwd=directory, check=True)
    paths = [os.path.join(directory, "main.o")]
    body = "".join(f'\t.string "linkwrap-test-string-{i:08d}-abcdefghijklmnopqrstuv"\n' for i in range(strings))
    for n in range(files):
        src = os.path.join(directory, f"s{n}.s")
        _write(src, '\t.section .note.GNU-stack,"",@progbits\n'
                    '\t.section .rodata.str1.1,"aMS",@progbits,1\n' + body)
        subprocess.run(["as", src, "-o", f"s{n}.o"], cwd=directory, check=True)
        os.unlink(src)
        paths.append(os.path.join(directory, f"s{n}.o"))
    return paths
