"""merge: the string sections merged the same way whichever way the offsets are computed.

LINKWRAP_LD_MERGE=python forces the per-section loop, =numpy the whole-link arrays (the default
takes numpy from merge.NUMPY_FROM input bytes on). The outputs are compared byte for byte: a
real Rust debug link of the generated project (.debug_str of the std rlibs and every crate,
under different hash seeds too), and every C corpus case built with -g (.debug_str,
.rodata.str1.1, .comment). Against GNU ld's output: every string GNU ld keeps is in ours, once.
"""
import os
import subprocess

import pytest

from . import corpus



def strings_of(path, section, tmp):
    """The NUL-terminated strings of one section of an ELF file (objcopy's dump of it)."""
    dump = os.path.join(tmp, os.path.basename(path) + section)
    subprocess.run(["objcopy", f"--dump-section={section}={dump}", path, os.devnull], check=True)
    with open(dump, "rb") as f:
        data = f.read()
    assert data.endswith(b"\0")
    return data[:-1].split(b"\0")


@pytest.fixture(scope="module")
def rust_debug(tmp_path_factory):
    return corpus.rust_debug_link(tmp_path_factory.mktemp("rust"))


def test_rust_debug_link_is_the_same_whichever_way_strings_merge(rust_debug):
    root, argv, link_env, cwd = rust_debug
    shim = corpus.shim_dir(str(root))
    outputs = {}
    for way, seed in (("python", "1"), ("numpy", "2"), ("numpy", "3"), ("", "4")):
        out = str(root / f"lw-{way or 'auto'}-{seed}")
        r = subprocess.run(["cc", f"-B{shim}", *argv, "-o", out], cwd=cwd, capture_output=True, text=True,
                           env={**link_env, "LINKWRAP_LD_MERGE": way, "PYTHONHASHSEED": seed})
        assert r.returncode == 0, r.stderr
        with open(out, "rb") as f:
            outputs[out] = f.read()
    first, *rest = outputs.values()
    assert all(o == first for o in rest)
    out = next(iter(outputs))
    ref = str(root / "gnu")
    subprocess.run(["cc", *argv, "-o", ref], cwd=cwd, env=link_env, check=True)
    want = subprocess.run([ref], capture_output=True, text=True, check=True).stdout
    assert want.startswith("checksum ")
    assert subprocess.run([out], capture_output=True, text=True).stdout == want
    ours = strings_of(out, ".debug_str", str(root))
    assert len(ours) == len(set(ours)) > 10_000
    # GNU ld also stores a string inside a longer one's tail (suffix merging): ours is a superset
    assert set(strings_of(ref, ".debug_str", str(root))) <= set(ours)


@pytest.mark.parametrize("case", corpus.CASES)
def test_c_corpus_is_the_same_whichever_way_strings_merge(case, tmp_path):
    driver, objs, archive = corpus.compile_case(case, str(tmp_path))
    shim = corpus.shim_dir(str(tmp_path))
    outputs = []
    for way in ("python", "numpy"):
        out = str(tmp_path / f"pie-{way}")
        cmd = [driver, f"-B{shim}", *corpus.MODES["pie"], *objs, *([archive] if archive else []),
               "-pthread", "-o", out]
        r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "LINKWRAP_LD_MERGE": way})
        assert r.returncode == 0, r.stderr
        with open(out, "rb") as f:
            outputs.append(f.read())
    assert outputs[0] == outputs[1], case
    ours = strings_of(out, ".debug_str", str(tmp_path))
    assert len(ours) == len(set(ours))


@pytest.mark.parametrize("n", [0, 1, 4095, 4096, 4097, 10000])
def test_joined_is_one_join_with_a_nul_after_each_string(n):
    from linkwrap.ld import merge
    strings = dict.fromkeys(b"s%d" % k * (k % 7) for k in range(n))
    assert merge._joined(strings) == b"".join(s + b"\0" for s in strings)
