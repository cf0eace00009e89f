"""linkwrap.ld reached the three ways linkwrap uses it: `linkwrap ld ...`, linkwrap-ld as gcc's
`ld` (-B shim), and `LINKWRAP_LINKER=python linkwrap-cc ...` through the wrapper."""
import subprocess

import os
import sysconfig

from ld import corpus

SCRIPTS = sysconfig.get_path("scripts")


def _comment(path):
    return subprocess.run(["readelf", "-p", ".comment", path], capture_output=True, text=True).stdout


def test_linkwrap_ld_subcommand_links(tmp_path):
    (tmp_path / "h.c").write_text('#include <stdio.h>\nint main(void){puts("sub");return 0;}\n')
    subprocess.run(["gcc", "-c", "h.c"], cwd=tmp_path, check=True)
    # the ld command line gcc would pass for -static, spelled out
    libdir = "/usr/lib/gcc/x86_64-linux-gnu/12"
    crt = "/usr/lib/x86_64-linux-gnu"
    argv = [os.path.join(SCRIPTS, "linkwrap"), "ld", "-m", "elf_x86_64", "-static", "-o", "out",
            f"{crt}/crt1.o", f"{crt}/crti.o", f"{libdir}/crtbeginT.o", f"-L{libdir}", f"-L{crt}",
            "h.o", "--start-group", "-lgcc", "-lgcc_eh", "-lc", "--end-group", f"{libdir}/crtend.o", f"{crt}/crtn.o"]
    r = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert subprocess.run([str(tmp_path / "out")], capture_output=True, text=True).stdout == "sub\n"
    assert "Linker: linkwrap.ld" in _comment(str(tmp_path / "out"))


def test_version_and_usage_errors():
    r = subprocess.run([os.path.join(SCRIPTS, "linkwrap"), "ld", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("linkwrap.ld ")
    r = subprocess.run([corpus.linkwrap_ld()], capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.strip() == "linkwrap-ld: no input files"


def test_wrapper_uses_python_linker(tmp_path):
    (tmp_path / "w.c").write_text('#include <stdio.h>\nint main(void){puts("wrapped");return 4;}\n')
    subprocess.run(["gcc", "-c", "w.c"], cwd=tmp_path, check=True)
    env = {**os.environ, "LINKWRAP_HOME": str(tmp_path / "home"), "LINKWRAP_LINKER": "python"}
    r = subprocess.run([os.path.join(SCRIPTS, "linkwrap-cc"), "w.o", "-o", "w"], capture_output=True,
                       text=True, cwd=tmp_path, env=env)
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""
    run = subprocess.run([str(tmp_path / "w")], capture_output=True, text=True)
    assert (run.stdout, run.returncode) == ("wrapped\n", 4)
    assert "Linker: linkwrap.ld" in _comment(str(tmp_path / "w"))
