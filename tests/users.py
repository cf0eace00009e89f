"""A second local user, for tests that play an attacker sharing the machine.

The tests run as root (CI does): `other_user` creates the account once per session
with useradd (kept: creating and deleting accounts in parallel runs would race),
and `as_user` runs a command as that user with setpriv, groups cleared, so what it
can do is what any other local user can. `reachable_dir` is a directory under /tmp
that the other user can enter (pytest's own tmp_path is root's, mode 0700).
"""
import os
import pwd
import shutil
import subprocess
import tempfile

import pytest

from conftest import tool

NAME = "lw-other"


@pytest.fixture(scope="session")
def other_user():
    """(name, uid, gid) of a second, unprivileged local user."""
    try:
        entry = pwd.getpwnam(NAME)
    except KeyError:
        proc = subprocess.run([tool("useradd"), "--no-create-home", "--user-group", "--shell", "/bin/sh", NAME],
                              capture_output=True, text=True)
        # Another test process may have created it in between.
        assert proc.returncode in (0, 9), proc.stderr
        entry = pwd.getpwnam(NAME)
    assert entry.pw_uid != os.geteuid()
    return entry.pw_name, entry.pw_uid, entry.pw_gid


def as_user(user, script, **kw):
    """Run the shell script as `user`; fails the test when it fails."""
    _, uid, gid = user
    proc = subprocess.run([tool("setpriv"), f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                           "/bin/sh", "-ec", script], capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], "HOME": "/"}, **kw)
    assert proc.returncode == 0, f"as {user[0]}: {script}: {proc.stderr}"
    return proc


@pytest.fixture
def reachable_dir():
    """A fresh directory under /tmp (mode 0755) that every user can enter."""
    d = tempfile.mkdtemp(prefix="lw-test-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)
