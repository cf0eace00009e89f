"""Each behaviour case (tests/ld/behaviours) linked by GNU ld and by linkwrap.ld, through gcc.

GNU ld's program must print expected.stdout (the case is right). For `expect = link`,
linkwrap.ld's program prints the same and has the readelf facts the case names equal to GNU
ld's. For `expect = unsupported`, linkwrap.ld exits 1 with one "not supported yet" line (never
an internal error, never a program), and `LINKWRAP_LINKER=python linkwrap-cc` still produces a
program that runs right: linkwrap fell back.
"""
import os
import subprocess
import sysconfig

import pytest

from . import behaviours, corpus


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    return corpus.shim_dir(str(tmp_path_factory.mktemp("behaviours-shim")))


def _link(args, out, cwd, shim=None, driver="gcc"):
    cmd = [driver, *([f"-B{shim}"] if shim else []), *args, "-o", out]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)


def _check_output(s, path, cwd):
    if s["mode"] == "shared":
        # a shared object: GNU ld links the case's prog_*.c against it, which must run
        r = subprocess.run(["readelf", "-h", path], capture_output=True, text=True, check=True)
        assert "DYN (Shared object file)" in r.stdout
        path = behaviours.program_using(s, path, cwd)
    elif s["output"] == "partial":
        # a relocatable object: GNU ld makes the program of it, which must run as expected
        r = subprocess.run(["readelf", "-h", path], capture_output=True, text=True, check=True)
        assert "REL (Relocatable file)" in r.stdout
        done = subprocess.run([s["driver"], path, "-o", path + ".prog"], capture_output=True, text=True, cwd=cwd)
        assert done.returncode == 0, done.stderr
        path += ".prog"
    r = behaviours.run(path, cwd)
    assert (r.stdout, r.returncode) == (s["stdout"], 0), r.stderr


@pytest.mark.parametrize("case", behaviours.CASES)
def test_behaviour(case, tmp_path, shim):
    s = behaviours.spec(case)
    work = str(tmp_path)
    args = behaviours.build(case, work)
    ref = _link(args, "ref", work, driver=s["driver"])
    assert ref.returncode == 0, ref.stderr
    _check_output(s, os.path.join(work, "ref"), work)
    lw = _link(args, "lw", work, shim, s["driver"])
    assert "internal error" not in lw.stderr and "Traceback" not in lw.stderr, lw.stderr
    if s["expect"] == "link":
        assert lw.returncode == 0, lw.stderr
        assert lw.stderr == ""
        _check_output(s, os.path.join(work, "lw"), work)
        want = behaviours.facts(os.path.join(work, "ref"), s["symbols"])
        got = behaviours.facts(os.path.join(work, "lw"), s["symbols"])
        for fact in s["facts"]:
            assert got[fact] == want[fact], fact
        return
    assert s["expect"] == "unsupported"
    lines = [l for l in lw.stderr.splitlines() if l.startswith("linkwrap-ld:")]
    assert lw.returncode == 1 and len(lines) == 1 and "not supported yet" in lines[0], lw.stderr
    assert not os.path.exists(os.path.join(work, "lw"))
    # through linkwrap: the python linker is asked for, says no, and the link falls back
    env = {**os.environ, "LINKWRAP_HOME": os.path.join(work, "lw-home"), "LINKWRAP_LINKER": "python",
           "LINKWRAP_CC": s["driver"]}
    env.pop("LINKWRAP_DISABLE", None)
    cc = os.path.join(sysconfig.get_path("scripts"), "linkwrap-cc")
    wrapped = subprocess.run([cc, *args, "-o", "wrapped"], capture_output=True, text=True, cwd=work, env=env)
    # the fallback's own words (GNU ld's warnings) and nothing of the attempt before it
    assert (wrapped.returncode, wrapped.stderr) == (0, ref.stderr), wrapped.stderr
    _check_output(s, os.path.join(work, "wrapped"), work)


def test_symtab_addresses_are_where_the_program_finds_them(tmp_path, shim):
    (tmp_path / "p.c").write_text('#include <stdio.h>\nint data = 1;\nstatic int hidden(void) { return data; }\n'
                                  'int main(void) { printf("%lx %lx %lx\\n", (unsigned long)main, '
                                  '(unsigned long)&data, (unsigned long)hidden); return hidden() - 1; }\n')
    subprocess.run(["gcc", "-O1", "-fno-pic", "-fno-inline", "-c", "p.c"], cwd=tmp_path, check=True)
    r = _link(["-no-pie", "p.o"], "lw", str(tmp_path), shim)
    assert r.returncode == 0, r.stderr
    seen = [int(x, 16) for x in behaviours.run(str(tmp_path / "lw"), str(tmp_path)).stdout.split()]
    nm = behaviours.nm_addresses(str(tmp_path / "lw"))
    assert seen == [nm["main"], nm["data"], nm["hidden"]]


def test_hash_style_default_is_gnu_ld_s(tmp_path):
    # gcc always says --hash-style=gnu; ld run directly says nothing, and GNU ld's default here
    # (Debian's configuration) is both tables
    (tmp_path / "s.c").write_text("int f(void) { return 1; }\n")
    subprocess.run(["gcc", "-O1", "-fPIC", "-c", "s.c"], cwd=tmp_path, check=True)
    for linker, out in (("ld", "ref.so"), (corpus.linkwrap_ld(), "lw.so")):
        subprocess.run([linker, "-shared", "s.o", "-o", out], cwd=tmp_path, check=True)
    want = behaviours.facts(str(tmp_path / "ref.so"))["hash"]
    assert want == behaviours.facts(str(tmp_path / "lw.so"))["hash"] and want
