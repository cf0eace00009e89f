"""facts/filesystems.py against real mounts (loop-mounted btrfs, xfs, tmpfs, overlay, bind) and the
mount table's own format. Runs as root: loop mounts need it; a mount that fails fails the test."""
import os
import textwrap

import pytest

import mounts
from linkwrap.facts import probe
from linkwrap.facts import filesystems

from tests.facts import snap


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
