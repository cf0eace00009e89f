"""The wheel, installed into a fresh virtual environment: templates ship, commands run."""
import os
import subprocess
import sys

import pytest

from conftest import path_without_linkwrap

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


def test_install_from_the_wheel_uses_the_shipped_template(venv, tmp_path):
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "Cargo.toml").write_text('[package]\nname = "proj"\nversion = "0.1.0"\nedition = "2021"\n')
    (project / "src" / "main.rs").write_text('fn main() { println!("ok"); }\n')
    # No linkwrap-cc on PATH: install writes the absolute path of its fast entry point (install/launcher.py).
    env = {**os.environ, "LINKWRAP_HOME": str(tmp_path / "home"), "PATH": path_without_linkwrap()}
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
    """The wheel's linkwrap-cc console script on PATH and a Cargo config tracked by git:
    `linker = "linkwrap-cc"` links through it."""
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
    assert "the native client skips it on this machine: export PATH=" in done.stdout
    shutil.rmtree(home / "bin")  # nothing of this machine's is needed
    built = subprocess.run(["cargo", "run", "-q"], cwd=project, capture_output=True, text=True, env=env)
    assert built.returncode == 0 and built.stdout == "ok\n", built.stderr
    assert (home / "links.spool").exists() or (home / "links.db").exists()  # the link went through linkwrap
