"""Real filesystems for tests: loop-mounted btrfs/xfs/ext4 images, tmpfs, overlay.

Needs root (CI runs as root). A mkfs or mount that fails raises AssertionError
with the tool's own message: the test FAILS, it is never skipped. Every mount
is undone when its `with` block ends, even after a failure; the loop device
goes with it (mount -o loop sets autoclear).

    with mounts.loop_mount(tmp_path, "btrfs", options="compress=zstd") as point:
        ...
"""
import contextlib
import os
import shutil
import subprocess

# Smallest images each mkfs accepts here (xfsprogs 6.1 refuses < 300 MiB).
# The images are sparse files, so they cost almost no disk.
IMAGE_MB = {"btrfs": 256, "xfs": 320, "ext4": 64}


def _run(argv):
    tool = shutil.which(argv[0])
    assert tool, f"{argv[0]} is not installed (btrfs-progs, xfsprogs, e2fsprogs, util-linux)"
    proc = subprocess.run([tool, *argv[1:]], capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}"
    return proc.stdout


def make_image(directory, fstype, size_mb=None):
    """A sparse image file holding a fresh filesystem of that type."""
    image = os.path.join(str(directory), f"{fstype}.img")
    with open(image, "wb") as f:
        f.truncate((size_mb or IMAGE_MB[fstype]) << 20)
    quiet = {"btrfs": ["-q"], "xfs": ["-q"], "ext4": ["-q", "-F"]}[fstype]
    _run([f"mkfs.{fstype}", *quiet, image])
    return image


@contextlib.contextmanager
def mounted(argv_tail, point):
    """mount <argv_tail> <point>, and always unmount afterwards."""
    os.makedirs(point, exist_ok=True)
    _run(["mount", *argv_tail, point])
    try:
        yield point
    finally:
        unmount(point)


def unmount(point):
    # A busy mount (a test's child still running) is detached lazily so the
    # next test never inherits it.
    proc = subprocess.run(["umount", point], capture_output=True, text=True)
    if proc.returncode != 0:
        _run(["umount", "-l", point])
    assert not is_mount_point(point), f"{point} is still mounted"


def is_mount_point(point):
    real = os.path.realpath(point)
    with open("/proc/self/mountinfo") as f:
        return any(_unescape(line.split(" ")[4]) == real for line in f)


def _unescape(field):
    return field.encode().decode("unicode_escape") if "\\" in field else field


@contextlib.contextmanager
def loop_mount(directory, fstype, options=None, size_mb=None):
    """A fresh fstype image under directory, loop-mounted at directory/<fstype>."""
    image = make_image(directory, fstype, size_mb)
    opts = "loop" + (f",{options}" if options else "")
    with mounted(["-t", fstype, "-o", opts, image], os.path.join(str(directory), fstype)) as point:
        yield point
    # autoclear released the loop device with the unmount
    assert not _run(["losetup", "-j", image]).strip(), f"loop device for {image} left behind"


@contextlib.contextmanager
def tmpfs_mount(directory, options="size=64m"):
    # A tmpfs is 1777 unless told (as /tmp): 0700, as a state directory must be (paths.open_trusted_dir).
    options = options if "mode=" in options else f"{options},mode=0700"
    with mounted(["-t", "tmpfs", "-o", options, "tmpfs"], os.path.join(str(directory), "tmpfs")) as point:
        yield point


@contextlib.contextmanager
def overlay_mount(directory):
    """An overlay whose upper and work directories live under directory."""
    base = str(directory)
    for d in ("lower", "upper", "work"):
        os.makedirs(os.path.join(base, d), exist_ok=True)
    opts = f"lowerdir={base}/lower,upperdir={base}/upper,workdir={base}/work"
    with mounted(["-t", "overlay", "-o", opts, "overlay"], os.path.join(base, "overlay")) as point:
        yield point


@contextlib.contextmanager
def filesystem(directory, fstype, options=None):
    """Any of: btrfs, xfs, ext4 (loop images), tmpfs, overlay."""
    if fstype == "tmpfs":
        cm = tmpfs_mount(directory)
    elif fstype == "overlay":
        cm = overlay_mount(directory)
    else:
        cm = loop_mount(directory, fstype, options)
    with cm as point:
        yield point
