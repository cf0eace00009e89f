"""linkwrap/install/marker.py's write_atomic in a folder another user owns: root never follows what they put
at its temporary file's name (that would let them have root write, chown and chmod any file)."""
import os

import pytest

from linkwrap.errors import InstallError
from linkwrap.install import marker
from users import as_user, other_user, reachable_dir  # noqa: F401 (fixtures)


@pytest.fixture
def theirs(reachable_dir, other_user):
    """(their folder, their 0640 config in it, a root-only victim file elsewhere)."""
    _, uid, gid = other_user
    folder = os.path.join(reachable_dir, "proj")
    os.mkdir(folder, 0o755)
    os.chown(folder, uid, gid)
    config = os.path.join(folder, "config.toml")
    with open(config, "wb") as f:
        f.write(b"[build]\n")
    os.chown(config, uid, gid)
    os.chmod(config, 0o640)
    victim = os.path.join(reachable_dir, "victim")
    with open(victim, "wb") as f:
        f.write(b"root's\n")
    os.chmod(victim, 0o600)
    return folder, config, victim


def untouched(victim):
    st = os.lstat(victim)
    with open(victim, "rb") as f:
        return (f.read(), st.st_uid, st.st_gid, st.st_mode & 0o7777) == (b"root's\n", 0, 0, 0o600)


def test_a_symlink_at_the_pid_named_temporary_is_not_followed(theirs, other_user):
    folder, config, victim = theirs
    as_user(other_user, f"ln -s '{victim}' '{folder}/.config.toml.linkwrap-{os.getpid()}.tmp'")
    marker.write_atomic(config, b"[build]\njobs = 2\n")
    assert untouched(victim)
    st = os.lstat(config)
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (other_user[1], other_user[2], 0o640)
    with open(config, "rb") as f:
        assert f.read() == b"[build]\njobs = 2\n"


def test_a_symlink_at_the_very_name_tried_fails_the_write_cleanly(theirs, other_user, monkeypatch):
    """Even at the exact name (its random part fixed here to plant it): one clear error, nothing followed."""
    folder, config, victim = theirs
    monkeypatch.setattr(os, "urandom", lambda n: b"\0" * n)
    name = f".config.toml.linkwrap-{os.getpid()}-{'00' * 6}.tmp"
    as_user(other_user, f"ln -s '{victim}' '{folder}/{name}'")
    with pytest.raises(InstallError, match=r"config\.toml: cannot write: File exists"):
        marker.write_atomic(config, b"[build]\njobs = 2\n")
    assert untouched(victim) and os.path.islink(os.path.join(folder, name))
    with open(config, "rb") as f:
        assert f.read() == b"[build]\n"


def test_the_reinstall_hint_names_a_command_that_installs_linkwrap():
    # No package index carries linkwrap: the hint is its checkout's `pip install`, as the README's.
    import tomllib
    command = marker.install_command()
    assert "pip install linkwrap" not in command
    words = command.split()
    assert words[:2] == ["pip", "install"]
    if os.path.isabs(words[2]):
        with open(os.path.join(words[2], "pyproject.toml"), "rb") as f:
            assert tomllib.load(f)["project"]["name"] == "linkwrap"
    else:
        assert command == "pip install . in a checkout of linkwrap"
    readme = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "README.md")
    assert "pip install ." in open(readme).read()
    from linkwrap.install import cargo, commit
    notes, _ = commit.teammates("/p/.cargo/config.toml", commit.cargo_written(cargo.SCRIPT), cargo.SCRIPT, "tracked")
    assert "`pip install .` in a checkout of linkwrap" in notes[0] and "pip install linkwrap" not in notes[0]
