"""What this process may use: its cgroups (v1 and v2), their CPU and memory limits, the memory
group a link is charged to and what it uses now."""
import os
from linkwrap.facts.procfs import _read, _try
from linkwrap.facts.filesystems import _lines_with


class CgroupDirs:
    """For each controller, this process's cgroup directories, leaf first then
    each parent up to the hierarchy's mount point (limits nest)."""
    __slots__ = ("cpu", "memory", "v1")

    def __init__(self, cpu, memory, v1=None):
        # v1: the directories of cgroup v1 mounts, the others being v2 (None: not known, and both
        # versions' file names are tried): a file that cannot exist is not opened on every link.
        self.cpu, self.memory, self.v1 = cpu, memory, v1

    def __repr__(self):
        return f"CgroupDirs(cpu={self.cpu!r}, memory={self.memory!r})"


def cgroup_dirs(mountinfo, text=None):
    """Where this process's cpu and memory limits live: cgroup v2, v1 or both (hybrid).
    mountinfo is the text of /proc/self/mountinfo; text that of /proc/self/cgroup."""
    if text is None:
        text = _read("/proc/self/cgroup")
    if not text:
        return None
    if _CGROUP_DIRS and _CGROUP_DIRS[0] == text and _CGROUP_DIRS[1] is mountinfo:
        return _CGROUP_DIRS[2]  # the same cgroups and the same (kept) mount table
    table = _lines_with(mountinfo, " - cgroup")  # cgroup and cgroup2 mounts only
    cpu, memory, v1 = [], [], set()
    for line in text.splitlines():
        # "0::/user.slice/x.scope" (v2) or "4:memory:/docker/abc" / "2:cpu,cpuacct:/" (v1)
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, controllers, path = parts
        if hid == "0" and controllers == "":
            mount = _cgroup_mount(table, "cgroup2", None)
            if mount:
                dirs = _walk_up(mount, path)
                cpu += dirs
                memory += dirs
            continue
        names = controllers.split(",")
        for name, dirs in (("cpu", cpu), ("memory", memory)):
            if name in names:
                mount = _cgroup_mount(table, "cgroup", name)
                if mount:
                    up = _walk_up(mount, path)
                    dirs += up
                    v1.update(up)
    found = CgroupDirs(cpu, memory, v1)
    _CGROUP_DIRS[:] = [text, mountinfo, found]
    return found


# The last cgroup_dirs() answer: [/proc/self/cgroup's text, the mount table's (by identity), answer].
_CGROUP_DIRS = []


def _cgroup_mount(table, fstype, controller):
    for m in table:
        if m.fstype == fstype and (controller is None or controller in m.super_options.split(",")):
            return m
    return None


def _walk_up(mount, path):
    # The mount shows the hierarchy from mount.root; in a cgroup namespace the
    # path is already relative to it.
    root = mount.root.rstrip("/")
    if root and (path == root or path.startswith(root + "/")):
        path = path[len(root):]
    d = (mount.point.rstrip("/") + path.rstrip("/")) or "/"
    dirs = [d]
    while len(d) > len(mount.point):
        parent = os.path.dirname(d)
        if parent == d:
            break
        dirs.append(parent)
        d = parent
    return dirs


def parse_cpu_max(text):
    """cgroup v2 cpu.max 'QUOTA PERIOD' -> CPUs (rounded up), None for 'max'."""
    quota, _, period = text.strip().partition(" ")
    if quota == "max" or not quota:
        return None
    return max(1, -(-int(quota) // int(period or 100000)))


def parse_cfs_quota(quota_text, period_text):
    """cgroup v1 cpu.cfs_quota_us / cpu.cfs_period_us -> CPUs, None for -1."""
    quota = int(quota_text)
    if quota <= 0:
        return None
    return max(1, -(-quota // int(period_text)))


def parse_memory_max(text):
    """cgroup v2 memory.max or v1 memory.limit_in_bytes -> bytes, None when unlimited."""
    text = text.strip()
    if text == "max" or not text:
        return None
    value = int(text)
    # v1 says "unlimited" as PAGE_COUNTER_MAX pages, about 2**63.
    return None if value >= 1 << 62 else value


def cgroup_cpu_limit(cgroups):
    """The tightest CPU quota of this process's cgroups, or None."""
    limits = []
    v1 = getattr(cgroups, "v1", None)
    for d in cgroups.cpu:
        text = _read(d + "/cpu.max") if v1 is None or d not in v1 else None
        if text is not None:
            limits.append(parse_cpu_max(text))
            continue
        quota = _read(d + "/cpu.cfs_quota_us") if v1 is None or d in v1 else None
        if quota is not None:
            # The period only for a quota (-1: none, the usual case).
            limits.append(parse_cfs_quota(quota, (_read(d + "/cpu.cfs_period_us") or "100000")
                                          if quota.strip() not in ("-1", "") else "100000"))
    limits = [n for n in limits if n]
    return min(limits) if limits else None


def cpus(cgroups):
    """CPUs this process may run on (affinity), capped by the cgroup CPU quota."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count()
    limit = _try(cgroup_cpu_limit, cgroups) if cgroups else None
    if limit and n:
        return min(n, limit)
    return n or limit


def mem_limit_mb(cgroups):
    """The tightest cgroup memory limit over this process's cgroups, in MiB, or None."""
    group = memory_group(cgroups)
    return group[0] // (1 << 20) if group else None


def memory_group(cgroups):
    """(limit in bytes, directory) of the tightest memory limit over this process's
    cgroups (v2 memory.max, v1 memory.limit_in_bytes), or None when none applies."""
    best = None
    v1 = getattr(cgroups, "v1", None)
    for d in cgroups.memory:
        text = _read(d + "/memory.max") if v1 is None or d not in v1 else None
        if text is None and (v1 is None or d in v1):
            text = _read(d + "/memory.limit_in_bytes")
        limit = parse_memory_max(text) if text is not None else None
        if limit and (best is None or limit < best[0]):
            best = (limit, d)
    return best


def group_used_kb(directory):
    """What a memory cgroup holds that reclaim cannot take back, in KiB: its usage
    (v2 memory.current, v1 memory.usage_in_bytes) less its file cache (active and
    inactive file pages of memory.stat). A group that just compiled is full of
    cache; counting that as used would make every link wait for nothing."""
    usage = _read(directory + "/memory.current")
    v1 = usage is None
    if v1:
        usage = _read(directory + "/memory.usage_in_bytes")
    if usage is None:
        return None
    stat = _read(directory + "/memory.stat", limit=65536) or ""
    return max(0, int(usage) - _file_cache_bytes(stat, v1)) >> 10


def _file_cache_bytes(stat, v1):
    # v1 counts the group and its children under total_*; v2 counts them always.
    wanted = ("total_active_file", "total_inactive_file") if v1 else ("active_file", "inactive_file")
    total = 0
    for line in stat.splitlines():
        key, _, value = line.partition(" ")
        if key in wanted:
            total += int(value)
    return total
