"""policy.REFUSES and WARNS: a linker is not chosen for a link whose linker options it rejects or warns
about. Every row is held to the real linkers installed here, and the choice is checked end to end."""
import json
import os
import subprocess

import pytest

from clirun import linkwrap
from linkwrap.choice import policy


def linkers_here(wild_dir):
    from linkwrap.facts import linkers
    return linkers.discover(environ={**os.environ, "PATH": f"{wild_dir}{os.pathsep}{os.environ['PATH']}"})


def as_flags(option):
    """'-z text' -> ['-Wl,-z,text']; '--Map' -> ['-Wl,-Map=m.map']; '--sort-section' needs a value."""
    if option.startswith("-z "):
        return ["-Wl,-z," + option[3:]]
    value = {"--Map": "m.map", "--sort-section": "name"}.get(option)
    return [f"-Wl,{option}={value}" if value else f"-Wl,{option}"]


ROWS = [(o, n, "rejects") for o, by in policy.REFUSES.items() for n in by] + \
       [(o, n, "warns") for o, by in policy.WARNS.items() for n in by]


@pytest.mark.parametrize("option,name,does", ROWS)
def test_every_row_holds_for_the_linker_installed_here(tmp_path, lw_home, hello_obj, wild, option, name, does):
    from linkwrap.facts import linkers
    found = linkers_here(wild.dir)
    assert name in found or name == "rust-lld", f"{name} is not installed (scripts/install-test-deps)"
    if name == "rust-lld" and name not in found:
        from conftest import rust_gcc_ld
        found = {"rust-lld": linkers.LinkerInfo("rust-lld", os.path.join(os.path.dirname(rust_gcc_ld()), "rust-lld"),
                                                None, "")}
        found["rust-lld"] = found["rust-lld"]._replace(version=linkers.parse_version(
            "rust-lld", linkers.version_text("rust-lld", found["rust-lld"].path)))
    info = found[name]
    seen = (policy.REFUSES.get(option) or policy.WARNS[option])[name]
    if tuple(info.version) > seen:
        pytest.skip(f"{info.label} is newer than the {'.'.join(map(str, seen))} the row was seen with")
    done = subprocess.run(["gcc", f"-B{linkers.shim_dir(info)}", "-fno-use-linker-plugin", str(hello_obj),
                           *as_flags(option), "-o", "out"], cwd=tmp_path, capture_output=True, text=True)
    if does == "rejects":
        assert done.returncode != 0 and option.lstrip("-") in done.stderr, (info.label, option, done.stderr)
    else:
        assert done.returncode == 0 and "WARNING" in done.stdout + done.stderr, (info.label, option, done)
    plain = subprocess.run(["gcc", str(hello_obj), *as_flags(option), "-o", "plain"], cwd=tmp_path,
                           capture_output=True, text=True)
    assert plain.returncode == 0, plain.stderr          # GNU ld, the caller's own, accepts it


def spooled(lw_home):
    from linkwrap.store import spool
    from linkwrap.record.record import SPOOL
    with open(lw_home / SPOOL, "rb") as f:
        return spool.parse(f.read())[0]


def test_an_option_every_fast_linker_rejects_links_with_gnu_ld_and_never_falls_back(
        tmp_path, lw_home, linkwrap_cc, big_hello_obj, wild):
    env = wild.env(LINKWRAP_HOME=str(lw_home))
    argv = [str(big_hello_obj), "-Wl,--no-warn-rwx-segments", "-o", "hello"]
    for _ in range(3):
        done = subprocess.run([linkwrap_cc, *argv], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    recs = spooled(lw_home)
    assert [bool(r["fell_back"]) for r in recs] == [False] * 3, [(r["linker"], r["first_error"]) for r in recs]
    d = json.loads(linkwrap("explain", "--json", "--", *argv, cwd=tmp_path, env=env).stdout)["decision"]
    found = linkers_here(wild.dir)
    for name in ("mold", "wild", "lld"):
        assert any(r.startswith(f"{found[name].label} passed over: it rejects -Wl,--no-warn-rwx-segments")
                   for r in d["reasons"]), d["reasons"]


def test_cref_passes_over_mold_and_wild_only(tmp_path, lw_home, big_hello_obj, wild):
    env = wild.env(LINKWRAP_HOME=str(lw_home))
    d = json.loads(linkwrap("explain", "--json", "--", str(big_hello_obj), "-Wl,--cref", "-o", "hello",
                            cwd=tmp_path, env=env).stdout)["decision"]
    assert d["linker"] == "lld", d["reasons"]


def test_wild_is_not_chosen_for_a_static_pie_link_it_would_warn_about(tmp_path, lw_home, linkwrap_cc, hello_obj, wild):
    # mold forbidden: wild is the static order's first choice for other links (checked below).
    (tmp_path / "linkwrap.toml").write_text('forbid = ["mold"]\n[choice]\nlearn = false\n')
    env = wild.env(LINKWRAP_HOME=str(lw_home))
    plain = json.loads(linkwrap("explain", "--json", "--", str(hello_obj), "-o", "p", cwd=tmp_path, env=env).stdout)
    assert plain["decision"]["linker"] == "wild"
    argv = [str(hello_obj), "-static-pie", "-o", "sp"]
    done = subprocess.run([linkwrap_cc, *argv], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert subprocess.run([str(tmp_path / "sp")], capture_output=True, text=True).stdout == "hello\n"
    assert "Wild" not in subprocess.run(["readelf", "-p", ".comment", str(tmp_path / "sp")],
                                        capture_output=True, text=True).stdout
    d = json.loads(linkwrap("explain", "--json", "--", *argv, cwd=tmp_path, env=env).stdout)["decision"]
    assert d["linker"] != "wild"
    assert any("wild" in r and "warns about -static-pie" in r for r in d["reasons"]), d["reasons"]
