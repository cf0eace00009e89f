"""paths.open_trusted_dir (issue 31, item 1): every directory from / to linkwrap's is one nobody
else can change -- root's or this user's, writable by no one else, a sticky one only holding ours --
and from the state root down all are this user's own and none is a symlink. Another user plays the
attacker (tests/users.py)."""
import os
import stat

import pytest

from linkwrap import paths
from users import other_user, reachable_dir  # noqa: F401

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="plays another user: needs root to chown")


def _trusted(path, **kw) -> bool:
    fd = paths.open_trusted_dir(path, **kw)
    os.close(fd)
    return True


def _refusal(path, **kw) -> paths.UntrustedDir:
    with pytest.raises(paths.UntrustedDir) as e:
        os.close(paths.open_trusted_dir(path, **kw))
    return e.value


def test_a_directory_of_another_user_above_linkwrap_home_is_refused(reachable_dir, other_user, monkeypatch):
    shared = os.path.join(reachable_dir, "shared")
    home = os.path.join(shared, "lw")
    os.makedirs(home, mode=0o700)
    os.chown(shared, other_user[1], other_user[2])
    monkeypatch.setenv("LINKWRAP_HOME", home)
    e = _refusal(os.path.join(home, "bin"), create=True)
    assert str(e) == f"{shared} is owned by user {other_user[0]} and writable by them"
    assert not os.path.exists(os.path.join(home, "bin"))  # nothing made past the refusal
    assert paths.trusted_chain_problem(paths.state_dir()) == str(e)
    with pytest.raises(PermissionError):  # make_private_dir is its user: refused the same way
        paths.make_private_dir(os.path.join(home, "cache"))


def test_a_sticky_directory_holding_our_own_is_trusted(reachable_dir, monkeypatch):
    sticky = os.path.join(reachable_dir, "tmp")
    os.mkdir(sticky)
    os.chmod(sticky, 0o1777)
    monkeypatch.setenv("LINKWRAP_HOME", os.path.join(sticky, "lw"))
    old = os.umask(0)
    try:
        assert _trusted(os.path.join(sticky, "lw", "cache", "shim"), create=True)
    finally:
        os.umask(old)
    for d in ("lw", "lw/cache", "lw/cache/shim"):
        assert stat.S_IMODE(os.stat(os.path.join(sticky, d)).st_mode) == 0o700, d
    # Not sticky, the same directory lets anyone rename lw away.
    os.chmod(sticky, 0o777)
    assert str(_refusal(os.path.join(sticky, "lw"))) == f"{sticky} is writable by all users"


def test_a_sticky_directory_holding_another_users_directory_is_refused(reachable_dir, other_user, monkeypatch):
    sticky = os.path.join(reachable_dir, "tmp")
    os.mkdir(sticky)
    os.chmod(sticky, 0o1777)
    home = os.path.join(sticky, "lw")
    from users import as_user
    as_user(other_user, f"mkdir -m 0777 {home}")  # made first, by the other user, for us to use
    monkeypatch.setenv("LINKWRAP_HOME", home)
    e = _refusal(os.path.join(home, "bin"), create=True)
    assert str(e) == f"{home} is owned by user {other_user[0]} and writable by them"
    assert os.listdir(home) == []


def test_a_symlink_planted_at_bin_hash_is_refused(tmp_path, lw_home):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (lw_home / "bin").mkdir(mode=0o700)
    os.symlink(elsewhere, lw_home / "bin" / "0123abcd")
    e = _refusal(str(lw_home / "bin" / "0123abcd" / "py"), create=True)
    assert e.directory == str(lw_home / "bin" / "0123abcd")
    assert "symbolic link" in str(e)
    assert os.listdir(elsewhere) == []


def test_a_symlink_above_the_state_root_is_followed_and_its_target_checked(tmp_path, reachable_dir, other_user,
                                                                            monkeypatch):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    os.symlink(real, tmp_path / "link")  # in a directory only we can write: it stays where it points
    monkeypatch.setenv("LINKWRAP_HOME", str(tmp_path / "link" / "lw"))
    assert _trusted(str(tmp_path / "link" / "lw" / "bin"), create=True)
    assert os.path.isdir(real / "lw" / "bin")
    # Pointing into a directory another user owns: refused there, by its real name.
    theirs = os.path.join(reachable_dir, "theirs")
    os.mkdir(theirs)
    os.chown(theirs, other_user[1], other_user[2])
    os.unlink(tmp_path / "link")
    os.symlink(theirs, tmp_path / "link")
    assert str(_refusal(str(tmp_path / "link" / "lw"), create=True)).startswith(
        f"{theirs} is owned by user {other_user[0]}")
    # A symlink of theirs in a sticky directory: they may re-point it whenever they like.
    sticky = os.path.join(reachable_dir, "tmp")
    os.mkdir(sticky)
    os.chmod(sticky, 0o1777)
    from users import as_user
    as_user(other_user, f"ln -s {real} {sticky}/link")
    e = _refusal(os.path.join(sticky, "link", "lw"))
    assert str(e) == f"{sticky}/link is a symbolic link owned by user {other_user[0]}"


def test_group_write_is_refused_unless_the_group_is_this_users_own(tmp_path, other_user, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setenv("LINKWRAP_HOME", str(shared / "lw"))
    os.chown(shared, 0, other_user[2])
    os.chmod(shared, 0o770)
    e = _refusal(str(shared / "lw"), create=True)
    assert str(e) == f"{shared} is writable by group {other_user[0]}"
    assert not os.path.exists(shared / "lw")
    os.chown(shared, 0, os.getegid())  # umask 002 with a group per user: g+w is ours alone
    assert _trusted(str(shared / "lw"), create=True)
    # From the state root down every directory must be this user's own.
    os.chown(shared / "lw", other_user[1], other_user[2])
    assert "is owned by user" in str(_refusal(str(shared / "lw" / "cache"), create=True))


def test_a_missing_directory_or_a_file_in_the_way_is_no_trust_problem(tmp_path, monkeypatch):
    """Neither can be read or written below: no one else's to change. A file in the way is the
    records' problem (paths.state_problem, said once where it costs them), not the chain's."""
    monkeypatch.setenv("LINKWRAP_HOME", str(tmp_path / "lw"))
    assert paths.trusted_chain_problem(str(tmp_path / "lw" / "bin")) is None
    (tmp_path / "lw").write_text("")
    assert paths.trusted_chain_problem(str(tmp_path / "lw" / "bin")) is None
    assert paths.state_problem() == (f"LINKWRAP_HOME={tmp_path / 'lw'} is not a directory (linkwrap keeps "
                                     "its link records, cache and configuration there)")
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)  # world-writable, not sticky: a file there is still a problem above it
    (shared / "lw").write_text("")
    assert "writable" in paths.trusted_chain_problem(str(shared / "lw" / "bin"))
