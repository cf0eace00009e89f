"""The corpus linked by GNU ld and by linkwrap.ld (through gcc -B<shim>) as static, static-pie, PIE
and non-PIE dynamic (copy relocations).

For each case and mode: both outputs run with the same stdout and exit status;
readelf shows the same DT_NEEDED list, the same program header types, the same
merged .note.gnu.property and the same version needs; for PIE, LD_DEBUG=bindings shows the same symbols bound to the
same libraries and versions. The same again with --gc-sections.
"""
import os
import re
import subprocess

import pytest

from . import corpus

MODES = list(corpus.MODES)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("ld-corpus"))
    shim = corpus.shim_dir(root)
    cache = {}

    def get(case, mode, gc=False):
        key = (case, mode, gc)
        if key not in cache:
            work = os.path.join(root, case)
            if (case, "objs") not in cache:
                cache[(case, "objs")] = corpus.compile_case(case, work)
            drv, objs, ar = cache[(case, "objs")]
            extra = ["-Wl,--gc-sections"] if gc else []
            tag = f"{mode}{'-gc' if gc else ''}"
            ref, lw = os.path.join(work, f"ref-{tag}"), os.path.join(work, f"lw-{tag}")
            r = corpus.link(drv, objs, ar, mode, ref, extra=extra)
            assert r.returncode == 0, r.stderr
            r = corpus.link(drv, objs, ar, mode, lw, shim, extra=extra)
            assert r.returncode == 0, f"linkwrap.ld failed:\n{r.stderr}"
            assert r.stderr == "", r.stderr   # nothing printed on success
            cache[key] = (ref, lw)
        return cache[key]
    return get


def readelf_facts(path):
    dyn = subprocess.run(["readelf", "-dW", path], capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", dyn)
    ph = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True, check=True).stdout
    types = set(re.findall(r"^\s+([A-Z_]+)\s+0x", ph, re.M))
    notes = subprocess.run(["readelf", "-nW", path], capture_output=True, text=True, check=True).stdout
    props = [line.strip() for line in notes.splitlines() if "x86 " in line]
    etype = re.search(r"Elf file type is (\w+)", ph).group(1)
    hdr = subprocess.run(["readelf", "-hW", path], capture_output=True, text=True, check=True).stdout
    osabi = re.search(r"OS/ABI:\s+(.*)", hdr).group(1).strip()
    ver = subprocess.run(["readelf", "-VW", path], capture_output=True, text=True, check=True).stdout
    needs = set()
    current = None
    for line in ver.split("Version needs section", 1)[-1].splitlines() if "Version needs" in ver else []:
        m = re.search(r"File: (\S+)", line)
        if m:
            current = m.group(1)
        m = re.search(r"Name: (\S+)", line)
        if m and current:
            needs.add((current, m.group(1)))
    flags = {}
    for line in ph.splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[1].startswith("0x") and parts[0] in ("GNU_STACK", "TLS", "GNU_RELRO", "INTERP"):
            flags[parts[0]] = " ".join(parts[6:-1])   # the R/W/E flags of the segment
    return {"needed": needed, "segments": types, "type": etype, "version_needs": needs, "flags": flags,
            "properties": props, "osabi": osabi}


def bindings(path):
    env = {"LD_DEBUG": "bindings", "LD_BIND_NOW": "1"}
    r = corpus.run(path, env)
    out = set()
    for line in r.stderr.splitlines():
        m = re.search(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: normal symbol `([^']+)'(?: \[(\S+)\])?", line)
        if m:
            src, dst, sym, ver = m.groups()
            norm = lambda p: "<exe>" if p == path else os.path.basename(p)
            if dst != path:   # the executable binding to itself (COPY aliases) is internal detail
                out.add((norm(src), norm(dst), sym, ver))
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", corpus.CASES)
def test_runs_like_gnu_ld(built, case, mode):
    ref, lw = built(case, mode)
    a, b = corpus.run(ref), corpus.run(lw)
    assert a.stdout, "the reference program printed nothing"
    assert (b.stdout, b.returncode) == (a.stdout, a.returncode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", corpus.CASES)
def test_readelf_facts_like_gnu_ld(built, case, mode):
    ref, lw = built(case, mode)
    fa, fb = readelf_facts(ref), readelf_facts(lw)
    assert fb == fa
    if mode == "static":
        assert fb["type"] == "EXEC" and "DYNAMIC" not in fb["segments"] and "INTERP" not in fb["segments"]
    elif mode == "static-pie":
        assert fb["type"] == "DYN" and "DYNAMIC" in fb["segments"] and not fb["needed"]
    else:
        assert {"INTERP", "DYNAMIC", "GNU_RELRO", "GNU_EH_FRAME"} <= fb["segments"] and "libc.so.6" in fb["needed"]
        assert fb["type"] == ("DYN" if mode == "pie" else "EXEC")


@pytest.mark.parametrize("mode", ["pie", "no-pie"])
@pytest.mark.parametrize("case", corpus.CASES)
def test_bindings_like_gnu_ld(built, case, mode):
    ref, lw = built(case, mode)
    ba, bb = bindings(ref), bindings(lw)
    assert ba, "LD_DEBUG=bindings reported nothing for the reference"
    assert bb == ba


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", ["gc_sections", "stdio", "cxx_exceptions", "archive", "tls", "ctors"])
def test_gc_sections_like_gnu_ld(built, case, mode):
    ref, lw = built(case, mode, gc=True)
    ref_nogc, lw_nogc = built(case, mode)
    a, b = corpus.run(ref), corpus.run(lw)
    assert (b.stdout, b.returncode) == (a.stdout, a.returncode)
    # whenever GNU ld finds code to remove, so must linkwrap.ld
    if text_size(ref) < text_size(ref_nogc) or case == "gc_sections":
        assert text_size(lw) < text_size(lw_nogc), "--gc-sections removed nothing from .text"
    if case == "gc_sections":
        assert data_size(lw) < data_size(lw_nogc), "--gc-sections removed nothing from .data"


def data_size(path):
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True, check=True).stdout
    m = re.search(r"\.data\s+PROGBITS\s+\S+\s+\S+\s+(\S+)", out)
    return int(m.group(1), 16)


def text_size(path):
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True, check=True).stdout
    m = re.search(r"\.text\s+PROGBITS\s+\S+\s+\S+\s+(\S+)", out)
    return int(m.group(1), 16)
