"""Helpers for the output-safety tests (tests/run/test_output.py, test_run.py): real
objects, the real linkwrap-cc with a forced linker, and catching a linker mid-write."""
import os
import signal
import subprocess
import time

import pytest

import pids
from conftest import comment_mark, machine_linkers, script, tool
from linkwrap.request import args
from linkwrap.facts import linkers
from linkwrap.choice.policy import Decision

LINKERS = ["mold", "lld", "bfd"]
STATIC = ["-nostdlib", "-static"]
OVERFLOW = "-Wl,--defsym=far=0x123456789"  # R_X86_64_32 out of range: fails after mold opened the output


def asm(tmp, name, text):
    path = tmp / name
    subprocess.run([tool("as"), "-o", str(path), "-"], input=text.encode(), check=True)
    return path


@pytest.fixture
def objs(tmp_path):
    """a.o links; bad.o links only until -Wl,--defsym=far=0x123456789 makes it overflow."""
    a = asm(tmp_path, "a.o", ".globl _start\n_start: movl $_start, %eax; jmp _start\n")
    b = asm(tmp_path, "bad.o", ".globl _start\n_start: movl $far, %eax\n")
    c = asm(tmp_path, "c.o", ".globl _start\n_start: nop; movl $_start, %eax; jmp _start\n")
    return a, b, c


@pytest.fixture(scope="session")
def big_obj(tmp_path_factory):
    """A 256 MiB .data object (objcopy -I binary of random bytes) and an entry point."""
    d = tmp_path_factory.mktemp("big")
    with open(d / "big.bin", "wb") as f:
        for _ in range(256):
            f.write(os.urandom(1 << 20))
    subprocess.run([tool("objcopy"), "-I", "binary", "-O", "elf64-x86-64", "-B", "i386:x86-64",
                    "big.bin", "big.o"], cwd=d, check=True)
    (d / "big.bin").unlink()
    start = asm(d, "start.o", ".globl _start\n_start: jmp _start\n")
    return [str(d / "big.o"), str(start)]


def env_for(linker, tmp_path, **extra):
    """linkwrap-cc's environment: a private LINKWRAP_HOME (set by lw_home) and the forced linker.

    Debian's lld-16 is installed only as ld.lld-16: a bin dir with ld.lld (the newest LLD linkwrap
    finds) lets `-fuse-ld=lld` find it.
    """
    bindir = tmp_path / "lld-bin"
    if not bindir.exists():
        bindir.mkdir()
        os.symlink(machine_linkers()["lld"].path, bindir / "ld.lld")
    return {**os.environ, "LINKWRAP_LINKER": linker, "PATH": f"{bindir}:{os.environ['PATH']}", **extra}


def fuse(linker):
    return f"-fuse-ld={linker}"


def lw_cc(argv, cwd, linker, tmp_path, **kw):
    return subprocess.run([script("linkwrap-cc"), *argv, fuse(linker)], cwd=cwd, capture_output=True,
                          env=env_for(linker, tmp_path), **kw)


def written_by(path) -> str:
    """Which linker wrote this file, from its .comment section."""
    text = subprocess.run(["readelf", "-p", ".comment", str(path)], capture_output=True, text=True).stdout
    if "mold" in text:
        return "mold"
    if "Linker: Wild" in text:
        return "wild"
    if comment_mark("lld") in text:
        return "lld"
    if "LLD" in text:
        return "other lld"
    return "bfd"


def identity(path):
    """Inode number and birth time: an inode number alone can be reused at once on ext4."""
    out = subprocess.run(["stat", "-c", "%i %w", str(path)], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def debris(d):
    """Leftovers of a link (ours, mold's .mold-XXXXXX, lld's <out>.tmpXXXXXXX): there must be none."""
    return [n for n in os.listdir(d) if n.startswith((".linkwrap", ".mold-")) or ".tmp" in n]


def decision(name, mode):
    found = linkers.discover()
    return Decision(found[name], (), (), mode, ("test",))


def request(argv, cwd):
    return args.parse(list(argv), "gcc", cwd=str(cwd))


def descendants(pid):
    """Pids below `pid` (any depth), from /proc."""
    children = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(p))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


_LEFT_RUNNING = []  # (linkwrap-cc Popen, the link's processes) of the current test


@pytest.fixture(autouse=True)
def no_stopped_links_left():
    """A failed assertion must not leave a SIGSTOPped linker group (and a waiting linkwrap-cc) behind."""
    yield
    while _LEFT_RUNNING:
        proc, group = _LEFT_RUNNING.pop()
        for sig in (signal.SIGKILL, signal.SIGCONT):
            signal_group(group, sig)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def stop_mid_write(d, proc, timeout=60, allow_end=False):
    """Wait until the linker is writing its output in the private directory, then SIGSTOP
    the link's processes (the driver, collect2, the linker, mold's forked child; they share
    linkwrap-cc's process group, so they are found as the driver's descendants) so that it
    is caught mid-write. -> (the partial file, the group: a snapshot of those processes)."""
    top = d / ".linkwrap-tmp"
    deadline = time.time() + timeout
    driver = None
    while time.time() < deadline:
        if proc.poll() is not None:
            assert allow_end, "the link ended before it could be interrupted"
            return None
        if driver is None:
            kids = children(proc.pid)
            driver = _identity(kids[0]) if kids else None
            continue
        if not _group_alive((driver,)):
            driver = None  # that attempt is over; the next one has a new driver
            continue
        for owner in (os.listdir(top) if top.exists() else []):
            try:
                names = os.listdir(top / owner)
            except OSError:
                continue
            for n in names:
                try:
                    if (top / owner / n).stat().st_size > 0:
                        group = _stop_tree(driver[0])
                        _LEFT_RUNNING.append((proc, group))
                        return top / owner / n, group
                except OSError:
                    pass
        time.sleep(0.0005)  # a poll, not a spin: on 2 busy cores a spin starves the link it waits for
    raise AssertionError("no output appeared")


_identity = pids.identity  # (pid, start time): a pid that is reused later is not mistaken for this process


def _stop_tree(root):
    """SIGSTOP root and every descendant, again until no new one appears. -> the group."""
    stopped, seen = [], set()
    while True:
        new = [p for p in [root, *descendants(root)] if p not in seen]
        if not new:
            return tuple(stopped)
        for p in new:
            seen.add(p)  # gone before it could be stopped: not looked for again
            ident = _identity(p)
            if pids.send(ident, signal.SIGSTOP):
                stopped.append(ident)


def signal_group(group, sig):
    """sig to those of the group still running (by pidfd: never to a process that got one's pid since)."""
    for ident in group:
        if _alive(ident):
            pids.send(ident, sig)


def the_linker(group):
    """The (pid, start) of the deepest process of a stopped group (stop_mid_write's) that is not the driver or
    collect2 and is still there; None when the attempt was ending as it was caught (its linker exited
    between writing and the stop): read from the snapshot, not from a new walk of /proc, which would
    race with that exit."""
    procs = [p for p in group if _alive(p) and comm(p[0]) not in ("gcc", "cc", "collect2", "")]
    return procs[-1] if procs else None


def _group_alive(group):
    """Any of the group's processes still running (a zombie has finished)."""
    return any(_alive(g) for g in group)


def _alive(ident):
    pid, start = ident
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z" and (start is None or int(fields[19]) == start)
