"""The entry points builds run, written next to linkwrap's state.

pip's console scripts start Python with site-packages processing and import
`re` before our code runs: 10-30 ms per link, more than the whole wrapper's
budget. `linkwrap install` therefore writes the linker / launcher path as a
small script of its own (templates/launcher.py) that runs the same
interpreter with -I -S and finds linkwrap by the path it has now, and that
links as asked when that interpreter or linkwrap is gone. Each interpreter and
package location gets its own directory, so an install from another virtual
environment never rewrites (or, deleted, breaks) this one's. The script keeps
the console script's name, so Cargo's and CMake's settings still read
`…/linkwrap-cc` and `…/linkwrap-launch`. `--console-script` writes pip's
script instead.
"""
import binascii
import os
import shlex
import sys

from linkwrap import paths
from linkwrap.install import marker

ENTRIES = {"linkwrap-cc": "main", "linkwrap-launch": "launch_main"}


def fast_script(name: str, write: bool = True) -> str:
    """Write (or refresh) the fast entry point `name`; -> its absolute path."""
    import linkwrap
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(linkwrap.__file__)))
    launcher = name == "linkwrap-launch"
    fallback = '[ "$1" = "--" ] && shift; exec "$@"' if launcher else 'exec "${LINKWRAP_CC:-cc}" "$@"'
    text = marker.template("launcher.py", python_sh=shlex.quote(sys.executable), tag=marker.tag(), script=name,
                           package_parent=repr(package_parent), entry=ENTRIES[name],
                           is_launcher=str(launcher), sh_fallback=fallback)
    where = binascii.crc32(f"{os.path.realpath(sys.executable)}\0{package_parent}".encode("utf-8", "surrogateescape"))
    path = os.path.join(paths.state_dir(), "bin", f"{where:08x}", name)
    if not write:
        return path
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return path
    except OSError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)
    return path


def entry_point(name: str, console_script: bool = False, write: bool = True) -> str:
    """What a build should run for `name`: the fast script, or pip's console script."""
    return marker.script_path(name) if console_script else fast_script(name, write)
