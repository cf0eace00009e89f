"""The bundled Cargo example, built for real through linkwrap-cc with every linker."""
import os
import shutil
import subprocess

import pytest

from conftest import comment_mark, machine_linkers, script

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "examples", "cargo-workspace")
HOST = "x86_64-unknown-linux-gnu"
EXPECTED_OUTPUT = "Hello, linkwrap!\nanswer=42 Point (derived)\nbuilt by build.rs (debug)\n"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A copy of the example whose .cargo/config.toml names linkwrap-cc as the linker."""
    root = tmp_path_factory.mktemp("ws") / "cargo-workspace"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("target", ".cargo"))
    (root / ".cargo").mkdir()
    (root / ".cargo" / "config.toml").write_text(f'[target.{HOST}]\nlinker = "{script("linkwrap-cc")}"\n')
    return root


def cargo(root, *argv, **env):
    return subprocess.run(["cargo", *argv], cwd=root, capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=600)


def sections(path) -> str:
    return subprocess.run(["readelf", "-W", "-S", "-p", ".comment", str(path)], capture_output=True, text=True).stdout


def signature_of(linker, text):
    """Which linker a binary's .comment / notes name."""
    if linker == "mold":
        return "mold 1." in text or "mold 2." in text
    if linker in ("lld", "rust-lld"):
        return comment_mark(linker) in text
    if linker == "gold":
        return ".note.gnu.gold-version" in text
    if linker == "wild":
        return "Linker: Wild" in text
    if linker == "python":
        return "Linker: linkwrap.ld" in text
    if linker == "bfd":  # GNU ld writes no .comment of its own: no other linker may appear
        return not any(s in text for s in ("mold", "LLD", "gold-version", "Wild"))
    raise AssertionError(linker)


@pytest.mark.parametrize("linker", ["mold", "lld", "rust-lld", "bfd", "gold"])
def test_cargo_build_with_each_linker(workspace, tmp_path, lw_home, linker):
    target = tmp_path / "target"
    done = cargo(workspace, "build", "--quiet", CARGO_TARGET_DIR=str(target), LINKWRAP_LINKER=linker)
    assert done.returncode == 0, done.stderr
    # rustc >= 1.97 shows any linker output as a warning: there must be none (gold's own deprecation
    # warning comes from rustc, not from linkwrap).
    assert "linkwrap" not in done.stderr
    app = target / "debug" / "app"
    assert subprocess.run([str(app)], capture_output=True, text=True).stdout == EXPECTED_OUTPUT
    # Every kind of link went through the linker that was asked for.
    build_scripts = list((target / "debug" / "build").glob("app-*/build-script-build"))
    proc_macros = list((target / "debug" / "deps").glob("libgreet_macros-*.so"))
    assert build_scripts and proc_macros
    for out in [app, *build_scripts, *proc_macros]:
        assert signature_of(linker, sections(out)), f"{out} not linked by {linker}:\n{sections(out)}"


def test_cargo_build_and_test_with_the_real_wild(workspace, tmp_path, lw_home, wild):
    """The real wild (conftest's fixture) links every kind of Cargo output, silently, and its
    memory is recorded (with --no-fork through the script, its worker reaped through the server)."""
    import json
    target = tmp_path / "target"
    env = wild.env(CARGO_TARGET_DIR=str(target), LINKWRAP_LINKER="wild")
    for command in (["build"], ["test"]):
        done = subprocess.run(["cargo", *command, "--quiet"], cwd=workspace, capture_output=True, text=True,
                              env=env, timeout=600)
        assert done.returncode == 0, done.stderr
        assert "linkwrap" not in done.stderr and "WARNING" not in done.stderr + done.stdout
    assert "test result: ok" in done.stdout
    app = target / "debug" / "app"
    assert subprocess.run([str(app)], capture_output=True, text=True).stdout == EXPECTED_OUTPUT
    build_scripts = list((target / "debug" / "build").glob("app-*/build-script-build"))
    proc_macros = list((target / "debug" / "deps").glob("libgreet_macros-*.so"))
    assert build_scripts and proc_macros
    for out in [app, *build_scripts, *proc_macros]:
        assert signature_of("wild", sections(out)), f"{out} not linked by wild:\n{sections(out)}"
    summary = subprocess.run([script("linkwrap"), "summary", "--json", "--all"], cwd=workspace,
                             capture_output=True, text=True)
    links = [link for build in json.loads(summary.stdout)["builds"] for link in build["links"]]
    assert {link["crate_kind"] for link in links} >= {"bin", "build-script", "proc-macro", "test"}
    for link in links:
        assert link["linker"] == "wild" and link["exit_status"] == 0 and link["peak_rss_kb"] > 1000


def test_cargo_test_links_test_binaries(workspace, tmp_path, lw_home):
    done = cargo(workspace, "test", "--quiet", CARGO_TARGET_DIR=str(tmp_path / "target"), LINKWRAP_LINKER="mold")
    assert done.returncode == 0, done.stderr
    assert "binary_prints_the_greeting" in done.stdout or "test result: ok" in done.stdout


def test_cargo_build_passes_with_a_fault_injected_into_linkwrap(workspace, tmp_path, lw_home):
    """Fail-open: linkwrap's policy raising on every link must not fail the build."""
    inject = tmp_path / "inject"
    inject.mkdir()
    # sitecustomize runs at interpreter start (pip's console script keeps site): it breaks the
    # policy the way a bug would, for every link of the build.
    (inject / "sitecustomize.py").write_text(
        "import linkwrap.choice.policy as p\n"
        "def broken(*a, **k):\n    raise RuntimeError('injected policy fault')\n"
        "p.decide = broken\n")
    target = tmp_path / "target"
    done = cargo(workspace, "build", "--quiet", CARGO_TARGET_DIR=str(target), PYTHONPATH=str(inject))
    assert done.returncode == 0, done.stderr
    assert "linkwrap" not in done.stderr
    assert subprocess.run([str(target / "debug" / "app")], capture_output=True, text=True).stdout == EXPECTED_OUTPUT
    log = (lw_home / "linkwrap.log").read_text()
    # every link of the build hit the fault (binary, build script, proc-macro) and was linked as asked
    assert log.count("injected policy fault") >= 3 * 2  # message and traceback line per link


def test_summary_lists_every_link_of_the_build(workspace, tmp_path, lw_home):
    """`linkwrap summary --json` after a build of the example: the binary, the build script and the
    proc-macro, each with real times; after `cargo test`, the test executables too."""
    import json
    target = tmp_path / "target"
    assert cargo(workspace, "build", "--quiet", CARGO_TARGET_DIR=str(target)).returncode == 0
    summary = subprocess.run([script("linkwrap"), "summary", "--json"], cwd=workspace, capture_output=True, text=True)
    assert summary.returncode == 0, summary.stderr
    [build] = json.loads(summary.stdout)["builds"]
    kinds = sorted((link["crate_name"], link["crate_kind"]) for link in build["links"])
    assert kinds == [("app", "bin"), ("app", "build-script"), ("greet_macros", "proc-macro")]
    # nothing measured or learnt yet: the machine default order (wild, where installed: docs/policy.md 1.4),
    # else rustc's own default, never slower than without linkwrap
    first = "wild" if "wild" in machine_linkers() else "rust-lld"
    for link in build["links"]:
        assert link["wall_ms"] > 0 and link["user_ms"] + link["sys_ms"] > 0 and link["peak_rss_kb"] > 1000
        assert link["exit_status"] == 0 and link["linker"] == first and link["write_mode"] == "fresh"
    assert cargo(workspace, "test", "--quiet", "--no-run", CARGO_TARGET_DIR=str(target)).returncode == 0
    summary = subprocess.run([script("linkwrap"), "summary", "--json"], cwd=workspace, capture_output=True, text=True)
    [build] = json.loads(summary.stdout)["builds"]
    tests = [link for link in build["links"] if link["crate_kind"] == "test"]
    assert len(tests) >= 3  # app's unit tests, tests/runs.rs, greet's unit tests (and greet_macros')


def test_every_example_has_a_readme_and_this_ones_output_is_the_programs():
    examples = os.path.dirname(EXAMPLE)
    assert all(os.path.isfile(os.path.join(examples, name, "README.md")) for name in os.listdir(examples))
    with open(os.path.join(EXAMPLE, "README.md"), encoding="utf-8") as f:
        text = f.read()
    shown = text.split("`./target/debug/app` prints:\n\n```\n", 1)[1].split("```", 1)[0]
    assert shown == EXPECTED_OUTPUT


def test_cargo_build_and_test_with_linkwraps_own_linker(workspace, tmp_path, lw_home):
    """LINKWRAP_LINKER=python with no fall-back: linkwrap.ld links the build script, the proc-macro
    (a shared object rustc loads), the binary and the test executables, and the tests pass."""
    target = tmp_path / "target"
    env = dict(CARGO_TARGET_DIR=str(target), LINKWRAP_LINKER="python", LINKWRAP_LD_NO_FALLBACK="1")
    for command in (["build"], ["test"]):
        done = cargo(workspace, *command, "--quiet", **env)
        assert done.returncode == 0, done.stderr
        assert "linkwrap" not in done.stderr
    assert "test result: ok" in done.stdout and "FAILED" not in done.stdout
    app = target / "debug" / "app"
    assert subprocess.run([str(app)], capture_output=True, text=True).stdout == EXPECTED_OUTPUT
    build_scripts = list((target / "debug" / "build").glob("app-*/build-script-build"))
    proc_macros = list((target / "debug" / "deps").glob("libgreet_macros-*.so"))
    tests = [p for p in (target / "debug" / "deps").glob("*-*") if p.suffix == "" and os.access(p, os.X_OK)]
    assert build_scripts and proc_macros and tests
    for out in [app, *build_scripts, *proc_macros, *tests]:
        assert signature_of("python", sections(out)), f"{out} not linked by linkwrap.ld:\n{sections(out)}"


RECORDING_LINKER = """#!{python}
# Records rustc's version script and links the same command line with GNU ld (the reference) beside
# the output, then links through linkwrap-cc as asked.
import os, shutil, subprocess, sys
args = sys.argv[1:]
out = args[args.index("-o") + 1]
scripts = [a.split("=", 1)[1] for a in args if a.startswith("-Wl,--version-script=")]
if scripts:
    rec = os.environ["RECORD_DIR"]
    name = os.path.basename(out)
    shutil.copy(scripts[0], os.path.join(rec, name + ".map"))
    ref = [a for a in args if a != "-fuse-ld=lld" and not (a.startswith("-B") and a.endswith("gcc-ld"))]
    ref[ref.index("-o") + 1] = os.path.join(rec, name + ".gnu")
    subprocess.run(["cc", *ref], check=True)
os.execv({linkwrap_cc!r}, [{linkwrap_cc!r}, *args])
"""


def dynamic_symbols(path):
    """(defined names, undefined names) of .dynsym, without versions."""
    out = subprocess.run(["readelf", "-W", "--dyn-syms", str(path)], capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[0].rstrip(":").isdigit():
            (undefined if f[6] == "UND" else defined).add(f[7].split("@")[0])
    return defined, undefined


def test_the_proc_macros_dynsym_is_what_its_version_script_exports(workspace, tmp_path, lw_home):
    import sys
    rec = tmp_path / "rec"
    rec.mkdir()
    linker = tmp_path / "record-linker"
    linker.write_text(RECORDING_LINKER.format(python=sys.executable, linkwrap_cc=script("linkwrap-cc")))
    linker.chmod(0o755)
    target = tmp_path / "target"
    done = cargo(workspace, "build", "--quiet", CARGO_TARGET_DIR=str(target), LINKWRAP_LINKER="python",
                 LINKWRAP_LD_NO_FALLBACK="1", RECORD_DIR=str(rec),
                 **{f"CARGO_TARGET_{HOST.upper().replace('-', '_')}_LINKER": str(linker)})
    assert done.returncode == 0, done.stderr
    [proc_macro] = (target / "debug" / "deps").glob("libgreet_macros-*.so")
    assert signature_of("python", sections(proc_macro))
    text = (rec / (proc_macro.name + ".map")).read_text()
    # rustc's script: { global: NAME; NAME; local: *; };
    exported = set(text.split("global:", 1)[1].split("local:", 1)[0].replace(";", " ").split())
    assert exported and all(n.startswith(("__rustc_proc_macro_decls_", "rust_metadata_")) for n in exported)
    ours, ours_undefined = dynamic_symbols(proc_macro)
    gnu, gnu_undefined = dynamic_symbols(rec / (proc_macro.name + ".gnu"))
    assert ours == exported == gnu
    # every import GNU ld's output has, this one has (GNU ld drops a few that only dead code names)
    assert gnu_undefined <= ours_undefined
    assert subprocess.run(["eu-elflint", "--gnu-ld", str(proc_macro)], capture_output=True).returncode == 0
