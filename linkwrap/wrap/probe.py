"""PROBE: the facts that decide what is fast and safe for one link -> Probe.

One small function per fact. None needs root; each may answer None
(unknown); none may raise or slow the link (all together <= 2 ms warm,
benchmarks/bench_probe.py).
"""
import os
from collections import namedtuple


class OutputFacts(namedtuple("OutputFacts", [
    "exists",           # bool
    "is_regular",       # bool | None
    "size",             # int | None, bytes
    "nlink",            # int | None
    "inode",            # int | None
    "held_by_others",   # bool | None: another process has it open, mapped or running
    "cached_fraction",  # float | None: share of its pages in the page cache
])):
    """What is at the output path before the link."""
    __slots__ = ()


NO_OUTPUT = OutputFacts(False, None, None, None, None, False, None)


class Probe(namedtuple("Probe", [
    "fs",               # str | None: "btrfs", "ext4", "xfs", "tmpfs", "overlay", "nfs", ...
    "fs_options",       # str | None: mount options (e.g. "rw,relatime,compress=zstd:3")
    "fs_local",         # bool | None: False for nfs/cifs/fuse-like network filesystems
    "kernel",           # tuple[int, ...] | None: (6, 18, 44)
    "output",           # OutputFacts
    "input_bytes",      # int | None: total size of the input files
    "cpus",             # int | None: CPUs this process may use (affinity and cgroup cpu.max)
    "mem_available_mb", # int | None
    "mem_limit_mb",     # int | None: cgroup memory.max, None when unlimited
    "thp",              # str | None: transparent huge pages mode ("always", "madvise", "never")
    "jobserver",        # bool: CARGO_MAKEFLAGS or MAKEFLAGS carries a jobserver
])):
    """Facts about the machine and the output path, each possibly None."""
    __slots__ = ()


def snapshot(request) -> Probe:
    raise NotImplementedError("filled in by the probe work (issue #3)")
