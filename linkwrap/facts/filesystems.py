"""Where the output goes: the mount table (/proc/self/mountinfo) and the filesystem holding the
output's directory.

The mount whose device (major:minor) is the output directory's st_dev, else (btrfs gives each
subvolume its own anonymous st_dev) the longest mount point containing the directory's real path.
fs is the type as the mount table spells it ("ext4", "btrfs", "fuse.sshfs", ...); fs_options are the
mount's per-mount options followed by its superblock options ("compress=zstd:3").
"""
import os
from linkwrap.facts.procfs import _read, _read_fd


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
