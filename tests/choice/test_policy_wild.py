"""policy.py for wild: its flags by version, end to end through linkwrap-cc, against the recording stand-in.

The real wild found here is tested in tests/choice/test_wild.py; these tests are about the other
versions' behaviour. tests/standins/wild.py is a RECORDING STAND-IN, not wild:
it logs its argv, rejects what the real wild of that version rejects (reference §1.1:
unknown options fatal since 0.6, flags only from the release that added them), then
links with ld.lld-16. So a flag linkwrap must not give shows up as a fallback (the
output is then not linked by LLD 16), and the flags it must give show up in the log.
"""
import json
import os
import subprocess
import sys

import pytest

import mounts
from linkwrap.facts import probe

STANDINS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "standins")


def wild_env(tmp_path, version):
    bindir = tmp_path / f"wild-{version}"
    bindir.mkdir(exist_ok=True)
    exe = bindir / "wild"
    exe.write_text(f'#!/bin/sh\nWILD_STANDIN_VERSION={version} exec {sys.executable} {STANDINS}/wild.py "$@"\n')
    exe.chmod(0o755)
    log = tmp_path / f"wild-{version}.log"
    return {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "LINKWRAP_LINKER": "wild",
            "WILD_STANDIN_LOG": str(log)}, log


def link_with_wild(linkwrap_cc, tmp_path, where, version, relink=False):
    env, log = wild_env(tmp_path, version)
    src = tmp_path / "w.c"
    src.write_text('#include <stdio.h>\nint main(void){puts("wild ok");return 0;}\n')
    subprocess.run(["cc", "-c", str(src), "-o", str(tmp_path / "w.o")], check=True)
    out = os.path.join(where, "prog")
    for _ in range(2 if relink else 1):
        done = subprocess.run([linkwrap_cc, str(tmp_path / "w.o"), "-o", out], env=env, capture_output=True, text=True)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert subprocess.run([out], capture_output=True, text=True).stdout == "wild ok\n"
    comment = subprocess.run(["readelf", "-p", ".comment", out], capture_output=True, text=True).stdout
    assert "LLD 16" in comment, "the stand-in did not do the link: linkwrap fell back (a flag wild rejects?)"
    calls = [json.loads(l) for l in log.read_text().splitlines()]
    return calls[-1]["argv"]


@pytest.mark.parametrize("version,expect,absent", [
    ("0.10.0", ["--no-fork", "--mmap-output-file"], ["--no-update-in-place"]),
    ("0.8.0", ["--no-fork"], ["--mmap-output-file", "--no-update-in-place"]),
    ("0.7.0", ["--no-fork"], ["--mmap-output-file", "--no-update-in-place"]),
    ("0.6.0", ["--no-fork"], ["--mmap-output-file", "--no-update-in-place"]),
    ("0.2.0", [], ["--no-fork", "--mmap-output-file", "--no-update-in-place"]),
])
def test_wild_on_btrfs(tmp_path, lw_home, linkwrap_cc, version, expect, absent):
    """wild buffers its output on btrfs from 0.10 with a kernel < 7.2: only then --mmap-output-file."""
    # A tuple, as the policy compares it: as strings "7.10" < "7.2".
    if tuple(probe.kernel_version()[:2]) >= (7, 2):  # wild mmaps on btrfs by itself there: no version gets the flag
        expect, absent = [f for f in expect if "mmap" not in f], absent + ["--mmap-output-file"]
    with mounts.loop_mount(tmp_path, "btrfs") as point:
        argv = link_with_wild(linkwrap_cc, tmp_path, point, version, relink=True)
    for flag in expect:
        assert flag in argv
    for flag in absent:
        assert flag not in argv
    threads = [a for a in argv if a.startswith("--threads")]
    assert threads == [f"--threads={len(os.sched_getaffinity(0))}"]  # the `=` form only


def test_no_mmap_flag_off_btrfs(tmp_path, lw_home, linkwrap_cc):
    argv = link_with_wild(linkwrap_cc, tmp_path, str(tmp_path), "0.10.0")
    assert "--mmap-output-file" not in argv and "--no-fork" in argv


def test_before_0_9_the_driver_gets_no_plugin(tmp_path, lw_home, linkwrap_cc, monkeypatch):
    """The stand-in prints 0.8.0's plugin warning on stdout (link_with_wild asserts there is none).
    Through the driver: a direct start never passes the plugin (direct.py keeps LTO on the driver)."""
    monkeypatch.setenv("LINKWRAP_DIRECT", "0")
    assert "-plugin" not in link_with_wild(linkwrap_cc, tmp_path, str(tmp_path), "0.8.0")
    assert "-plugin" in link_with_wild(linkwrap_cc, tmp_path, str(tmp_path), "0.10.0")
