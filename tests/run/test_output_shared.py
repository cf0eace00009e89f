"""Output directories other users can write (issue 10, item 1): nothing planted there is
followed, removed or written through, and the link still succeeds.

The attacker is a real second user (tests/users.py); the link is the real linkwrap-cc.
"""
import os
import stat
import subprocess

from conftest import script
from linkwrap.run import output
from linkwrap.choice.policy import FRESH
from outputkit import request
from users import as_user, other_user, reachable_dir  # noqa: F401


def _victim(root):
    """A directory tree of the linking user's that nothing may touch."""
    victim = os.path.join(root, "victim")
    os.makedirs(os.path.join(victim, "sub"))
    for rel in ("a.txt", "sub/b.txt"):
        with open(os.path.join(victim, rel), "w") as f:
            f.write("precious\n")
    return victim


def _intact(victim):
    return sorted(os.listdir(victim)) == ["a.txt", "sub"] and os.listdir(os.path.join(victim, "sub")) == ["b.txt"]


def _link(hello_obj, out, cwd):
    return subprocess.run([script("linkwrap-cc"), str(hello_obj), "-o", out], cwd=cwd,
                          capture_output=True, text=True)


def _dead_owner_name():
    """A name the sweep takes for a dead link's directory in this pid space (anyone can compute it)."""
    space = output.owner_tag().rsplit("-", 1)[1]
    return f"999999-1-{space}"


def test_a_symlink_planted_in_a_shared_directory_is_never_followed(tmp_path, lw_home, hello_obj, other_user,
                                                                   reachable_dir):
    victim = _victim(reachable_dir)
    shared = os.path.join(reachable_dir, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    as_user(other_user, f"mkdir -m 777 {shared}/.linkwrap-tmp && ln -s {victim} {shared}/.linkwrap-tmp/"
                        f"{_dead_owner_name()}")
    proc = _link(hello_obj, os.path.join(shared, "prog"), tmp_path)
    assert proc.returncode == 0 and proc.stdout == proc.stderr == ""
    assert _intact(victim)
    assert subprocess.run([os.path.join(shared, "prog")], capture_output=True, text=True).stdout == "hello\n"
    # The attacker's directory and link are left as they were: not ours to remove.
    assert os.path.islink(os.path.join(shared, ".linkwrap-tmp", _dead_owner_name()))


def test_a_shared_directory_gets_no_private_directory_of_ours(tmp_path, lw_home, hello_obj, reachable_dir):
    shared = os.path.join(reachable_dir, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    assert _link(hello_obj, os.path.join(shared, "prog"), tmp_path).returncode == 0
    # Linked as the linker would unwrapped: nothing of ours for another user to swap mid-link.
    assert sorted(os.listdir(shared)) == ["prog"]


def test_linkwrap_tmp_as_a_symlink_is_not_used_or_swept(tmp_path, lw_home, hello_obj):
    victim = _victim(str(tmp_path))
    stale = os.path.join(victim, _dead_owner_name())
    os.mkdir(stale)
    os.utime(stale, (0, 0))  # older than a day, dead owner: what a sweep would remove
    build = tmp_path / "build"
    build.mkdir()
    os.symlink(victim, build / ".linkwrap-tmp")
    proc = _link(hello_obj, str(build / "prog"), build)
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(victim)) == sorted(["a.txt", "sub", _dead_owner_name()])
    assert os.path.islink(build / ".linkwrap-tmp")


def test_another_users_linkwrap_tmp_is_left_alone(tmp_path, lw_home, hello_obj, other_user):
    build = tmp_path / "build"
    build.mkdir()
    top = build / ".linkwrap-tmp"
    top.mkdir()
    dead = top / _dead_owner_name()
    dead.mkdir()
    (dead / "keep").write_text("theirs")
    _, uid, gid = other_user
    for p in (dead / "keep", dead, top):
        os.chown(p, uid, gid)
    proc = _link(hello_obj, str(build / "prog"), build)
    assert proc.returncode == 0, proc.stderr
    assert (dead / "keep").read_text() == "theirs"
    assert subprocess.run([str(build / "prog")], capture_output=True, text=True).stdout == "hello\n"


def test_removing_a_dead_links_directory_never_follows_a_symlink_inside(tmp_path):
    victim = _victim(str(tmp_path))
    top = tmp_path / "out" / ".linkwrap-tmp"
    dead = top / _dead_owner_name()
    dead.mkdir(parents=True)
    os.symlink(victim, dead / "dir-link")
    os.symlink(os.path.join(victim, "a.txt"), dead / "file-link")
    assert output.sweep(str(top)) == 1
    assert _intact(victim) and not top.exists()


def test_the_private_directory_is_0700_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        plan = output.prepare(request(["x.o", "-o", "a.out"], tmp_path), FRESH)
    finally:
        os.umask(old)
    try:
        for d in (plan.work_dir, os.path.dirname(plan.work_dir)):
            assert stat.S_IMODE(os.lstat(d).st_mode) == 0o700
    finally:
        output.abort(plan, linker_ran=False)
