"""Another user's linkwrap.toml is never read (issue 10, item 2): it could name a linker plugin,
code that would run as the building user. The attacker is a real second user (tests/users.py)."""
import json
import os
import subprocess

import pytest

from conftest import script, tool
from linkwrap.request import args, config
from users import as_user, other_user, reachable_dir  # noqa: F401


@pytest.fixture
def evil_plugin(reachable_dir):
    """A shared object whose constructor leaves <dir>/pwned; -> (path, marker)."""
    d = os.path.join(reachable_dir, "evil")
    os.mkdir(d)
    os.chmod(d, 0o755)
    marker = os.path.join(reachable_dir, "pwned")
    src = os.path.join(d, "evil.c")
    with open(src, "w") as f:
        f.write('#include <stdio.h>\n__attribute__((constructor)) static void boom(void)'
                f'{{ FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}\n'
                'int onload(void *tv) { return 0; }\n')  # a plugin GNU ld accepts: the link goes on
    so = os.path.join(d, "evil.so")
    subprocess.run([tool("cc"), "-shared", "-fPIC", src, "-o", so], check=True)
    return so, marker


def _toml(plugin):
    return f'prefer = ["bfd"]\n[linkers.bfd]\nextra_flags = ["-plugin", "{plugin}"]\n'


def _link(hello_obj, build):
    return subprocess.run([script("linkwrap-cc"), str(hello_obj), "-o", "prog"], cwd=build,
                          capture_output=True, text=True)


@pytest.mark.parametrize("owner", ["other user", "this user"])
def test_a_linkwrap_toml_in_shared_tmp_runs_nothing_unless_it_is_ours(lw_home, hello_obj, other_user,
                                                                     reachable_dir, evil_plugin, owner):
    plugin, marker = evil_plugin
    shared = os.path.join(reachable_dir, "tmp")  # as /tmp: sticky, world-writable, root's
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    build = os.path.join(shared, "build")
    os.mkdir(build)
    toml = os.path.join(shared, "linkwrap.toml")
    if owner == "other user":
        as_user(other_user, f"cat > {toml} <<'END'\n{_toml(plugin)}END\n")
    else:
        with open(toml, "w") as f:  # the control: the same file of our own does load the plugin
            f.write(_toml(plugin))
    proc = _link(hello_obj, build)
    assert proc.returncode == 0
    assert subprocess.run([os.path.join(build, "prog")], capture_output=True, text=True).stdout == "hello\n"
    if owner == "this user":
        assert os.path.exists(marker)
        return
    assert not os.path.exists(marker)
    assert proc.stderr == f"linkwrap: warning: ignoring {toml}: owned by another user (uid {other_user[1]})\n"
    assert _link(hello_obj, build).stderr == ""  # said once
    shown = subprocess.run([script("linkwrap"), "config", "--json"], cwd=build, capture_output=True, text=True)
    report = json.loads(shown.stdout)
    assert report["files"]["project"] is None
    assert report["ignored"] == [{"path": toml, "why": f"owned by another user (uid {other_user[1]})"}]
    text = subprocess.run([script("linkwrap"), "config"], cwd=build, capture_output=True, text=True).stdout
    assert f"ignored:      {toml} (owned by another user" in text


def test_a_file_in_a_directory_anyone_can_write_is_ignored(tmp_path, lw_home):
    open_dir = tmp_path / "open"
    (open_dir / "build").mkdir(parents=True)
    os.chmod(open_dir, 0o777)  # no sticky bit: anyone could replace the file
    (open_dir / "linkwrap.toml").write_text('prefer = ["lld"]\n')
    settings = config.load(args.parse(["a.o", "-o", "a"], environ={}, cwd=str(open_dir / "build")), {})
    assert settings.prefer == config.DEFAULT_PREFER and settings.files == ()
    assert settings.ignored == ((str(open_dir / "linkwrap.toml"), "its directory is writable by other users"),)


def test_the_search_stops_at_a_directory_another_user_owns(tmp_path, lw_home, other_user):
    (tmp_path / "linkwrap.toml").write_text('prefer = ["lld"]\n')
    theirs = tmp_path / "theirs"
    (theirs / "build").mkdir(parents=True)
    os.chown(theirs, other_user[1], other_user[2])
    settings = config.load(args.parse(["a.o", "-o", "a"], environ={}, cwd=str(theirs / "build")), {})
    assert settings.files == () and settings.ignored == ()
    assert config.search_end(str(theirs / "build")) == str(theirs)
    # From a directory of ours below it, the file is ours and read.
    settings = config.load(args.parse(["a.o", "-o", "a"], environ={}, cwd=str(tmp_path)), {})
    assert settings.prefer == ("lld",)


def test_another_users_user_file_is_ignored(tmp_path, lw_home, other_user):
    user = lw_home / "config" / "linkwrap.toml"
    user.parent.mkdir()
    user.write_text('prefer = ["lld"]\n')
    os.chown(user, other_user[1], other_user[2])
    settings = config.load(args.parse(["a.o", "-o", "a"], environ={}, cwd=str(tmp_path)), {})
    assert settings.prefer == config.DEFAULT_PREFER
    assert settings.ignored == ((str(user), f"owned by another user (uid {other_user[1]})"),)
