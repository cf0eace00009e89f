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
