"""Root running `linkwrap install` / `uninstall` in another user's project leaves their files theirs
(issue 31 item 3): owner, group and mode as they were after each step, the bytes as they were after the
round trip, nothing of root's left beside them, and the user still able to read (and edit) their config."""
import os

from conftest import path_without_linkwrap
from install.buildtools import linkwrap
from users import as_user, other_user, reachable_dir  # noqa: F401 (fixtures)

USERS_CONFIG = b'[build]\njobs = 2\n\n[alias]\nb = "build"\n'


def owner_and_mode(path):
    st = os.lstat(path)
    return st.st_uid, st.st_gid, st.st_mode & 0o7777


def listing(root):
    """{relative path: (uid, gid, mode)} of everything under root."""
    found = {}
    for here, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(here, name)
            found[os.path.relpath(path, root)] = owner_and_mode(path)
    return found


def test_install_then_uninstall_keeps_another_users_0640_config_theirs(reachable_dir, other_user, lw_home,
                                                                      monkeypatch):
    _, uid, gid = other_user
    assert os.geteuid() == 0, "tests run as root"
    monkeypatch.setenv("CARGO_HOME", os.path.join(reachable_dir, "cargo-home"))
    monkeypatch.setenv("PATH", path_without_linkwrap())
    root = os.path.join(reachable_dir, "proj")
    os.makedirs(os.path.join(root, "src"))
    os.mkdir(os.path.join(root, ".cargo"))
    with open(os.path.join(root, "Cargo.toml"), "w") as f:
        f.write('[package]\nname = "proj"\nversion = "0.1.0"\n')
    with open(os.path.join(root, "src", "main.rs"), "w") as f:
        f.write("fn main() {}\n")
    config = os.path.join(root, ".cargo", "config.toml")
    with open(config, "wb") as f:
        f.write(USERS_CONFIG)
    for here, dirs, files in os.walk(root):
        for name in [".", *dirs, *files]:
            os.chown(os.path.join(here, name), uid, gid)
    os.chmod(root, 0o750)
    os.chmod(os.path.dirname(config), 0o750)
    os.chmod(config, 0o640)
    before = listing(root)
    assert before[".cargo/config.toml"] == (uid, gid, 0o640)

    done = linkwrap("install", cwd=root)
    assert done.returncode == 0, done.stderr
    assert b"linkwrap-cc" in open(config, "rb").read() and USERS_CONFIG.split(b"\n")[0] in open(config, "rb").read()
    assert listing(root) == before  # the same files, each still theirs with its mode: no root-owned leftover
    assert owner_and_mode(root) == (uid, gid, 0o750)
    as_user(other_user, f"grep -q linkwrap-cc '{config}' && test -w '{config}'")

    gone = linkwrap("uninstall", cwd=root)
    assert gone.returncode == 0, gone.stderr
    assert listing(root) == before and owner_and_mode(root) == (uid, gid, 0o750)
    with open(config, "rb") as f:
        assert f.read() == USERS_CONFIG


def test_a_config_install_creates_in_another_users_project_is_theirs_to_edit(reachable_dir, other_user, lw_home,
                                                                            monkeypatch):
    """No .cargo/ yet: what root's install creates there (.cargo/ and config.toml) belongs to the project's
    owner, who can then edit it; uninstall takes out only linkwrap's block of the edited file, which stays
    theirs, and removes all it created when the file is as install left it."""
    _, uid, gid = other_user
    monkeypatch.setenv("CARGO_HOME", os.path.join(reachable_dir, "cargo-home"))
    monkeypatch.setenv("PATH", path_without_linkwrap())
    root = os.path.join(reachable_dir, "proj")
    os.makedirs(os.path.join(root, "src"))
    with open(os.path.join(root, "Cargo.toml"), "w") as f:
        f.write('[package]\nname = "proj"\nversion = "0.1.0"\n')
    for here, dirs, files in os.walk(root):
        for entry in [".", *dirs, *files]:
            os.chown(os.path.join(here, entry), uid, gid)
    before = listing(root)
    cargo_dir = os.path.join(root, ".cargo")
    config = os.path.join(cargo_dir, "config.toml")

    for edit in (False, True):
        done = linkwrap("install", cwd=root)
        assert done.returncode == 0, done.stderr
        assert owner_and_mode(cargo_dir)[:2] == owner_and_mode(config)[:2] == (uid, gid)
        assert not owner_and_mode(config)[2] & 0o022  # open()'s mode, less the umask: nobody else writes it
        as_user(other_user, f"grep -q linkwrap-cc '{config}' && test -w '{config}' && test -w '{cargo_dir}'")
        if edit:
            as_user(other_user, f"printf '[alias]\\nb = \"build\"\\n' >> '{config}'")
        gone = linkwrap("uninstall", cwd=root)
        assert gone.returncode == 0, gone.stderr
        if not edit:
            assert listing(root) == before  # .cargo/ and the file were linkwrap's: both gone
    with open(config, "rb") as f:
        assert f.read().lstrip(b"\n") == b'[alias]\nb = "build"\n'
    assert owner_and_mode(config)[:2] == owner_and_mode(cargo_dir)[:2] == (uid, gid)
