"""The native client's own decision that a command line is not a link (client.c's not_a_link), in
step with the Python rule it mirrors (args.links): one table fed to both.

The Python entry point the client falls back to is removed, so a command line the client leaves
to linkwrap ends in its warning ("cannot run ...; linking without linkwrap") and one it decides
itself goes straight to the driver, silently. A recording driver shows what ran.
"""
import json
import os
import subprocess
import sys

import pytest

from linkwrap.install import launcher
from linkwrap.request import args

TABLE = [
    ["x.o", "-o", "app"], ["-c", "m.c"], ["-c", "m.c", "-o", "m.o"], ["-S", "m.c"], ["-E", "m.c"], ["-M", "m.c"],
    ["-MM", "m.c"], ["-fsyntax-only", "m.c"], ["-###", "x.o"], ["--version"], ["--help"], ["--target-help"],
    ["-dumpversion"], ["-dumpfullversion"], ["-dumpmachine"], ["-dumpspecs"], ["-print-search-dirs"],
    ["-print-libgcc-file-name"], ["-print-multiarch"], ["-print-sysroot"], ["-print-prog-name=ld"],
    ["-print-file-name=libc.so"], ["--help=warnings"], ["--analyze", "m.c"],
    # a stop flag as the value of a flag that takes one is no stop
    ["-o", "-c", "x.o"], ["-I", "-c", "x.o"], ["-x", "-E", "x.o"], ["-Xlinker", "--version", "x.o"],
    ["-L", "-S", "x.o"], ["-MF", "-M", "x.o"],
    # look-alikes that are links
    ["-cx", "x.o"], ["-print-prog-name", "x.o"], ["-Wl,--version", "x.o"], ["-v", "x.o"], ["x.o", "-o", "-c.out"],
    ["-pie", "x.o", "-lm"], [], ["-o", "app"],
]


@pytest.fixture
def recorder(tmp_path):
    log = tmp_path / "driver.log"
    path = tmp_path / "driver"
    path.write_text(f"#!{sys.executable}\nimport json, sys\nopen({str(log)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n")
    path.chmod(0o755)
    return path, log


def _decided(entry, argv, tmp_path, env, log, prefix=()):
    """Run entry; -> True when the client execed the driver itself (no word from the fall-back)."""
    before = log.read_text().count("\n") if log.exists() else 0
    done = subprocess.run([entry, *prefix, *argv], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    ran = log.read_text().splitlines()[before:]
    assert [json.loads(r) for r in ran] == [argv]  # the driver ran, with exactly these arguments
    assert done.stderr in ("", f"linkwrap: warning: cannot run {launcher.script_path(os.path.basename(entry))} "
                               "(No such file or directory); linking without linkwrap (run `linkwrap install` again)\n")
    return done.stderr == ""


@pytest.mark.parametrize("entry", ["linkwrap-cc", "linkwrap-launch"])
def test_the_client_and_args_links_agree_on_what_is_not_a_link(tmp_path, lw_home, recorder, entry):
    path = launcher.fast_script(entry)
    assert open(path, "rb").read(4) == b"\x7fELF", "the native client did not compile"
    os.unlink(launcher.script_path(entry))
    driver, log = recorder
    env = {**os.environ, "LINKWRAP_SERVER": "off", "LINKWRAP_CC": str(driver)}
    prefix = [] if entry == "linkwrap-cc" else ["--", str(driver)]
    got = {tuple(argv): _decided(path, argv, tmp_path, env, log, prefix) for argv in TABLE}
    want = {tuple(argv): not args.links(argv, str(tmp_path)) for argv in TABLE}
    assert got == want
    assert sum(want.values()) >= 20 and not all(want.values())  # the table has both kinds


def test_a_response_file_is_left_to_python(tmp_path, lw_home, recorder):
    """An @file is expanded by args.links, not by the client: never decided there, either way."""
    path = launcher.fast_script("linkwrap-cc")
    os.unlink(launcher.script_path("linkwrap-cc"))
    driver, log = recorder
    env = {**os.environ, "LINKWRAP_SERVER": "off", "LINKWRAP_CC": str(driver)}
    (tmp_path / "compile.rsp").write_text("-c\nm.c\n")
    assert not args.links(["@compile.rsp"], str(tmp_path))
    assert not _decided(path, ["@compile.rsp"], tmp_path, env, log)


def test_launchers_own_questions_stay_the_scripts(tmp_path, lw_home, recorder):
    path = launcher.fast_script("linkwrap-launch")
    driver, log = recorder
    version = subprocess.run([path, "--version"], capture_output=True, text=True, env={**os.environ,
                                                                                       "LINKWRAP_SERVER": "off"})
    assert version.returncode == 0 and version.stdout.startswith("linkwrap-launch (linkwrap ")
    assert not log.exists()
