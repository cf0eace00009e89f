"""linkwrap/install/warm.py: `linkwrap install` finds the linkers and starts the warm server, so the
first build's first link is served warm (issue 33), not the one that pays ~0.5 s to find out."""
import json
import os
import time

from cargokit import new_crate
from conftest import SCRIPTS, stop_servers
from install.buildtools import linkwrap, run


def server_line(cwd, env):
    """`linkwrap server status`'s line for this world's server, once it answers (None after 60 s)."""
    deadline = time.monotonic() + 60  # readiness, not timing: the server starts in the background
    while time.monotonic() < deadline:
        text = linkwrap("server", "status", cwd=cwd, env=env).stdout
        lines = [line for line in text.splitlines() if "(this world)" in line and "pid=" in line]
        if lines:
            return lines[0]
        time.sleep(0.1)
    return None


def fresh(tmp_path):
    """A new crate, a fresh LINKWRAP_HOME, the installed native client first on PATH."""
    home = tmp_path / "home"
    env = {**os.environ, "LINKWRAP_HOME": str(home), "PATH": f"{SCRIPTS}{os.pathsep}{os.environ['PATH']}",
           "CARGO_TARGET_DIR": str(tmp_path / "target")}
    for var in ("LINKWRAP_LINKER", "LINKWRAP_DISABLE", "RUSTFLAGS", "LINKWRAP_INSTALL_ENTRY", "LINKWRAP_SERVER"):
        env.pop(var, None)
    return new_crate(tmp_path, "warm"), home, env


def test_the_first_build_after_install_is_served_by_the_warm_server(tmp_path):
    root, home, env = fresh(tmp_path)
    try:
        done = linkwrap("install", cwd=root, env=env)
        assert done.returncode == 0, done.stderr
        # The linkers' versions are in the cache the first link reads.
        assert (home / "cache" / "linkers.marshal").is_file()
        line = server_line(root, env)
        assert line and "links=0" in line, line  # started by install, before any link
        run(["cargo", "build", "--quiet"], cwd=root, env=env)
        links = [link for b in json.loads(linkwrap("summary", "--json", "--all", cwd=root, env=env).stdout)["builds"]
                 for link in b["links"]]
        assert links and all(link["entry_point"] == "server" for link in links), \
            [(link["crate_name"], link["entry_point"]) for link in links]
    finally:
        stop_servers(home)


def test_only_this_linkwraps_native_client_gets_a_server(tmp_path, lw_home):
    """A server runs this linkwrap's code: it is started for its own clients, never for a Python
    script or another environment's client (that one's server is its own)."""
    import shutil
    from linkwrap.install import launcher, warm
    from linkwrap.server import lifetime
    ours = launcher.installed_client("linkwrap-cc")
    assert ours, "the editable install's native client (setup.py) is beside this interpreter"
    assert warm.server_install(ours) == lifetime.wheel_install_id(ours)
    assert warm.server_install("linkwrap-cc", {"PATH": os.path.dirname(ours)}) == lifetime.wheel_install_id(ours)
    other = tmp_path / "other-env" / "bin"
    other.mkdir(parents=True)
    shutil.copy2(ours, other / "linkwrap-cc")
    shutil.copy2(f"{ours}-python", other / "linkwrap-cc-python")
    assert warm.server_install(str(other / "linkwrap-cc")) is False
    assert warm.server_install(f"{ours}-python") is False
    state = launcher.fast_script("linkwrap-cc")  # the client compiled under the state dir
    assert warm.server_install(state) is (None if launcher.is_elf(state) else False)
    assert warm.server_install("linkwrap-cc", {"PATH": str(tmp_path / "nowhere")}) is False
