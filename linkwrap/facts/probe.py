"""PROBE: the facts that decide what is fast and safe for one link -> Probe.

Input: a LinkRequest (args.py). Output: a Probe record (below).
One small function per fact. None needs root; each may answer None
(unknown); none may raise or slow the link (all together <= 2 ms warm,
benchmarks/bench_probe.py). Standard library only, and only cheap modules:
foreign calls (_ctypes, ~0.5 ms to set up) happen only for cached_fraction of
outputs of at least CACHE_PROBE_MIN_BYTES; ctypes itself (1.5-3 ms) only for
the mincore fallback (Linux < 6.5) and the statfs fallback (no /proc).

Where the output is (fs, fs_options, fs_local) comes from the mount table:
the mount whose device (major:minor) is the output directory's st_dev, else
(btrfs gives each subvolume its own anonymous st_dev) the longest mount point
containing the directory's real path. fs is the type as the mount table
spells it ("ext4", "btrfs", "fuse.sshfs", ...); fs_options are the mount's
per-mount options followed by its superblock options ("compress=zstd:3").
"""
import os
from linkwrap.records import record


class OutputFacts(record("OutputFacts", [
    "exists",           # bool; None when the path could not even be stat()ed
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
UNKNOWN_OUTPUT = OutputFacts(None, None, None, None, None, None, None)


class Probe(record("Probe", [
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
    "mem_used_mb",      # int | None: what the limiting cgroup holds that reclaim cannot take back
    "mem_group",        # str | None: the cgroup directory whose memory limit applies
    "small_inputs",     # bool | None: a small C link (small_inputs(): few, small inputs, libc only)
], defaults=(None,))):
    """Facts about the machine and the output path, each possibly None."""
    __slots__ = ()


# Facts no choice depends on, only the record, the memory prediction and admission: a link that
# admission does not hold back learns them while its linker runs (snapshot(later=True), complete()).
LATER = ("input_bytes", "mem_available_mb", "thp", "jobserver", "mem_used_mb")


def snapshot(request, environ=None, later=False) -> Probe:
    """Every fact for one link. Never raises: a fact that fails is None.

    later=True leaves the LATER facts None, for complete() to fill in."""
    environ = os.environ if environ is None else environ
    mountinfo = _try(read_mountinfo)
    path = _try(output_path, request)
    where = _try(existing_dir, path) if path else None
    fs = _try(filesystem, where, mountinfo) if where else None
    fs_name, fs_options = fs if fs else (None, None)
    cgroups = _try(cgroup_dirs, mountinfo) if mountinfo else None
    group = _try(memory_group, cgroups) if cgroups else None
    if later:
        return Probe(fs=fs_name, fs_options=fs_options, fs_local=_try(is_local, fs_name) if fs_name else None,
                     kernel=_try(kernel_version),
                     output=(_try(output_facts, path) or UNKNOWN_OUTPUT) if path else UNKNOWN_OUTPUT,
                     input_bytes=None, cpus=_try(cpus, cgroups), mem_available_mb=None,
                     mem_limit_mb=group[0] >> 20 if group else None, thp=None, jobserver=None, mem_used_mb=None,
                     mem_group=group[1] if group else None, small_inputs=_try(small_inputs, request))
    used_kb = _try(group_used_kb, group[1]) if group else None
    return Probe(
        fs=fs_name,
        fs_options=fs_options,
        fs_local=_try(is_local, fs_name) if fs_name else None,
        kernel=_try(kernel_version),
        output=(_try(output_facts, path) or UNKNOWN_OUTPUT) if path else UNKNOWN_OUTPUT,
        input_bytes=_try(input_bytes, request),
        cpus=_try(cpus, cgroups),
        mem_available_mb=_try(mem_available_mb),
        mem_limit_mb=group[0] >> 20 if group else None,
        thp=_try(thp_mode),
        jobserver=bool(_try(jobserver, environ)),
        mem_used_mb=used_kb >> 10 if used_kb is not None else None,
        mem_group=group[1] if group else None,
        small_inputs=_try(small_inputs, request),
    )


def complete(facts, request, environ=None) -> Probe:
    """facts (snapshot(later=True)) with the LATER facts learnt now."""
    environ = os.environ if environ is None else environ
    used_kb = _try(group_used_kb, facts.mem_group) if facts.mem_group else None
    return facts._replace(input_bytes=_try(input_bytes, request), mem_available_mb=_try(mem_available_mb),
                          thp=_try(thp_mode), jobserver=bool(_try(jobserver, environ)),
                          mem_used_mb=used_kb >> 10 if used_kb is not None else None)


def _try(fact, *args):
    # A fact we cannot learn is unknown, never a failed link.
    try:
        return fact(*args)
    except Exception:
        return None


def _read(path, limit=1 << 20):
    """A small (kernel-made) text file, or None. os.read: no io-layer cost."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return _read_fd(fd, limit)
    finally:
        os.close(fd)


def _read_fd(fd, limit=1 << 20):
    try:
        chunks, total = [], 0
        while total < limit:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks).decode("utf-8", "surrogateescape")
    except OSError:
        return None


# --- where the output goes -------------------------------------------------

def output_path(request):
    """The file the link writes: -o, else a.out in the working directory (as cc does)."""
    if request.output:
        return request.output
    return os.path.join(request.cwd or os.getcwd(), "a.out")


def existing_dir(path):
    """The output's directory, or its nearest existing ancestor (it may not exist yet)."""
    d = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(d):
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
    return d


class Mount:
    """One line of /proc/self/mountinfo (proc(5)); dev is "major:minor".
    (A plain class: each record class costs time to define at import.)"""
    __slots__ = ("dev", "root", "point", "options", "fstype", "source", "super_options")

    def __init__(self, dev, root, point, options, fstype, source, super_options):
        self.dev, self.root, self.point, self.options = dev, root, point, options
        self.fstype, self.source, self.super_options = fstype, source, super_options

    def __repr__(self):
        return f"Mount({self.fstype} {self.source} on {self.point} [{self.dev}])"


def read_mountinfo():
    """This process's mount table as text (proc(5)), or None when /proc is not there."""
    if _MOUNTINFO:
        # Kept (keep_mountinfo()): read again only when a mount came or went since. The table
        # changes rarely; reading and parsing it is a tenth of a link's probe.
        import select
        fd, text, which = _MOUNTINFO
        try:
            st = os.fstat(fd)
            ours = (st.st_dev, st.st_ino) == which
        except OSError:
            ours = False
        if not ours:
            # Its number was given to another file (the server's child puts the client's fds at
            # their own numbers): that fd is not ours to read or close.
            del _MOUNTINFO[:]
            return _read("/proc/self/mountinfo", limit=16 << 20)
        poll = select.poll()
        poll.register(fd, select.POLLPRI)
        if text is not None and not any(ev & (select.POLLPRI | select.POLLERR) for _, ev in poll.poll(0)):
            return text
        os.lseek(fd, 0, os.SEEK_SET)
        text = _MOUNTINFO[1] = _read_fd(fd, limit=16 << 20)
        return text
    return _read("/proc/self/mountinfo", limit=16 << 20)


# [fd, text, (st_dev, st_ino)] of /proc/self/mountinfo in a process that keeps it open (keep_mountinfo()).
_MOUNTINFO = []


def keep_mountinfo() -> None:
    """In this process from now on, read_mountinfo() reads the table again only after a mount
    changed: poll() says so (POLLPRI) on an open mountinfo fd, once for each fd that has not
    been told. For the server's spares, which open it before they wait (a forked child shares
    its parent's fd and what it was told: each opens its own)."""
    try:
        fd = os.open("/proc/self/mountinfo", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return
    if _MOUNTINFO:
        read_mountinfo()  # closes nothing that is not its own
        if _MOUNTINFO:
            os.close(_MOUNTINFO[0])
    st = os.fstat(fd)
    _MOUNTINFO[:] = [fd, _read_fd(fd, limit=16 << 20), (st.st_dev, st.st_ino)]


def mounts(text=None):
    """Every mount, in mount order. The link path parses only the lines it
    needs (hosts with containers have thousands: ~1 us each)."""
    if text is None:
        text = read_mountinfo()
        if text is None:
            return None
    return [m for m in map(parse_mount, text.splitlines()) if m]


def parse_mount(line):
    """One mountinfo line -> Mount, or None when it is not one."""
    # "36 35 98:0 /root /point rw,noatime [optional fields] - ext4 /dev/sda1 rw,errors=..."
    left, sep, right = line.partition(" - ")
    f = left.split(" ")
    r = right.split(" ")
    if sep and len(f) >= 6 and len(r) >= 3:
        return Mount(f[2], _unescape(f[3]), _unescape(f[4]), f[5], r[0], _unescape(r[1]), r[2])
    return None


def _lines_with(text, needle):
    """The parsed lines of text that contain needle, found without splitting all of it."""
    found, i = [], text.find(needle)
    while i >= 0:
        start = text.rfind("\n", 0, i) + 1
        end = text.find("\n", i)
        end = len(text) if end < 0 else end
        m = parse_mount(text[start:end])
        if m:
            found.append(m)
        i = text.find(needle, end)
    return found


def _mounts_of_device(text, dev):
    """The mounts of device "major:minor". A loop over lines: str.find of a
    short needle like " 254:0 " is pathologically slow on this text."""
    found = []
    for line in text.splitlines():
        f = line.split(" ", 3)
        if len(f) == 4 and f[2] == dev:
            m = parse_mount(line)
            if m:
                found.append(m)
    return found


def _mounts_holding(text, path):
    """The mounts whose mount point contains path."""
    found = []
    for line in text.splitlines():
        f = line.split(" ", 5)
        if len(f) == 6 and _holds(_unescape(f[4]), path):
            m = parse_mount(line)
            if m:
                found.append(m)
    return found


def _holds(point, path):
    return path == point or point == "/" or path.startswith(point + "/")


def _unescape(field):
    # mountinfo writes space, tab, newline and backslash as \040 \011 \012 \134.
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        code = field[i + 1:i + 4]
        if field[i] == "\\" and len(code) == 3 and code.isdigit():
            out.append(chr(int(code, 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def filesystem(directory, mountinfo):
    """(type, options) of the filesystem holding an existing directory, or None.
    mountinfo is the text of /proc/self/mountinfo."""
    if mountinfo is None:
        # No /proc: the statfs magic still names the type (ext2/3/4 share one).
        name = fs_from_statfs(directory)
        return (name, None) if name else None
    st = os.stat(directory)
    if _FS_LAST and _FS_LAST[0] == st.st_dev and _FS_LAST[1] is mountinfo:
        return _FS_LAST[2]  # the one mount of that device in the same (kept) table: a server's spare's
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    same_dev = _mounts_of_device(mountinfo, dev)
    if len(same_dev) == 1:
        found = same_dev[0]
        _FS_LAST[:] = [st.st_dev, mountinfo, (found.fstype, _merge_options(found.options, found.super_options))]
        return _FS_LAST[2]
    else:
        # Bind mounts share a device; btrfs subvolumes have their own: the
        # longest mount point holding the real path decides (last mounted wins).
        real = os.path.realpath(directory)
        found = _longest_prefix(same_dev or _mounts_holding(mountinfo, real), real)
        if found is None and same_dev:
            found = same_dev[-1]
    if found is None:
        return None
    return found.fstype, _merge_options(found.options, found.super_options)


# (device, the mount table's text, the answer) of the last filesystem() whose device has one mount.
_FS_LAST = []


def _longest_prefix(table, path):
    best = None
    for m in table:
        if _holds(m.point, path) and (best is None or len(m.point) >= len(best.point)):
            best = m
    return best


def _merge_options(per_mount, per_super):
    seen = per_mount.split(",")
    return ",".join(seen + [o for o in per_super.split(",") if o not in seen])


# Network and cluster filesystems: what is written may cross a wire.
NETWORK_FS = frozenset("""
    nfs nfs4 cifs smb3 smbfs ceph 9p afs glusterfs lustre gfs2 ocfs2 davfs
    fuse.sshfs fuse.s3fs fuse.rclone fuse.gcsfuse fuse.glusterfs fuse.ceph-fuse
    fuse.juicefs fuse.goofys fuse.davfs2 fuse.mount-s3 fuse.blobfuse2
""".split())


def is_local(fstype):
    """False for network filesystems; None for a FUSE filesystem we cannot place."""
    if fstype in NETWORK_FS:
        return False
    if fstype == "fuse" or fstype.startswith("fuse.") or fstype == "virtiofs":
        return None
    return True


# statfs(2) f_type values (linux/magic.h), for the no-/proc fallback only.
FS_MAGIC = {
    0x9123683E: "btrfs", 0xEF53: "ext2/3/4", 0x58465342: "xfs", 0x01021994: "tmpfs",
    0x794C7630: "overlay", 0x6969: "nfs", 0x65735546: "fuse", 0x2FC12FC1: "zfs",
    0xF2F52010: "f2fs", 0x4D44: "vfat", 0x2011BAB0: "exfat", 0xFF534D42: "cifs",
    0xFE534D42: "smb3", 0x00C36400: "ceph", 0x01021997: "9p", 0x858458F6: "ramfs",
    0x5346544E: "ntfs", 0xCA451A4E: "bcachefs",
}


def fs_from_statfs(directory):
    """The filesystem type from statfs(2)'s magic number, or None."""
    import ctypes  # ~3 ms; only when /proc/self/mountinfo is unreadable
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on 64-bit Linux
    if libc.statfs(os.fsencode(directory), buf) != 0:
        return None
    magic = ctypes.c_long.from_buffer(buf).value & 0xFFFFFFFF  # f_type comes first
    return FS_MAGIC.get(magic)


# --- the machine -----------------------------------------------------------

def kernel_version(release=None):
    """'6.18.44-fc-v669' -> (6, 18, 44); at most three numbers; None if none."""
    if release is None:
        release = os.uname().release
    numbers = []
    for part in release.split(".")[:3]:
        digits = part[:len(part) - len(part.lstrip("0123456789"))]
        if not digits:
            break
        numbers.append(int(digits))
        if len(digits) < len(part):  # "44-fc-v669": the rest is not a version
            break
    return tuple(numbers) or None


def mem_available_mb():
    """MemAvailable from /proc/meminfo (Linux >= 3.14), in MiB."""
    kb = mem_available_kb()
    return None if kb is None else kb // 1024


def mem_available_kb():
    """MemAvailable from /proc/meminfo (Linux >= 3.14), in KiB."""
    text = _read("/proc/meminfo", limit=4096)  # it is the third line
    if not text:
        return None
    at = text.find("MemAvailable:")
    if at < 0:
        return None
    return int(text[at + 13:text.index("kB", at)])


def thp_mode(text=None):
    """The bracketed word of transparent_hugepage/enabled: always, madvise or never."""
    if text is None:
        text = _read("/sys/kernel/mm/transparent_hugepage/enabled")
    if not text or "[" not in text:
        return None
    return text[text.index("[") + 1:text.index("]")]


def jobserver(environ):
    """Whether make or cargo handed us a jobserver (its slots are the build's CPUs)."""
    for name in ("CARGO_MAKEFLAGS", "MAKEFLAGS"):
        flags = environ.get(name, "")
        if "--jobserver-auth=" in flags or "--jobserver-fds=" in flags:
            return True
    return False


def input_bytes(request):
    """Total size of the input files on the command line; missing ones are skipped."""
    total = 0
    for name in request.inputs:
        try:
            total += os.stat(os.path.join(request.cwd or "", name)).st_size
        except OSError:
            pass
    return total


# A small C link: at most this many input files of at most this many bytes together, and no library
# but the C library's own. There the fast linkers' fixed costs (mold's threads and fork, lld's
# libLLVM) outweigh what they save, and GNU ld is as fast alone and faster beside other links
# (benchmarks/bench_small.py, docs/policy.md 1.3). Not with libstdc++, nor a big shared library:
# GNU ld took 3x mold's time on a C++ hello world, 1.25x on a C one with -lcrypto.
SMALL_INPUT_BYTES = 512 << 10   # mold's crossover here: 1.07x GNU ld's time at 0.5 MB, 0.87x at 1 MB
SMALL_INPUT_FILES = 64
SMALL_LIBRARIES = frozenset(("c", "m", "pthread", "dl", "rt", "gcc", "gcc_s"))
# Arguments after which the linker reads archives the command line does not name.
_STATIC = ("-static-libstdc++", "-static-libgcc", "-static-libasan", "-static-libtsan", "-static-libubsan",
           "-static-liblsan", "-Bstatic", "-dn", "-non_shared")


def small_inputs(request):
    """Whether this is a small C link: at most SMALL_INPUT_FILES files on the command line, under
    SMALL_INPUT_BYTES together, and no -l library but SMALL_LIBRARIES. None (unknown) where the
    linker reads more than the command line shows: a C++ driver (libstdc++), another library, a
    static link (libc.a), -static-lib*, -Bstatic, a linker script (-T: its INPUT and GROUP); or
    when an input cannot be stat()ed.

    Decides a choice, so it comes before the link, and stops at its first answer: the inputs'
    count, their sizes (a big link is found big within its first few), then one pass over the
    arguments of what is left: a small link's few."""
    inputs = request.inputs
    if not inputs:
        return None
    if len(inputs) > SMALL_INPUT_FILES:
        return False
    if request.kind in ("static", "static-pie") or "++" in os.path.basename(request.driver or ""):
        return None
    cwd = request.cwd or ""
    total = 0
    for name in inputs:
        try:
            total += os.stat(os.path.join(cwd, name)).st_size
        except OSError:
            return None
        if total >= SMALL_INPUT_BYTES:
            return False
    it = iter(request.args)
    for a in it:
        if a[:2] == "-l":
            if (a[2:] or next(it, "")) not in SMALL_LIBRARIES:
                return None
        elif _unseen(a) or (a[:4] == "-Wl," and any(_unseen(p) for p in a[4:].split(","))) or \
                (a == "-Xlinker" and _unseen(next(it, ""))):
            return None
    return True


def _unseen(option) -> bool:
    """Whether the linker, after this option, reads files the command line does not name: static
    archives, or a linker script (its INPUT and GROUP)."""
    return option in _STATIC or option[:2] == "-T" or option.startswith("--script")


# --- cgroups: what this process may use ------------------------------------

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


# --- the existing output ---------------------------------------------------

def output_facts(path):
    """What is at the output path now. Only regular files are opened (opening a
    device can have effects); the open is non-blocking so a lease elsewhere
    cannot stall the link."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return NO_OUTPUT
    except OSError:
        return UNKNOWN_OUTPUT
    if st.st_mode & 0o170000 != 0o100000:
        return OutputFacts(True, False, st.st_size, st.st_nlink, st.st_ino, None, None)
    held = cached = None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        fd = None  # unreadable, or someone holds a lease on it: unknown
    if fd is not None:
        try:
            st = os.fstat(fd)  # the file we opened, should it have been replaced since
            held = _try(held_by_others, fd)
            cached = _try(cached_fraction, fd, st.st_size)
        finally:
            os.close(fd)
    return OutputFacts(True, True, st.st_size, st.st_nlink, st.st_ino, held, cached)


def held_by_others(fd):
    """Whether another process has this file open, mapped or running.

    A write lease (fcntl(2) F_SETLEASE F_WRLCK) is refused with EAGAIN while any
    other descriptor is open, including the one a MAP_PRIVATE mapping keeps
    after close and the one exec keeps. Taken and dropped at once. fd must be
    our only descriptor for the file. Leases need the file to be ours (or
    CAP_LEASE) and a filesystem that allows them: otherwise None.
    """
    import _signal  # built in: no import cost (the signal module costs ~4 ms)
    import errno
    import fcntl
    # While we hold the lease, another open breaks it and the kernel sends us
    # SIGIO, whose default action kills the process: ignore it meanwhile.
    # Only the main thread may do that; elsewhere the answer is unknown.
    previous = _signal.getsignal(_signal.SIGIO)
    if previous is None:
        return None  # set outside Python: we could not put it back
    try:
        _signal.signal(_signal.SIGIO, _signal.SIG_IGN)
    except ValueError:
        return None
    try:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
    except OSError as e:
        return True if e.errno in (errno.EAGAIN, errno.EBUSY) else None
    else:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
        return False
    finally:
        _signal.signal(_signal.SIGIO, previous)


# Below this size the page cache hardly matters to a link, and measuring it
# needs a foreign call (~0.5 ms to set up once, see libc.syscall), so small outputs
# report None: not measured.
CACHE_PROBE_MIN_BYTES = 8 << 20

_NO_CACHESTAT = []  # set once cachestat(2) said ENOSYS: go straight to mincore


def cached_fraction(fd, size):
    """Share of the file's pages in the page cache: cachestat(2), else mincore(2)."""
    if size < CACHE_PROBE_MIN_BYTES:
        return None
    page = os.sysconf("SC_PAGE_SIZE")
    pages = -(-size // page)
    resident = None if _NO_CACHESTAT else pages_cached_cachestat(fd)
    if resident is None:
        resident = pages_cached_mincore(fd, size)
    if resident is None:
        return None
    return min(1.0, resident / pages)


SYS_cachestat = 451  # Linux >= 6.5; the same number on every architecture


def pages_cached_cachestat(fd):
    """nr_cache of cachestat(2) over the whole file, or None where it is missing."""
    from linkwrap import libc
    syscall, c_long, c_uint64, get_errno = libc.syscall()
    rng = (c_uint64 * 2)(0, 0)  # struct cachestat_range {off, len}; len 0 = to the end
    out = (c_uint64 * 5)()      # nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted
    res = syscall(c_long(SYS_cachestat), c_long(fd), rng, out, c_long(0))  # arrays pass as pointers
    if res != 0:
        import errno
        if get_errno() == errno.ENOSYS:
            _NO_CACHESTAT.append(True)
        return None
    return out[0]


def pages_cached_mincore(fd, size):
    """Resident pages of a read-only shared mapping of the file (mincore(2)), or None."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long)
    libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p)
    PROT_READ, MAP_SHARED = 1, 1
    addr = libc.mmap(None, size, PROT_READ, MAP_SHARED, fd, 0)
    if addr is None or addr == ctypes.c_void_p(-1).value:
        return None
    try:
        pages = -(-size // os.sysconf("SC_PAGE_SIZE"))
        vec = ctypes.create_string_buffer(pages)
        if libc.mincore(ctypes.c_void_p(addr), size, vec) != 0:
            return None
        # Only the low bit of each byte is defined: "resident".
        return vec.raw.translate(bytes(i & 1 for i in range(256))).count(1)
    finally:
        libc.munmap(ctypes.c_void_p(addr), size)

