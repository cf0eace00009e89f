"""Output-file safety (issue 4): fresh and in-place writes, failed and interrupted links.

End-to-end tests run the real linkwrap-cc script with real mold, lld-16 and GNU ld,
forced with LINKWRAP_LINKER; the command line also asks for the same linker with
-fuse-ld=, so the retry "as asked" runs it too, and every test checks from the
output's .comment which linker really wrote it.
"""
import hashlib
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

import pids
from conftest import script, tool
from linkwrap import libc
from linkwrap.run import output, run
from linkwrap.choice import policy
from linkwrap.choice.policy import FRESH, IN_PLACE
from outputkit import (LINKERS, signal_group, OVERFLOW, STATIC, _group_alive, big_obj, debris, decision,  # noqa: F401
                       env_for, fuse, identity, lw_cc, no_stopped_links_left, objs, read, request,
                       stop_mid_write, the_linker, written_by)

# --- the plan, in-process --------------------------------------------------

def test_fresh_plan_writes_in_a_private_directory_and_renames(tmp_path):
    out = tmp_path / "a.out"
    out.write_bytes(b"old")
    os.link(out, tmp_path / "b.out")
    plan = output.prepare(request(["x.o", "-o", "a.out"], tmp_path), FRESH)
    assert plan.mode == FRESH and plan.final == str(out)
    assert os.path.dirname(plan.work_dir) == str(tmp_path / ".linkwrap-tmp")
    assert plan.link_path == os.path.join(plan.work_dir, "a.out")
    with open(plan.link_path, "wb") as f:
        f.write(b"new")
    assert output.commit(plan, True) == (True, 3, None)
    assert read(out) == b"new" and read(tmp_path / "b.out") == b"old"
    assert debris(tmp_path) == []


def test_in_the_servers_child_the_new_output_is_swapped_in_and_the_old_leaves_with_tidy(tmp_path,
                                                                                      monkeypatch):
    """Deferred removal (the server's child): one renameat2(RENAME_EXCHANGE) puts the new output
    under its name and the old one in the work directory, where tidy() removes it; the link's
    other files still go beside the output, the old output never does."""
    from linkwrap.facts import probe
    libc.syscall()  # the server sets the call up before its children fork
    monkeypatch.setattr(output, "_later", [])
    out = tmp_path / "a.out"
    out.write_bytes(b"old")
    os.link(out, tmp_path / "b.out")
    plan = output.prepare(request(["x.o", "-o", "a.out"], tmp_path), FRESH)
    for name, data in (("a.out", b"new"), ("a.out.map", b"map")):
        with open(os.path.join(plan.work_dir, name), "wb") as f:
            f.write(data)
    old_inode = os.stat(out).st_ino
    assert output.commit(plan, True) == (True, 3, None)
    assert read(out) == b"new" and read(tmp_path / "b.out") == b"old" and read(tmp_path / "a.out.map") == b"map"
    assert os.listdir(plan.work_dir) == ["a.out"] and os.stat(plan.link_path).st_ino == old_inode
    # A file the link writes after its commit (a forking linker's worker: mold's detached debug file)
    # goes beside the output too, when tidy() comes (after the worker's reap).
    with open(os.path.join(plan.work_dir, "a.out.dbg"), "wb") as f:
        f.write(b"late")
    output.tidy()
    assert read(tmp_path / "b.out") == b"old" and debris(tmp_path) == []
    assert read(tmp_path / "a.out.dbg") == b"late"
    # A first link (no old output): nothing to swap with, renamed.
    monkeypatch.setattr(output, "_later", [])
    plan = output.prepare(request(["x.o", "-o", "c.out"], tmp_path), FRESH)
    with open(plan.link_path, "wb") as f:
        f.write(b"first")
    assert output.commit(plan, True) == (True, 5, None)
    assert read(tmp_path / "c.out") == b"first" and os.listdir(plan.work_dir) == []
    output.tidy()
    assert debris(tmp_path) == []


def test_a_directory_made_at_the_output_name_during_a_server_link_is_kept_whole(tmp_path, monkeypatch):
    """The exchange would move a directory that came to the output's name since prepare() into the
    work directory, and tidy() would remove it: it is swapped back, and the link fails with one
    line as the rename always made it (EISDIR)."""
    from linkwrap.facts import probe
    libc.syscall()
    monkeypatch.setattr(output, "_later", [])
    out = tmp_path / "a.out"
    out.write_bytes(b"old")
    plan = output.prepare(request(["x.o", "-o", "a.out"], tmp_path), FRESH)
    with open(plan.link_path, "wb") as f:
        f.write(b"new")
    out.unlink()
    out.mkdir()
    (out / "precious.txt").write_bytes(b"keep me")
    ok, size, error = output.commit(plan, True)
    assert not ok and "cannot move the output into place" in error and "\n" == error[-1:] and error.count("\n") == 1
    output.tidy()
    assert read(out / "precious.txt") == b"keep me" and debris(tmp_path) == []


def test_without_the_exchange_the_server_link_renames_over_a_second_name(tmp_path, monkeypatch):
    """Where renameat2 is not known (another architecture): hold() gives the old output a second
    name while the linker runs, commit() renames, tidy() removes the second name."""
    monkeypatch.setattr(libc, "RENAMEAT2", None)
    monkeypatch.setattr(output, "_later", [])
    out = tmp_path / "a.out"
    out.write_bytes(b"old")
    os.link(out, tmp_path / "b.out")
    plan = output.prepare(request(["x.o", "-o", "a.out"], tmp_path), FRESH)
    assert output.hold(plan)
    assert os.path.exists(os.path.join(plan.work_dir, output.OLD))
    for name, data in (("a.out", b"new"), ("a.out.map", b"map")):
        with open(os.path.join(plan.work_dir, name), "wb") as f:
            f.write(data)
    assert output.commit(plan, True, held=True) == (True, 3, None)
    assert read(out) == b"new" and read(tmp_path / "b.out") == b"old" and read(tmp_path / "a.out.map") == b"map"
    output.tidy()
    assert read(tmp_path / "b.out") == b"old" and debris(tmp_path) == []


def test_failed_fresh_link_removes_the_name_keeps_other_links(tmp_path):
    out = tmp_path / "a.out"
    out.write_bytes(b"old")
    os.link(out, tmp_path / "b.out")
    plan = output.prepare(request(["x.o", "-o", "a.out"], tmp_path), FRESH)
    with open(plan.link_path, "wb") as f:
        f.write(b"half")
    assert output.commit(plan, False) == (False, None, None)
    assert not out.exists() and read(tmp_path / "b.out") == b"old"
    assert debris(tmp_path) == []


def test_in_place_only_for_a_single_link_and_put_back_if_the_linker_never_ran(tmp_path):
    out = tmp_path / "a.out"
    out.write_bytes(b"old")
    os.link(out, tmp_path / "b.out")
    # Two names: a last-moment check turns in-place into fresh.
    plan = output.prepare(request(["x.o", "-o", "a.out"], tmp_path), IN_PLACE)
    assert plan.mode == FRESH and not os.path.exists(plan.link_path)
    output.abort(plan, linker_ran=False)
    (tmp_path / "b.out").unlink()
    ino = out.stat().st_ino
    plan = output.prepare(request(["x.o", "-o", "a.out"], tmp_path), IN_PLACE)
    assert plan.mode == IN_PLACE and os.stat(plan.link_path).st_ino == ino and not out.exists()
    output.abort(plan, linker_ran=False)
    assert read(out) == b"old" and out.stat().st_ino == ino
    assert debris(tmp_path) == []


def test_interrupted_in_place_link_leaves_nothing_under_the_name(tmp_path):
    out = tmp_path / "a.out"
    out.write_bytes(b"old contents")
    plan = output.prepare(request(["x.o", "-o", "a.out"], tmp_path), IN_PLACE)
    with open(plan.link_path, "r+b") as f:
        f.write(b"new")  # the linker had begun overwriting it
    output.abort(plan, linker_ran=True)
    assert not out.exists() and debris(tmp_path) == []


def test_special_output_files_are_written_directly(tmp_path, lw_home, objs):
    # A private /dev/null twin: renaming over it would replace the device node.
    node = tmp_path / "null"
    os.mknod(node, 0o666 | 0o020000, os.makedev(1, 3))
    plan = output.prepare(request(["x.o", "-o", str(node)], tmp_path), FRESH)
    assert plan.work_dir is None and plan.link_path == str(node)
    for name in LINKERS:
        done = run.execute(request([*STATIC, str(objs[0]), "-o", str(node)], tmp_path), decision(name, FRESH))
        assert done.returncode == 0, done.stderr
        assert os.stat(node).st_rdev == os.makedev(1, 3) and (os.stat(node).st_mode & 0o170000) == 0o020000
    assert debris(tmp_path) == []


def test_no_private_directory_possible_falls_back_to_unlink_then_write(tmp_path, lw_home, objs):
    # A directory holding a file named .linkwrap-tmp: no private directory can be made.
    (tmp_path / ".linkwrap-tmp").write_text("in the way")
    out = tmp_path / "a.out"
    done = run.execute(request([*STATIC, str(objs[0]), "-o", "a.out"], tmp_path), decision("mold", FRESH))
    assert done.returncode == 0
    os.link(out, tmp_path / "b.out")
    old = read(out)
    done = run.execute(request([*STATIC, str(objs[1]), OVERFLOW, "-o", "a.out"], tmp_path),
                       decision("mold", FRESH))
    assert done.returncode == 1
    assert read(tmp_path / "b.out") == old  # unlinked first, so mold could not reuse the inode


def test_sweep_removes_directories_of_dead_owners_only(tmp_path):
    top = tmp_path / ".linkwrap-tmp"
    top.mkdir()
    mine = output.owner_tag()
    space = mine.rsplit("-", 1)[1]
    dead = subprocess.Popen(["true"])
    dead.wait()
    parent = os.getppid()
    parent_start = output._start_time(parent)
    names = {
        "dead": f"{dead.pid}-{output._start_time(os.getpid())}-{space}",
        "alive": f"{parent}-{parent_start}-{space}",
        "reused": f"{parent}-{parent_start + 1}-{space}",  # same pid, another process
        "foreign-new": f"{dead.pid}-1-0000dead",
        "foreign-old": f"{dead.pid}-2-0000dead",
        "junk-new": "not-an-owner",
    }
    for n in names.values():
        (top / n).mkdir()
        (top / n / "a.out").write_bytes(b"partial")
    day_ago = time.time() - output.FOREIGN_STALE_S - 60
    os.utime(top / names["foreign-old"], (day_ago, day_ago))
    assert output.sweep(str(top)) == 3
    assert sorted(os.listdir(top)) == sorted([names["alive"], names["foreign-new"], names["junk-new"]])


def test_sweep_costs_one_listdir_when_there_is_nothing(tmp_path):
    assert output.sweep(str(tmp_path / ".linkwrap-tmp")) == 0


def test_side_files_made_next_to_the_output_are_kept(tmp_path, lw_home, objs):
    done = run.execute(request([*STATIC, str(objs[0]), "-o", "a.out", "-Wl,--time-trace"], tmp_path),
                       decision("lld", FRESH))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "a.out.time-trace").stat().st_size > 0
    assert debris(tmp_path) == []


def test_messages_name_the_output_not_the_temporary(tmp_path, lw_home, objs):
    done = run.execute(request([*STATIC, str(objs[1]), OVERFLOW, "-o", "a.out"], tmp_path),
                       decision("bfd", FRESH))
    assert done.returncode == 1
    assert f"in {tmp_path}/a.out" in done.stderr.decode() and b".linkwrap-tmp" not in done.stderr


# --- the failed relink with a hard link -------------------------------------

def test_mold_alone_corrupts_the_other_hard_link(tmp_path, objs):
    """The bug itself: gcc -B<dir with ld -> mold>, no linkwrap."""
    shim = tmp_path / "mold-as-ld"
    shim.mkdir()
    os.symlink(tool("mold"), shim / "ld")
    cc = ["gcc", f"-B{shim}", *STATIC]
    subprocess.run([*cc, str(objs[0]), "-o", "a.out"], cwd=tmp_path, check=True)
    assert written_by(tmp_path / "a.out") == "mold"
    os.link(tmp_path / "a.out", tmp_path / "b.out")
    old = read(tmp_path / "b.out")
    failed = subprocess.run([*cc, str(objs[1]), OVERFLOW, "-o", "a.out"], cwd=tmp_path, capture_output=True)
    assert failed.returncode == 1 and b"out of range" in failed.stderr
    assert read(tmp_path / "b.out") != old  # half-written by the failed link


@pytest.mark.parametrize("linker", LINKERS)
def test_failed_relink_leaves_the_hard_link_byte_identical(tmp_path, lw_home, objs, linker):
    first = lw_cc([*STATIC, str(objs[0]), "-o", "a.out"], tmp_path, linker, tmp_path)
    assert first.returncode == 0, first.stderr
    assert written_by(tmp_path / "a.out") == linker
    os.link(tmp_path / "a.out", tmp_path / "b.out")
    old, old_id = read(tmp_path / "b.out"), identity(tmp_path / "b.out")
    failed = lw_cc([*STATIC, str(objs[1]), OVERFLOW, "-o", "a.out"], tmp_path, linker, tmp_path)
    assert failed.returncode == 1
    assert b"out of range" in failed.stderr or b"truncated" in failed.stderr
    assert read(tmp_path / "b.out") == old and identity(tmp_path / "b.out") == old_id
    assert not (tmp_path / "a.out").exists()  # as GNU ld and lld: no output after a failed link
    assert debris(tmp_path) == []
    # And a good relink afterwards gives a new a.out, b.out still the old one.
    again = lw_cc([*STATIC, str(objs[2]), "-o", "a.out"], tmp_path, linker, tmp_path)
    assert again.returncode == 0 and read(tmp_path / "a.out") != old and read(tmp_path / "b.out") == old


@pytest.mark.parametrize("linker", LINKERS)
def test_retry_as_asked_after_a_failed_first_attempt_gives_the_right_output(tmp_path, lw_home, objs, linker):
    """The first attempt fails on a flag only linkwrap added; the retry as asked must write the output."""
    assert lw_cc([*STATIC, str(objs[0]), "-o", "a.out"], tmp_path, linker, tmp_path).returncode == 0
    os.link(tmp_path / "a.out", tmp_path / "b.out")
    old = read(tmp_path / "b.out")
    d = decision(linker, FRESH)._replace(linker_flags=("--this-flag-does-not-exist",))
    req = request([*STATIC, str(objs[2]), "-Wl,--build-id=sha1", "-o", "a.out", fuse(linker)], tmp_path)
    first = run.execute(req, d, env_for(linker, tmp_path))
    assert first.returncode != 0 and not (tmp_path / "a.out").exists()
    retry = run.execute(req, policy.as_asked("retry"), env_for(linker, tmp_path))
    assert retry.returncode == 0, retry.stderr
    assert written_by(tmp_path / "a.out") == linker
    assert read(tmp_path / "a.out") != old and read(tmp_path / "b.out") == old
    assert subprocess.run(["readelf", "-n", str(tmp_path / "a.out")], capture_output=True,
                          text=True).stdout.count("Build ID") == 1
    assert debris(tmp_path) == []


@pytest.mark.parametrize("linker", LINKERS)
def test_retry_through_linkwrap_cc_writes_the_right_output(tmp_path, lw_home, objs, linker):
    """A flag from the project's linkwrap.toml breaks the first attempt; the retry as asked
    must leave the new binary under the name and the old one under the other hard link."""
    (tmp_path / "linkwrap.toml").write_text(f'[linkers.{linker}]\nextra_flags = ["--no-such-flag-4"]\n')
    assert lw_cc([*STATIC, str(objs[0]), "-o", "a.out"], tmp_path, linker, tmp_path).returncode == 0
    os.link(tmp_path / "a.out", tmp_path / "b.out")
    old = read(tmp_path / "b.out")
    done = lw_cc([*STATIC, str(objs[2]), "-o", "a.out"], tmp_path, linker, tmp_path)
    assert (done.returncode, done.stderr) == (0, b"")  # the failed attempt's messages are not shown
    assert written_by(tmp_path / "a.out") == linker
    direct = subprocess.run(["objdump", "-d", str(tmp_path / "a.out")], capture_output=True, text=True).stdout
    assert "nop" in direct  # c.o's code: the new binary
    assert read(tmp_path / "b.out") == old
    assert debris(tmp_path) == []


# --- running and mapped binaries --------------------------------------------

PROGRAM = r"""
#include <stdio.h>
#include <unistd.h>
static const char marker[] = "MARKER-" VERSION;
int main(int argc, char **argv) {
    for (;;) { printf("%s\n", marker); fflush(stdout); if (argc > 1) return 0; usleep(10000); }
}
"""

READER = r"""
import hashlib, mmap, os, sys
f = open(sys.argv[1], "rb")
m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
print(hashlib.sha256(m).hexdigest(), flush=True)
seen, rounds = [], 0
while not os.path.exists(sys.argv[2]):
    h = hashlib.sha256(m).hexdigest()
    rounds += 1
    if h not in seen:
        seen.append(h)
print(rounds, *seen, flush=True)
"""


@pytest.fixture
def versions(tmp_path):
    for v in ("old", "new"):
        (tmp_path / "p.c").write_text(PROGRAM)
        subprocess.run(["gcc", "-c", f'-DVERSION="{v}"', "p.c", "-o", f"{v}.o"], cwd=tmp_path, check=True)
    return str(tmp_path / "old.o"), str(tmp_path / "new.o")


def watch_reader(path, tmp_path, during):
    """Map `path` MAP_PRIVATE in another process, hash it in a loop while `during()` runs.

    -> (first hash, [distinct hashes seen after], rounds, exit status, during()'s result)
    """
    stop = tmp_path / "stop-reader"
    reader = subprocess.Popen([sys.executable, "-c", READER, str(path), str(stop)], stdout=subprocess.PIPE,
                              text=True)
    first = reader.stdout.readline().strip()
    result = during()
    time.sleep(0.1)
    stop.touch()
    last = reader.communicate(timeout=30)[0].split()
    stop.unlink()
    rounds, seen = (int(last[0]), last[1:]) if last else (0, [])
    return first, seen, rounds, reader.returncode, result


@pytest.mark.parametrize("linker", LINKERS)
def test_relink_while_the_old_binary_runs(tmp_path, lw_home, versions, linker):
    old_o, new_o = versions
    assert lw_cc([old_o, "-o", "prog"], tmp_path, linker, tmp_path).returncode == 0
    old = read(tmp_path / "prog")
    log = open(tmp_path / "running.log", "w")
    running = subprocess.Popen([str(tmp_path / "prog")], stdout=log)
    try:
        time.sleep(0.1)
        done = lw_cc([new_o, "-o", "prog"], tmp_path, linker, tmp_path)
        assert done.returncode == 0, done.stderr
        time.sleep(0.2)
        assert read(f"/proc/{running.pid}/exe") == old  # its file is the old inode, unchanged
        assert running.poll() is None
    finally:
        running.kill()
        running.wait()
        log.close()
    lines = set((tmp_path / "running.log").read_text().split())
    assert lines == {"MARKER-old"}
    assert written_by(tmp_path / "prog") == linker
    assert subprocess.run([str(tmp_path / "prog"), "once"], capture_output=True, text=True).stdout == "MARKER-new\n"


@pytest.mark.parametrize("linker", LINKERS)
def test_relink_while_another_process_maps_the_old_file(tmp_path, lw_home, versions, linker):
    old_o, new_o = versions
    assert lw_cc([old_o, "-o", "prog"], tmp_path, linker, tmp_path).returncode == 0
    old_hash = hashlib.sha256(read(tmp_path / "prog")).hexdigest()
    first, seen, rounds, rc, done = watch_reader(
        tmp_path / "prog", tmp_path, lambda: lw_cc([new_o, "-o", "prog"], tmp_path, linker, tmp_path))
    assert done.returncode == 0, done.stderr
    assert rc == 0 and rounds > 10 and first == old_hash and seen == [old_hash]
    assert written_by(tmp_path / "prog") == linker
    assert subprocess.run([str(tmp_path / "prog"), "once"], capture_output=True, text=True).stdout == "MARKER-new\n"


def test_mold_alone_changes_what_a_mapping_process_reads(tmp_path, versions):
    """The control for the test above: without linkwrap, mold writes through the mapped inode."""
    shim = tmp_path / "mold-as-ld"
    shim.mkdir()
    os.symlink(tool("mold"), shim / "ld")
    old_o, new_o = versions
    subprocess.run(["gcc", f"-B{shim}", old_o, "-o", "prog"], cwd=tmp_path, check=True)
    old_hash = hashlib.sha256(read(tmp_path / "prog")).hexdigest()
    first, seen, rounds, rc, _ = watch_reader(
        tmp_path / "prog", tmp_path,
        lambda: subprocess.run(["gcc", f"-B{shim}", new_o, "-o", "prog"], cwd=tmp_path, check=True))
    assert first == old_hash
    assert rc != 0 or seen != [old_hash]  # it saw other bytes (or died of SIGBUS)


# --- cargo -----------------------------------------------------------------

def cargo_env(linker, tmp_path):
    flags = f"-C linker-features=-lld -C link-arg={fuse(linker)}"
    return env_for(linker, tmp_path, RUSTFLAGS=flags, CARGO_TARGET_DIR=str(tmp_path / "target"),
                   CARGO_NET_OFFLINE="true", CARGO_TERM_COLOR="never")


@pytest.mark.parametrize("linker", LINKERS)
def test_cargo_build_edit_build_keeps_a_hand_made_hard_link(tmp_path, lw_home, linker):
    crate = tmp_path / "foo"
    (crate / "src").mkdir(parents=True)
    (crate / ".cargo").mkdir()
    (crate / "Cargo.toml").write_text('[package]\nname = "foo"\nversion = "0.1.0"\nedition = "2021"\n')
    (crate / ".cargo" / "config.toml").write_text(
        f'[target.x86_64-unknown-linux-gnu]\nlinker = "{script("linkwrap-cc")}"\n')
    env = cargo_env(linker, tmp_path)
    main = crate / "src" / "main.rs"
    main.write_text('fn main() { println!("old"); }\n')
    built = subprocess.run(["cargo", "build", "-q"], cwd=crate, env=env, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    target = tmp_path / "target" / "debug"
    (deps_bin,) = [p for p in (target / "deps").iterdir() if p.name.startswith("foo-") and os.access(p, os.X_OK)
                   and not p.name.endswith(".d")]
    assert written_by(deps_bin) == linker
    os.link(target / "foo", tmp_path / "saved-foo")
    old = read(tmp_path / "saved-foo")
    main.write_text('fn main() { println!("new"); }\n')
    built = subprocess.run(["cargo", "build", "-q"], cwd=crate, env=env, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    for binary in (target / "foo", deps_bin):
        assert subprocess.run([str(binary)], capture_output=True, text=True).stdout == "new\n"
    assert os.stat(target / "foo").st_ino == os.stat(deps_bin).st_ino  # cargo's uplift hard link
    assert read(tmp_path / "saved-foo") == old
    assert subprocess.run([str(tmp_path / "saved-foo")], capture_output=True, text=True).stdout == "old\n"
    assert debris(target / "deps") == [] and debris(target) == []


# --- disk full, killed linker, killed linkwrap-cc --------------------------

@pytest.fixture
def small_fs(tmp_path):
    """A 24 MiB ext4 filesystem on a loop device (a mount that fails fails the test)."""
    img, mnt = tmp_path / "fs.img", tmp_path / "mnt"
    mnt.mkdir()
    with open(img, "wb") as f:
        f.truncate(24 << 20)
    subprocess.run(["mkfs.ext4", "-q", str(img)], check=True)
    subprocess.run(["mount", "-o", "loop", str(img), str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


@pytest.mark.parametrize("linker", LINKERS)
def test_disk_full_mid_link(tmp_path, lw_home, small_fs, big_obj, linker):
    start = big_obj[1]
    assert lw_cc([*STATIC, start, "-o", "a.out"], small_fs, linker, tmp_path).returncode == 0
    os.link(small_fs / "a.out", small_fs / "b.out")
    old = read(small_fs / "b.out")
    free = free_bytes(small_fs)
    done = lw_cc([*STATIC, *big_obj, "-o", "a.out"], small_fs, linker, tmp_path)  # 256 MiB into ~20 MiB
    assert done.returncode != 0
    assert read(small_fs / "b.out") == old
    assert not (small_fs / "a.out").exists()
    assert debris(small_fs) == []
    assert free_bytes(small_fs) >= free - (64 << 10)  # no blocks held by a leftover
    # The filesystem is usable again: a small link succeeds.
    again = lw_cc([*STATIC, start, "-o", "a.out"], small_fs, linker, tmp_path)
    assert again.returncode == 0, again.stderr


def start_big_link(linker, d, tmp_path, big_obj):
    return subprocess.Popen([script("linkwrap-cc"), *STATIC, *big_obj, "-o", "a.out", fuse(linker)], cwd=d,
                            env=env_for(linker, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def old_output(d, linker, tmp_path, big_obj):
    assert lw_cc([*STATIC, big_obj[1], "-o", "a.out"], d, linker, tmp_path).returncode == 0
    os.link(d / "a.out", d / "b.out")
    return read(d / "b.out")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
@pytest.mark.parametrize("linker", LINKERS)
def test_linker_killed_mid_write(tmp_path, lw_home, big_obj, linker, sig):
    """Kill the linker while it writes; linkwrap-cc retries as asked, so kill that one too."""
    d = tmp_path / "out"
    d.mkdir()
    old = old_output(d, linker, tmp_path, big_obj)
    proc = start_big_link(linker, d, tmp_path, big_obj)
    kills = 0
    while True:
        caught = stop_mid_write(d, proc, allow_end=True)
        if caught is None:
            break
        # a link is tried at most three times (started directly, through the driver, as asked): more
        # kills than that would be a loop, not a retry
        assert kills < 6, "the link kept starting new attempts"
        _, group = caught
        linker = the_linker(group)
        if linker is not None:  # else this attempt was ending as it was caught: let it end, catch the next
            pids.send(linker, sig)  # by pidfd: never a process that got its pid since
            kills += 1
        deadline = time.time() + 60
        while _group_alive(group) and time.time() < deadline:  # let this attempt finish failing
            signal_group(group, signal.SIGCONT)
            time.sleep(0.002)
    _, err = proc.communicate(timeout=60)
    assert kills >= 1 and proc.returncode == 1, err
    assert read(d / "b.out") == old
    assert not (d / "a.out").exists()  # a failed link leaves no output, as GNU ld and lld
    assert debris(d) == []


@pytest.mark.parametrize("linker", LINKERS)
def test_linkwrap_killed_mid_link_then_the_next_link_cleans_up(tmp_path, lw_home, big_obj, linker):
    d = tmp_path / "out"
    d.mkdir()
    old = old_output(d, linker, tmp_path, big_obj)
    proc = start_big_link(linker, d, tmp_path, big_obj)
    partial, group = stop_mid_write(d, proc)
    proc.kill()
    proc.wait()
    signal_group(group, signal.SIGCONT)
    # The orphaned linker may finish on its own; wait for it, then look.
    deadline = time.time() + 120
    while time.time() < deadline and _group_alive(group):
        time.sleep(0.05)
    assert not _group_alive(group)
    assert read(d / "b.out") == old and read(d / "a.out") == old  # fresh: the old output stays
    assert os.path.isdir(partial.parent)  # the stray: its owner was killed
    done = lw_cc([*STATIC, big_obj[1], "-o", "other.out"], d, linker, tmp_path)
    assert done.returncode == 0
    assert debris(d) == []
    assert read(d / "a.out") == old


# --- in-place really happens -----------------------------------------------

def test_in_place_with_mold_reuses_the_inode(tmp_path, lw_home, objs):
    req = request([*STATIC, str(objs[0]), "-o", "a.out"], tmp_path)
    assert run.execute(req, decision("mold", IN_PLACE)).returncode == 0
    before = identity(tmp_path / "a.out")
    done = run.execute(req, decision("mold", IN_PLACE))
    assert done.returncode == 0 and done.write_mode == IN_PLACE
    assert identity(tmp_path / "a.out") == before
    # The control: fresh gives a new inode (same number possible, not the same birth).
    done = run.execute(req, decision("mold", FRESH))
    assert done.returncode == 0 and done.write_mode == FRESH and identity(tmp_path / "a.out") != before
    assert debris(tmp_path) == []


def test_in_place_through_linkwrap_cc_when_every_condition_holds(tmp_path, lw_home, big_obj):
    """Output exists, one link, not shared, nobody holds it, kernel 6.18, local ext4, cached
    (big enough for the probe to measure the page cache: it does not for outputs < 8 MiB)."""
    argv = [*STATIC, *big_obj, "-o", "a.out"]
    assert lw_cc(argv, tmp_path, "mold", tmp_path).returncode == 0
    before = identity(tmp_path / "a.out")
    done = lw_cc(argv, tmp_path, "mold", tmp_path)
    assert done.returncode == 0, done.stderr
    assert written_by(tmp_path / "a.out") == "mold"
    assert identity(tmp_path / "a.out") == before
    assert debris(tmp_path) == []


def test_concurrent_links_in_one_directory(tmp_path, lw_home, objs):
    procs = [subprocess.Popen([script("linkwrap-cc"), *STATIC, str(objs[0]), "-o", f"out{i}", fuse(ln)],
                              cwd=tmp_path, env=env_for(ln, tmp_path), stderr=subprocess.PIPE)
             for _ in range(3) for i, ln in enumerate(LINKERS * 3)]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read()
    assert sorted(os.listdir(tmp_path)) == sorted(["a.o", "bad.o", "c.o", "lw-home", "lld-bin"] +
                                                  [f"out{i}" for i in range(9)])


def test_a_big_lone_old_output_is_dropped_at_the_start_and_freed_aside(tmp_path):
    out = tmp_path / "a.out"
    with open(out, "wb") as f:
        f.truncate(output.FREE_ASYNC_MIN_BYTES)
    keep = os.open(out, os.O_RDONLY)  # to see the old inode go
    try:
        plan = output.prepare(request(["x.o", "-o", "a.out"], tmp_path), FRESH)
        assert plan.mode == FRESH and not out.exists()  # as GNU ld and lld: gone while linking
        assert os.fstat(keep).st_nlink == 0
    finally:
        os.close(keep)
    with open(plan.link_path, "wb") as f:
        f.write(b"new")
    assert output.commit(plan, True)[0] and read(out) == b"new" and debris(tmp_path) == []


@pytest.mark.parametrize("name", [".linkwrap-tmp", "linkwrap-args.rsp"])
def test_outputs_named_like_linkwraps_own_files_link_as_plain_cc(tmp_path, lw_home, hello_obj, name):
    # Through a response file too, as rustc passes one: linkwrap then writes one of its own.
    rsp = tmp_path / "args.rsp"
    rsp.write_text(f"{hello_obj}\n-o\n{name}\n")
    for argv in ([str(hello_obj), "-o", name], [f"@{rsp}"]):
        proc = subprocess.run([script("linkwrap-cc"), *argv], cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stderr == ""
        assert subprocess.run([str(tmp_path / name)], capture_output=True, text=True).stdout == "hello\n"
        os.unlink(tmp_path / name)


def _link_to(plan, data=b"new"):
    with open(plan.link_path, "wb") as f:
        f.write(data)
    return output.commit(plan, True)


def test_a_private_directorys_name_recreated_or_made_a_symlink_is_made_anew(tmp_path):
    """What stands under this process's private directory's name (an earlier one removed and made
    again by someone, one that others can write; a symlink) is never taken or followed."""
    out = tmp_path / "a.out"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    name = tmp_path / output.TMP_DIR / output.owner_tag()
    for change in ("recreated", "symlink"):
        os.makedirs(name.parent, mode=0o700, exist_ok=True)
        if change == "recreated":
            os.mkdir(name, 0o700)
            os.chmod(name, 0o777)
        else:
            os.symlink(elsewhere, name)
        output.defer()
        plan = output.prepare(request(["x.o", "-o", "a.out"], tmp_path), FRESH)
        st = os.lstat(plan.work_dir)
        assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700
        assert _link_to(plan, change.encode())[0] and read(out) == change.encode()
        output.tidy()
        assert debris(tmp_path) == [] and os.listdir(elsewhere) == []


def test_tidy_after_the_caller_removed_the_outputs_directory_makes_nothing_there(tmp_path, monkeypatch):
    """`make clean`, CMake's try_compile: the caller removes the output's directory as soon as it
    has the answer, while the server's child is still to tidy. tidy() must make nothing there, not
    even for an instant: a .linkwrap-tmp made between rm -rf's last unlink and its rmdir failed that
    rmdir ("Directory not empty")."""
    import shutil
    d = tmp_path / "build"
    d.mkdir()
    (d / "a.out").write_bytes(b"old")
    output.defer()  # as the server's child does before its link
    plan = output.prepare(request(["x.o", "-o", "build/a.out"], tmp_path), FRESH)
    assert _link_to(plan)[0]
    shutil.rmtree(d / output.TMP_DIR)  # the caller's rm -rf, up to its last rmdir
    os.unlink(d / "a.out")
    made = []
    real_mkdir = os.mkdir
    monkeypatch.setattr(os, "mkdir", lambda path, *a, **k: made.append(path) or real_mkdir(path, *a, **k))
    output.tidy()
    assert made == [] and os.listdir(d) == []
    d.rmdir()


@pytest.mark.parametrize("exchange", [True, False])
def test_a_state_file_is_replaced_whole_by_exchange_where_set_up_or_by_rename(tmp_path, monkeypatch, exchange):
    from linkwrap.run import output
    from linkwrap.facts import probe
    if exchange:
        libc.syscall()
    else:
        monkeypatch.setattr(libc, "can_exchange", lambda: False)
    target, tmp = tmp_path / "table", tmp_path / "table.1.tmp"
    target.write_bytes(b"old")
    tmp.write_bytes(b"new")
    new_inode = os.stat(tmp).st_ino
    with monkeypatch.context() as m:
        if exchange:  # the exchange itself, not a rename after it failed
            m.setattr(os, "replace", lambda *a: pytest.fail("renamed, not exchanged"))
        libc.replace_file(str(tmp), str(target))
    assert target.read_bytes() == b"new" and os.stat(target).st_ino == new_inode
    assert sorted(os.listdir(tmp_path)) == ["table"]   # the old contents are gone with the tmp name
    tmp.write_bytes(b"first")                           # no target yet: a rename
    (tmp_path / "table").unlink()
    libc.replace_file(str(tmp), str(target))
    assert target.read_bytes() == b"first" and sorted(os.listdir(tmp_path)) == ["table"]
