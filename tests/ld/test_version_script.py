"""The version-script parser (linkwrap/ld/version_script.py) as a table, and its errors as one line."""
import pytest

from linkwrap.ld.diag import BadInput, Unsupported
from linkwrap.ld.version_script import VersionScript


def script(text):
    vs = VersionScript()
    vs.add(text, "v.map")
    return vs


@pytest.mark.parametrize("text, name, want", [
    # rustc's anonymous script: the names it lists, nothing else
    ("{ global: f; g; local: *; };", "f", (True, 1)),
    ("{ global: f; g; local: *; };", "h", (False, 0)),
    # without local: everything stays global
    ("{ global: f; };", "h", (True, 1)),
    # globs: * ? [..] [!..]
    ("{ global: api_*; local: *; };", "api_open", (True, 1)),
    ("{ global: api_*; local: *; };", "apix", (False, 0)),
    ("{ global: f?; local: *; };", "f1", (True, 1)),
    ("{ global: f?; local: *; };", "f12", (False, 0)),
    ("{ global: f[ab]; local: *; };", "fb", (True, 1)),
    ("{ global: f[!ab]; local: *; };", "fb", (False, 0)),
    ("{ global: f[!ab]; local: *; };", "fc", (True, 1)),
    # an exact name beats a glob, a glob beats a lone *
    ("{ global: *; local: secret; };", "secret", (False, 0)),
    ("{ local: *; global: s*; };", "secret", (True, 1)),
    ("{ global: s*; local: secret; };", "secret", (False, 0)),
    # a quoted name is literal: no glob
    ('{ global: "f*"; local: *; };', "f*", (True, 1)),
    ('{ global: "f*"; local: *; };', "fx", (False, 0)),
    # named nodes: indexes 2, 3 ... in order; comments of both kinds
    ("V1 { global: a; local: *; }; /* c */ V2 { b; } V1; # end", "a", (True, 2)),
    ("V1 { global: a; local: *; }; V2 { b; } V1;", "b", (True, 3)),
    ("V1 { global: a; local: *; }; V2 { b; } V1;", "c", (False, 0)),
])
def test_lookup(text, name, want):
    assert script(text).lookup(name) == want


def test_nodes_and_dependencies():
    vs = script("LIB_1 { global: a; }; LIB_2 { global: b; } LIB_1;")
    assert [(n.name, n.index, n.parents) for n in vs.nodes] == [("LIB_1", 2, ()), ("LIB_2", 3, ("LIB_1",))]
    assert vs.patterns == [("a", 0), ("b", 1)]


@pytest.mark.parametrize("text, message", [
    ("{ global: f; ", "syntax error in version script near `end of file' (expected `}')"),
    ("{ global: f }; ", "syntax error in version script near `}' (expected `;')"),
    ("V2 { f; } V1;", "unable to find version dependency `V1'"),
    ("V1 { f; }; V1 { g; };", "duplicate version tag `V1'"),
    ("{ f; }; V1 { g; };", "anonymous version tag cannot be combined with other version tags"),
])
def test_errors_are_one_line_naming_the_file(text, message):
    with pytest.raises(BadInput) as e:
        script(text)
    assert str(e.value) == f"v.map: {message}"


def test_extern_cxx_is_named_as_not_supported():
    with pytest.raises(Unsupported) as e:
        script('{ global: extern "C++" { ns::f*; }; local: *; };')
    assert str(e.value) == 'not supported yet: extern "C++" block in version script v.map'


def test_an_unreadable_script_is_one_line_naming_it(tmp_path):
    from linkwrap.ld.version_script import read
    missing, binary = tmp_path / "gone.map", tmp_path / "bin.map"
    binary.write_bytes(b"\xff\xfe{ global: f; };")
    with pytest.raises(BadInput, match=r"^cannot open version script .*gone\.map: No such file or directory$"):
        read([str(missing)])
    with pytest.raises(BadInput, match=r"bin\.map: version script is not text$"):
        read([str(binary)])


# --- where the file is found, differential: GNU ld and linkwrap.ld through gcc, same exports ----

LIB = "int api(int x) { return x + 1; }\nint hidden(int x) { return x * 2; }\n"
PROG = r"""#include <dlfcn.h>
#include <stdio.h>
int api(int);
int main(void) {
    printf("%d %s\n", api(1), dlsym(RTLD_DEFAULT, "hidden") ? "hidden exported" : "hidden local");
    return 0;
}
"""


def _sh(argv, cwd):
    import subprocess
    done = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"{argv}: {done.stderr}"
    return done.stdout


@pytest.mark.parametrize("cwd, args", [
    (".", ["-Wl,--version-script=sub/lib.map"]),           # relative to the current directory
    ("sub", ["-Wl,--version-script,lib.map"]),             # ... which is where the link runs
    (".", ["-Lother", "-Wl,--version-script=only.map"]),   # not there: under the -L given before it
])
def test_a_relative_script_is_found_where_gnu_ld_finds_it(tmp_path, cwd, args):
    import re
    from . import corpus
    shim = corpus.shim_dir(str(tmp_path))
    (tmp_path / "sub").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "lib.c").write_text(LIB)
    (tmp_path / "prog.c").write_text(PROG)
    (tmp_path / "sub" / "lib.map").write_text("V1 { global: api; local: *; };\n")
    (tmp_path / "other" / "only.map").write_text("V1 { global: api; local: *; };\n")
    _sh(["gcc", "-O1", "-fPIC", "-c", "lib.c"], tmp_path)
    _sh(["gcc", "-O1", "-c", "prog.c"], tmp_path)
    seen = []
    for tag, b in (("ref", []), ("lw", [f"-B{shim}"])):
        lib = tmp_path / f"lib{tag}.so"
        _sh(["gcc", *b, "-shared", tmp_path / "lib.o", *args, "-o", lib], tmp_path / cwd)
        _sh(["gcc", "prog.o", lib, "-ldl", "-o", f"prog-{tag}"], tmp_path)
        dyn = _sh(["readelf", "--dyn-syms", "-W", lib], tmp_path)
        seen.append((_sh([tmp_path / f"prog-{tag}"], tmp_path),
                     sorted(re.findall(r" (api@@V1|hidden\S*)$", dyn, re.M))))
    assert seen[0] == ("2 hidden local\n", ["api@@V1"])
    assert seen[1] == seen[0]


def test_a_dynamic_list_under_a_l_directory(tmp_path):
    """--dynamic-list is opened the same way: here from a -L directory, for an executable."""
    from . import corpus
    shim = corpus.shim_dir(str(tmp_path))
    (tmp_path / "other").mkdir()
    (tmp_path / "main.c").write_text(PROG.replace("int api(int);", "int api(int x) { return x + 1; }\n"
                                                  "int hidden(int x) { return x * 2; }"))
    (tmp_path / "other" / "dyn.list").write_text("{ hidden; };\n")
    _sh(["gcc", "-O1", "-c", "main.c"], tmp_path)
    out = []
    for tag, b in (("ref", []), ("lw", [f"-B{shim}"])):
        _sh(["gcc", *b, "main.o", "-Lother", "-Wl,--dynamic-list=dyn.list", "-ldl", "-o", tag], tmp_path)
        out.append(_sh([tmp_path / tag], tmp_path))
    assert out == ["2 hidden exported\n"] * 2
