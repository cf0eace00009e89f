"""The wheel's linkwrap-cc and linkwrap-launch commands: the native client (linkwrap/server/client.c).

Everything else is in pyproject.toml. A Python console script costs every link ~20 ms of interpreter
start; the client costs well under one and, with no warm server, execs its Python entry point
(<command>-python, a console script beside it). So the build compiles client.c with the C compiler
every machine that links has (CC, else cc) and ships it as a script, in a platform wheel
(py3-none-<platform>: no Python ABI in it). Without a compiler the Python stand-ins in
scripts/wheel/ are those commands instead, and the wheel stays pure.
"""
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import setup

try:
    from setuptools.command.build_scripts import build_scripts
except ImportError:  # setuptools < 69: distutils' (setuptools' own copy of it)
    from distutils.command.build_scripts import build_scripts

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
COMMANDS = ("linkwrap-cc", "linkwrap-launch")
_BUILT = {}


def version() -> str:
    with open(os.path.join(HERE, "linkwrap", "__init__.py"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("__version__"):
                return line.split("=", 1)[1].strip().strip("\"'")
    raise SystemExit("setup.py: no __version__ in linkwrap/__init__.py")


def native(build_temp: str):
    """client.c compiled once for this build (static where the C library allows); -> its path, or None."""
    if "path" in _BUILT:
        return _BUILT["path"]
    _BUILT["path"] = None
    cc = shlex.split(os.environ.get("CC") or "cc")
    os.makedirs(build_temp, exist_ok=True)
    src = os.path.join(build_temp, "client.c")
    out = os.path.join(build_temp, "linkwrap-client")
    with open(os.path.join(HERE, "linkwrap", "server", "client.c"), "rb") as f:
        body = f.read()
    with open(src, "wb") as f:
        f.write(f'#define LW_WHEEL 1\n#define LW_VERSION "{version()}"\n#define LW_TIMEOUT_S 10\n'.encode() + body)
    for static in (["-static"], []):
        try:
            done = subprocess.run([*cc, "-O2", *static, "-o", out, src], capture_output=True, timeout=300)
        except (OSError, subprocess.SubprocessError):
            break
        if done.returncode == 0 and os.path.isfile(out):
            with open(out, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    _BUILT["path"] = out
                    break
    if _BUILT["path"] is None:
        print("setup.py: no C compiler (CC or cc) built linkwrap's native client: linkwrap-cc and "
              "linkwrap-launch are its Python stand-ins (~20 ms a link slower)", file=sys.stderr)
    return _BUILT["path"]


class BuildScripts(build_scripts):
    """The commands: the native client under each name, or the stand-ins (copied as any script)."""

    def finalize_options(self):
        super().finalize_options()
        # pip (and uv) replace "#!python" with the installing environment's interpreter.
        self.executable = "python"

    def run(self):
        client = native(os.path.join(HERE, "build", "native"))
        if client is None:
            return super().run()
        self.mkpath(self.build_dir)
        for name in COMMANDS:
            shutil.copyfile(client, os.path.join(self.build_dir, name))
            os.chmod(os.path.join(self.build_dir, name), 0o755)


class BdistWheel(bdist_wheel):
    """A platform wheel when it holds the native client; pure when it holds the stand-ins."""

    def finalize_options(self):
        if native(os.path.join(HERE, "build", "native")) is not None:
            # A binary inside: the build and the wheel's root are "platlib" (setuptools says so of a
            # distribution with extension modules), not pure.
            self.distribution.has_ext_modules = lambda: True
        super().finalize_options()

    def get_tag(self):
        python, abi, platform = super().get_tag()
        return ("py3", "none", platform) if not self.root_is_pure else (python, abi, platform)


setup(scripts=[f"scripts/wheel/{name}" for name in COMMANDS],
      cmdclass={"build_scripts": BuildScripts, "bdist_wheel": BdistWheel})
