"""The wheel, installed into a fresh virtual environment: templates ship, commands run."""
import os
import subprocess
import sys

import pytest

from conftest import path_without_linkwrap, stop_servers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """The sdist and the wheel, built from this tree."""
    tmp = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp), ROOT],
                   check=True, capture_output=True)
    return next(tmp.glob("linkwrap-*.tar.gz")), next(tmp.glob("linkwrap-*.whl"))


@pytest.fixture(scope="module")
def venv(tmp_path_factory, dist):
    tmp = tmp_path_factory.mktemp("pkg")
    wheel = dist[1]
    env_dir = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True)
    done = subprocess.run([str(env_dir / "bin" / "pip"), "install", "-q", str(wheel)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return env_dir


def test_every_template_ships_in_the_wheel(venv, tmp_path):
    names = sorted(os.listdir(os.path.join(ROOT, "templates")))
    assert names, "templates/ is empty"
    code = ("import sys; from linkwrap.resources import template_text; "
            "[sys.stdout.write(n + '\\t' + str(len(template_text(n))) + '\\n') for n in sys.argv[1:]]")
    done = subprocess.run([str(venv / "bin" / "python"), "-c", code, *names], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    shipped = dict(line.split("\t") for line in done.stdout.splitlines())
    for n in names:
        assert int(shipped[n]) == os.path.getsize(os.path.join(ROOT, "templates", n))
    # ...and from the installed package, not from this source tree.
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import linkwrap; print(linkwrap.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True).stdout
    assert where.startswith(str(venv))


def test_console_scripts_run_from_the_wheel(venv, tmp_path):
    for name in ("linkwrap", "linkwrap-cc", "linkwrap-launch", "linkwrap-ld"):
        assert os.access(venv / "bin" / name, os.X_OK), name
    done = subprocess.run([str(venv / "bin" / "linkwrap"), "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0 and "install" in done.stdout and "summary" in done.stdout


def _project(tmp_path):
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "Cargo.toml").write_text('[package]\nname = "proj"\nversion = "0.1.0"\nedition = "2021"\n')
    (project / "src" / "main.rs").write_text('fn main() { println!("ok"); }\n')
    return project


def test_install_from_the_wheel_uses_the_shipped_template(venv, tmp_path):
    """The state directory's entry point (LINKWRAP_INSTALL_ENTRY=state: what an install whose command
    is the stand-in gets) is compiled from the client.c and the template the wheel ships."""
    project = _project(tmp_path)
    # No linkwrap-cc on PATH: install writes the absolute path of its fast entry point (install/launcher.py).
    env = {**os.environ, "LINKWRAP_HOME": str(tmp_path / "home"), "PATH": path_without_linkwrap(),
           "LINKWRAP_INSTALL_ENTRY": "state"}
    done = subprocess.run([str(venv / "bin" / "linkwrap"), "install"], cwd=project, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    config = (project / ".cargo" / "config.toml").read_text()
    entries = list((tmp_path / "home" / "bin").glob("*/linkwrap-cc"))
    assert len(entries) == 1 and f'linker = "{entries[0]}"' in config
    # the native client, compiled from the client.c the wheel ships, and the Python script it falls back to
    assert entries[0].read_bytes()[:4] == b"\x7fELF"
    assert f"py={venv / 'bin' / 'python'}" in (entries[0].parent / "py" / "linkwrap-cc").read_text()
    built = subprocess.run(["cargo", "run", "-q"], cwd=project, capture_output=True, text=True, env=env)
    assert built.returncode == 0 and built.stdout == "ok\n", built.stderr


def _links(linkwrap, project, env) -> int:
    import json
    done = subprocess.run([str(linkwrap), "summary", "--json", "--all"], cwd=project, capture_output=True,
                          text=True, env=env)
    assert done.returncode == 0, done.stderr
    return sum(len(b["links"]) for b in json.loads(done.stdout)["builds"])


def _built_through_linkwrap(project, linkwrap, env, prints, links, config):
    """`cargo run` prints what it should, linkwrap has recorded `links` links in all, and the Cargo
    config is the bytes install wrote."""
    built = subprocess.run(["cargo", "run", "-q"], cwd=project, capture_output=True, text=True, env=env)
    assert built.returncode == 0 and built.stdout == prints, built.stderr
    assert _links(linkwrap, project, env) == links
    assert (project / ".cargo" / "config.toml").read_bytes() == config


def test_the_written_path_survives_a_reinstall_and_a_venv_rebuilt_in_place(dist, tmp_path):
    """Issue 34: the absolute path install writes is the wheel's own client in the environment's bin/,
    not a directory named by a hash of this install: `pip install --force-reinstall` and `python -m
    venv --clear` with linkwrap installed again keep it, and builds go on linking through linkwrap
    with config.toml untouched. Nothing is written to the state directory's bin/."""
    env_dir = tmp_path / "venv"
    pip = [str(env_dir / "bin" / "pip"), "install", "-q", "--no-deps", "--no-index"]
    # --system-site-packages: linkwrap's dependencies from this Python, as the index is not needed
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)], check=True)
    assert subprocess.run([*pip, str(dist[1])], capture_output=True).returncode == 0
    project = _project(tmp_path)
    home = tmp_path / "home"
    env = {**os.environ, "LINKWRAP_HOME": str(home), "PATH": path_without_linkwrap()}
    env.pop("LINKWRAP_INSTALL_ENTRY", None)
    linkwrap = env_dir / "bin" / "linkwrap"
    done = subprocess.run([str(linkwrap), "install"], cwd=project, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    client = env_dir / "bin" / "linkwrap-cc"
    config = (project / ".cargo" / "config.toml").read_bytes()
    assert f'linker = "{client}"'.encode() in config
    assert "while linkwrap stays installed there (an upgrade or reinstall keeps the path)" in done.stdout
    assert not (home / "bin").exists()
    try:
        for step, again in enumerate(([*pip, "--force-reinstall", str(dist[1])], None)):
            (project / "src" / "main.rs").write_text(f'fn main() {{ println!("ok {step}"); }}\n')
            built = subprocess.run(["cargo", "run", "-q"], cwd=project, capture_output=True, text=True, env=env)
            assert built.returncode == 0 and built.stdout == f"ok {step}\n", built.stderr
            assert _links(linkwrap, project, env) == step + 1
            stop_servers(home)  # the reinstall replaces the code a warm server runs
            if again:
                assert subprocess.run(again, capture_output=True).returncode == 0
        # The environment rebuilt in place, linkwrap installed again: the same path, still linkwrap's.
        subprocess.run([sys.executable, "-m", "venv", "--clear", "--system-site-packages", str(env_dir)], check=True)
        assert subprocess.run([*pip, str(dist[1])], capture_output=True).returncode == 0
        (project / "src" / "main.rs").write_text('fn main() { println!("ok again"); }\n')
        _built_through_linkwrap(project, linkwrap, env, "ok again\n", links=3, config=config)
    finally:
        stop_servers(home)


def test_the_wheel_and_the_sdist_hold_the_license_and_the_metadata(dist):
    import email
    import tarfile
    import zipfile
    sdist, wheel = dist
    license_text = open(os.path.join(ROOT, "LICENSE"), encoding="utf-8").read()
    assert "MIT License" in license_text
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        shipped = [n for n in names if ".dist-info/" in n and n.rsplit("/", 1)[-1].startswith("LICENSE")]
        assert shipped and z.read(shipped[0]).decode() == license_text
        meta = email.message_from_bytes(z.read(info))
        # Every document the messages and the README cite is in the wheel.
        docs = sorted(os.listdir(os.path.join(ROOT, "docs")))
        assert docs and all(f"linkwrap/docs/{d}" in names for d in docs)
    assert meta["License"] == "MIT" and meta["License-File"] == "LICENSE"
    classifiers = meta.get_all("Classifier")
    assert "License :: OSI Approved :: MIT License" in classifiers
    assert any(c.startswith("Operating System :: POSIX :: Linux") for c in classifiers)
    # No [project.urls] until linkwrap has a public address: an invented one would send people astray.
    # The documents ship in the wheel instead (above), and messages cite the installed copies.
    assert meta.get_all("Project-URL") is None
    with tarfile.open(sdist) as t:
        top = t.getnames()[0].split("/")[0]
        assert t.extractfile(f"{top}/LICENSE").read().decode() == license_text


def test_every_module_of_the_tree_ships_in_the_wheel(dist):
    """The package list is written by hand (templates/ and docs/ are mapped in): a new subpackage
    left out of it would be missing only from real installs, never from the editable one tests use."""
    import zipfile
    tree = sorted(os.path.relpath(os.path.join(d, f), ROOT)
                  for d, dirs, files in os.walk(os.path.join(ROOT, "linkwrap"))
                  for f in files if f.endswith((".py", ".c")) and "__pycache__" not in d)
    assert "linkwrap/ld/synthetic/__init__.py" in tree
    with zipfile.ZipFile(dist[1]) as z:
        missing = set(tree) - set(z.namelist())
    assert not missing, f"not in the wheel (pyproject.toml's packages): {sorted(missing)}"


def test_messages_cite_the_installed_docs(venv, tmp_path):
    code = "from linkwrap.resources import doc_path; print(doc_path('install.md'))"
    where = subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert where.startswith(str(venv)) and os.path.isfile(where)
    with open(where, encoding="utf-8") as f:
        assert f.read() == open(os.path.join(ROOT, "docs", "install.md"), encoding="utf-8").read()


def test_with_the_wheels_bin_on_path_install_writes_the_bare_name(venv, tmp_path):
    """The wheel's linkwrap-cc (the native client) on PATH and a Cargo config tracked by git:
    `linker = "linkwrap-cc"` links through it, with no advice to reach for another entry point."""
    import shutil
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / ".cargo").mkdir()
    (project / ".cargo" / "config.toml").write_text('[alias]\nb = "build"\n')
    (project / "Cargo.toml").write_text('[package]\nname = "proj"\nversion = "0.1.0"\nedition = "2021"\n')
    (project / "src" / "main.rs").write_text('fn main() { println!("ok"); }\n')
    git = ["git", "-c", "user.name=Test", "-c", "user.email=test@example.invalid"]
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run([*git, *argv], cwd=project, check=True)
    home = tmp_path / "home"
    env = {**os.environ, "LINKWRAP_HOME": str(home), "PATH": f"{venv / 'bin'}{os.pathsep}{path_without_linkwrap()}"}
    done = subprocess.run([str(venv / "bin" / "linkwrap"), "install"], cwd=project, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert 'linker = "linkwrap-cc"' in (project / ".cargo" / "config.toml").read_text()
    assert "export PATH=" not in done.stdout and "Python script" not in done.stdout
    shutil.rmtree(home / "bin", ignore_errors=True)  # nothing of this machine's is needed
    try:
        built = subprocess.run(["cargo", "run", "-q"], cwd=project, capture_output=True, text=True, env=env)
        assert built.returncode == 0 and built.stdout == "ok\n", built.stderr
        assert (home / "links.spool").exists() or (home / "links.db").exists()  # the link went through linkwrap
        status = subprocess.run([str(venv / "bin" / "linkwrap"), "status"], cwd=project, capture_output=True,
                                text=True, env=env)
        assert status.returncode == 0, status.stdout
        assert f"runs {venv / 'bin' / 'linkwrap-cc'}: the native client, the fast entry point" in status.stdout
    finally:
        stop_servers(home)


# ---- the native client as each kind of install puts it on PATH (issue 34) ----

def _is_elf(path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def _serves(client, linkwrap, tmp_path, env):
    """Two links through client: the first finds no server (its Python entry point links and starts
    one), the second is the server's; -> the server's status line."""
    import time
    from linkrecords import c_object
    home = tmp_path / "home"
    env = {**env, "LINKWRAP_HOME": str(home)}
    env.pop("LINKWRAP_SERVER", None)
    obj = c_object(tmp_path, body="int main(void) { return 7; }\n")
    try:
        first = subprocess.run([str(client), str(obj), "-o", str(tmp_path / "one")], capture_output=True,
                               text=True, env=env)
        assert first.returncode == 0 and first.stderr == "", first.stderr
        assert subprocess.run([str(tmp_path / "one")]).returncode == 7
        deadline = time.monotonic() + 60  # readiness, not timing: the server starts in the background
        while time.monotonic() < deadline:
            up = subprocess.run([str(linkwrap), "server", "status"], capture_output=True, text=True, env=env)
            if "install=" in up.stdout:
                break
            time.sleep(0.1)
        second = subprocess.run([str(client), str(obj), "-o", str(tmp_path / "two")], capture_output=True,
                                text=True, env=env)
        assert second.returncode == 0 and second.stderr == "", second.stderr
        assert subprocess.run([str(tmp_path / "two")]).returncode == 7
        status = subprocess.run([str(linkwrap), "server", "status"], capture_output=True, text=True, env=env)
        return status.stdout
    finally:
        stop_servers(home)


def test_the_wheel_is_a_platform_wheel_whose_linkwrap_cc_is_the_native_client(dist, venv, tmp_path):
    """Built with a compiler: py3-none-<platform>, and linkwrap-cc and linkwrap-launch are ELF programs
    that hand links to the server their Python entry point started."""
    from linkwrap.server import lifetime
    assert dist[1].name.endswith(".whl") and "-py3-none-" in dist[1].name and not dist[1].name.endswith("-any.whl")
    for name in ("linkwrap-cc", "linkwrap-launch"):
        assert _is_elf(venv / "bin" / name), name
        assert os.access(venv / "bin" / f"{name}-python", os.X_OK), name
    status = _serves(venv / "bin" / "linkwrap-cc", venv / "bin" / "linkwrap", tmp_path, os.environ)
    wheel = lifetime.wheel_install_id(str(venv / "bin" / "linkwrap-cc"))
    assert f"install={wheel}" in status and "links=1" in status and "(this world)" in status, status


def test_a_pipx_style_symlink_reaches_the_same_server(venv, tmp_path):
    """pipx and `uv tool install` put a symlink to the venv's command on PATH: the client finds its
    Python entry point and its install by its real path."""
    from linkwrap.server import lifetime
    exposed = tmp_path / "local-bin"
    exposed.mkdir()
    (exposed / "linkwrap-cc").symlink_to(venv / "bin" / "linkwrap-cc")
    (exposed / "linkwrap").symlink_to(venv / "bin" / "linkwrap")
    status = _serves(exposed / "linkwrap-cc", exposed / "linkwrap", tmp_path, os.environ)
    assert f"install={lifetime.wheel_install_id(str(venv / 'bin' / 'linkwrap-cc'))}" in status and "links=1" in status


def test_a_user_install_gives_the_native_client(dist, tmp_path):
    """`pip install --user`: the commands land in the user base's bin, the client among them."""
    base = tmp_path / "userbase"
    env = {**os.environ, "PYTHONUSERBASE": str(base), "PIP_BREAK_SYSTEM_PACKAGES": "1"}
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--user", "--no-deps", "--no-index",
                           str(dist[1])], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    client = base / "bin" / "linkwrap-cc"
    assert _is_elf(client)
    status = _serves(client, base / "bin" / "linkwrap", tmp_path, env)
    assert "install=w" in status and "links=1" in status, status


def test_an_editable_install_gives_the_native_client(tmp_path):
    """`pip install -e`: setuptools builds the scripts into the editable wheel too."""
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)], check=True)
    done = subprocess.run([str(env_dir / "bin" / "pip"), "install", "-q", "--no-deps", "--no-build-isolation",
                           "--no-index", "-e", ROOT], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert _is_elf(env_dir / "bin" / "linkwrap-cc")
    status = _serves(env_dir / "bin" / "linkwrap-cc", env_dir / "bin" / "linkwrap", tmp_path, os.environ)
    assert "install=w" in status and "links=1" in status, status


def test_without_a_compiler_the_python_stand_in_ships_and_status_says_so(tmp_path):
    """CC=false: no native client; the wheel is pure, linkwrap-cc is the Python stand-in (it links),
    and `linkwrap status` names it as such for a project whose config runs it."""
    out = tmp_path / "dist"
    env = {**os.environ, "CC": "false"}
    built = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", str(out), ROOT],
                           capture_output=True, text=True, env=env)
    assert built.returncode == 0, built.stderr
    wheel = next(out.glob("linkwrap-*.whl"))
    assert wheel.name.endswith("-py3-none-any.whl")
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)], check=True)
    done = subprocess.run([str(env_dir / "bin" / "pip"), "install", "-q", "--no-deps", "--no-index", str(wheel)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    client = env_dir / "bin" / "linkwrap-cc"
    assert not _is_elf(client) and client.read_text().startswith(f"#!{env_dir / 'bin' / 'python'}")
    from linkrecords import c_object
    home = tmp_path / "home"
    run_env = {**os.environ, "LINKWRAP_HOME": str(home), "PATH": f"{env_dir / 'bin'}{os.pathsep}{path_without_linkwrap()}"}
    obj = c_object(tmp_path, body="int main(void) { return 5; }\n")
    linked = subprocess.run([str(client), str(obj), "-o", str(tmp_path / "p")], capture_output=True, text=True,
                            env=run_env)
    assert linked.returncode == 0 and subprocess.run([str(tmp_path / "p")]).returncode == 5, linked.stderr
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "Cargo.toml").write_text('[package]\nname = "proj"\nversion = "0.1.0"\nedition = "2021"\n')
    (project / "src" / "main.rs").write_text('fn main() {}\n')
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    assert subprocess.run([str(env_dir / "bin" / "linkwrap"), "install"], cwd=project, env=run_env,
                          capture_output=True).returncode == 0
    status = subprocess.run([str(env_dir / "bin" / "linkwrap"), "status"], cwd=project, capture_output=True,
                            text=True, env=run_env)
    assert status.returncode == 1  # a build would run the slow entry point
    assert f"runs {client}: the Python stand-in linkwrap's wheel ships when no C compiler built" in status.stdout


def _another_python():
    """A CPython >= 3.11 of another minor version than this one, found on PATH or under pyenv's
    root, or None."""
    import glob
    import shutil
    found = [shutil.which(f"python3.{m}") for m in range(11, 20)]
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found += sorted(glob.glob(os.path.join(root, "versions", "*", "bin", "python3")))
    for python in filter(None, found):
        done = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                              text=True)
        if done.returncode != 0:
            continue
        version = tuple(int(x) for x in done.stdout.split())
        if version >= (3, 11) and version != sys.version_info[:2]:
            return python
    return None


def test_a_venv_rebuilt_with_another_python_keeps_linking_through_linkwrap(dist, tmp_path):
    """The case that broke (issue 34): the environment rebuilt in place with another Python moves
    site-packages (lib/python3.X/), so an entry point naming this install's location would link
    without linkwrap. The wheel's client in the environment's bin/ is the same path after it, and
    links through the linkwrap installed there again."""
    other = _another_python()
    if other is None:
        pytest.skip("no CPython >= 3.11 of another minor version on this machine")
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)], check=True)
    pip = [str(env_dir / "bin" / "pip"), "install", "-q"]
    assert subprocess.run([*pip, "--no-deps", "--no-index", str(dist[1])], capture_output=True).returncode == 0
    project = _project(tmp_path)
    home = tmp_path / "home"
    env = {**os.environ, "LINKWRAP_HOME": str(home), "PATH": path_without_linkwrap()}
    env.pop("LINKWRAP_INSTALL_ENTRY", None)
    linkwrap = env_dir / "bin" / "linkwrap"
    assert subprocess.run([str(linkwrap), "install"], cwd=project, capture_output=True, env=env).returncode == 0
    config = (project / ".cargo" / "config.toml").read_bytes()
    assert f'linker = "{env_dir / "bin" / "linkwrap-cc"}"'.encode() in config
    try:
        subprocess.run([other, "-m", "venv", "--clear", str(env_dir)], check=True)
        done = subprocess.run([*pip, str(dist[1])], capture_output=True, text=True)  # its dependencies too
        assert done.returncode == 0, done.stderr
        _built_through_linkwrap(project, linkwrap, env, "ok\n", links=1, config=config)
    finally:
        stop_servers(home)
