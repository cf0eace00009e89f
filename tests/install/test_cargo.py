"""linkwrap/install/cargo.py: [target.<triple>] linker edits, their exact undo, and a real cargo build."""
import os
import textwrap

import pytest

from conftest import script
from install.buildtools import comment, execs, ran, run
from linkwrap.errors import ConfigError, InstallError
from linkwrap.install import cargo, cargo_checks, marker
from users import other_user  # noqa: F401 (fixture)

HOST = "x86_64-unknown-linux-gnu"
CC = "/opt/linkwrap/bin/linkwrap-cc"

# A config with comments, a [build] table and a foreign [target.…] table.
BASE = textwrap.dedent("""\
    # Project settings (kept by linkwrap)
    [build]
    rustflags = ["-C", "target-cpu=native"]  # fast

    [target.aarch64-unknown-linux-gnu]
    linker = "aarch64-linux-gnu-gcc"   # cross

    [alias]
    b = "build"
    """)

CASES = {
    "no host table": BASE,
    "host table without linker": BASE.replace("[alias]", f"[target.{HOST}]\nrustflags = [\"-g\"]  # debug\n\n[alias]"),
    "indented host table": BASE + f"\n[target.{HOST}]\n    runner = \"valgrind\"\n",
    "no newline at the end": BASE.rstrip("\n"),
    "host header is the last line without newline": BASE + f"[target.{HOST}]",
    "empty file": "",
    "dotted table header": BASE + f"\n[ target . \"{HOST}\" ]\n",
    "header comment with a bracket": BASE.replace("[alias]", f"[target.{HOST}]  # host [x86]\n\n[alias]"),
}


def install(path, force=False, targets=(HOST,)):
    change = cargo.plan_install(str(path), list(targets), CC, force=force)
    change.apply()
    return change


def uninstall(path, targets=None):
    change = cargo.plan_uninstall(str(path), targets)
    change.apply()
    return change


def is_subsequence(small, big) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


@pytest.mark.parametrize("case", CASES)
def test_round_trip_is_byte_identical(tmp_path, case):
    path = tmp_path / "config.toml"
    path.write_bytes(CASES[case].encode())
    install(path)
    text = path.read_text()
    assert cargo.linker_of(cargo.parse(str(path), text.encode()), HOST) == CC
    assert marker.is_ours(text)
    # Every line that was there is still there, in order.
    assert is_subsequence(CASES[case].splitlines(), text.splitlines())
    uninstall(path)
    assert path.read_bytes() == CASES[case].encode()


@pytest.mark.parametrize("case", [c for c in CASES if CASES[c]])
def test_a_crlf_file_gets_crlf_lines_and_its_exact_bytes_back(tmp_path, case):
    path = tmp_path / "config.toml"
    crlf = CASES[case].replace("\n", "\r\n").encode()
    path.write_bytes(crlf)
    install(path)
    data = path.read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n") > crlf.count(b"\n")  # lines added, every one CRLF
    assert cargo.linker_of(cargo.parse(str(path), data), HOST) == CC
    uninstall(path)
    assert path.read_bytes() == crlf


@pytest.mark.parametrize("case", CASES)
def test_second_install_changes_nothing(tmp_path, case):
    path = tmp_path / "config.toml"
    path.write_bytes(CASES[case].encode())
    install(path)
    once = path.read_bytes()
    again = install(path)
    assert not again.changes_anything and "already installed" in again.said[0]
    assert path.read_bytes() == once


def test_existing_linker_is_refused_with_a_hint(tmp_path):
    path = tmp_path / "config.toml"
    original = BASE.replace("[alias]", f"[target.{HOST}]\nlinker = \"clang\"  # mine\n\n[alias]")
    path.write_text(original)
    with pytest.raises(InstallError) as e:
        install(path)
    first, hint = str(e.value).split("\n")
    assert "'clang'" in first and str(path) in first
    assert hint.startswith("hint:") and "--force" in hint
    assert path.read_text() == original


def test_force_takes_over_and_uninstall_restores_the_old_linker(tmp_path):
    path = tmp_path / "config.toml"
    original = BASE.replace("[alias]", f"[target.{HOST}]\nlinker = \"clang\"  # mine\nrustflags = [\"-g\"]\n\n[alias]")
    path.write_text(original)
    install(path, force=True)
    assert cargo.linker_of(cargo.parse(str(path), path.read_bytes()), HOST) == CC
    assert install(path, force=True).changes_anything is False
    done = uninstall(path)
    assert "'clang'" in done.said[0]
    assert path.read_text() == original


def test_new_file_and_directory_are_removed_again(tmp_path):
    path = tmp_path / "proj" / ".cargo" / "config.toml"
    (tmp_path / "proj").mkdir()
    install(path)
    assert path.is_file()
    uninstall(path)
    assert not path.exists() and not path.parent.exists()


@pytest.mark.parametrize("installs, uninstalls", [
    ((("aarch64-unknown-linux-gnu",), (HOST,)), (None,)),
    (((HOST,), ("aarch64-unknown-linux-gnu",)), (None,)),
    ((("aarch64-unknown-linux-gnu",), (HOST,)), ({"aarch64-unknown-linux-gnu"}, {HOST})),
    ((("aarch64-unknown-linux-gnu",), (HOST,)), ({HOST}, {"aarch64-unknown-linux-gnu"})),
    (((HOST, "aarch64-unknown-linux-gnu"),), ({HOST}, None)),
])
def test_new_file_and_directory_go_whatever_the_order_of_installs(tmp_path, installs, uninstalls):
    path = tmp_path / "proj" / ".cargo" / "config.toml"
    (tmp_path / "proj").mkdir()
    for targets in installs:
        install(path, targets=targets)
    for targets in uninstalls:
        uninstall(path, targets)
    assert os.listdir(tmp_path / "proj") == []


def test_existing_empty_cargo_dir_stays(tmp_path):
    path = tmp_path / ".cargo" / "config.toml"
    path.parent.mkdir()
    install(path)
    uninstall(path)
    assert not path.exists() and path.parent.is_dir()


def test_uninstall_keeps_what_the_user_added_since(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(CASES["host table without linker"])
    install(path)
    path.write_text(path.read_text() + "\n[env]\nFOO = \"bar\"\n")
    uninstall(path)
    data = cargo.parse(str(path), path.read_bytes())
    assert data["env"] == {"FOO": "bar"} and "linker" not in data["target"][HOST]
    assert path.read_text() == CASES["host table without linker"] + "\n[env]\nFOO = \"bar\"\n"


def test_uninstall_of_one_target_keeps_the_other(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(BASE)
    other = "riscv64gc-unknown-linux-gnu"
    install(path, targets=(HOST, other))
    uninstall(path, {other})
    data = cargo.parse(str(path), path.read_bytes())
    assert cargo.linker_of(data, HOST) == CC and cargo.linker_of(data, other) is None
    uninstall(path)
    assert path.read_text() == BASE


def test_malformed_config_is_one_line_naming_file_and_line(tmp_path):
    path = tmp_path / "config.toml"
    bad = "[build]\nrustflags = [\"-g\"\n\n[alias]\n"
    path.write_text(bad)
    before = os.stat(path)
    with pytest.raises(ConfigError) as e:
        install(path)
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:4:") and "nothing was changed" in message
    assert path.read_text() == bad and os.stat(path).st_mtime_ns == before.st_mtime_ns


def test_an_edit_that_would_change_other_keys_is_refused(tmp_path):
    # `target` as an inline table: appending [target.<host>] would not be valid TOML.
    path = tmp_path / "config.toml"
    original = 'target = { aarch64-unknown-linux-gnu = { linker = "x" } }\n'
    path.write_text(original)
    with pytest.raises(InstallError) as e:
        install(path)
    assert "hint:" in str(e.value)
    assert path.read_text() == original


def test_fights_are_found_in_env_and_config(tmp_path):
    env = {"RUSTFLAGS": "-C link-arg=-fuse-ld=gold", f"CARGO_TARGET_{HOST.upper().replace('-', '_')}_LINKER": "cc",
           "CARGO_ENCODED_RUSTFLAGS": "-C\x1flinker=clang"}
    data = cargo.parse("c.toml", b'[build]\nrustflags = "-C link-arg=-fuse-ld=lld"\n'
                                 b'[target.x86_64-unknown-linux-gnu]\nrustflags = ["-Clinker=cc"]\n')
    found = cargo_checks.fights([HOST], [("c.toml", data)], env)
    assert len(found) == 5
    assert any(f.startswith("RUSTFLAGS has link-arg=-fuse-ld=gold") for f in found)
    assert any(f.startswith("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER=cc") for f in found)
    assert any("[build] rustflags" in f for f in found) and any(f"[target.{HOST}] rustflags" in f for f in found)
    assert all("\n" not in f for f in found)
    assert cargo_checks.fights([HOST], [], {"RUSTFLAGS": "-C opt-level=3"}) == []


def test_a_nearer_linker_shadows_a_global_install(tmp_path):
    near = cargo.parse("near", f'[target.{HOST}]\nlinker = "clang"\n'.encode())
    far = cargo.parse("far", f'[target.{HOST}]\nlinker = "{CC}"\n'.encode())
    found = cargo_checks.fights([HOST], [("near", near), ("far", far)], {})
    assert found == [f"near sets linker = 'clang' for {HOST}, and Cargo reads it first: linkwrap is not used"]


def test_project_root_is_the_workspace_root(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "Cargo.toml").write_text('[workspace]\nmembers = ["a"]\n')
    (ws / "a" / "src").mkdir(parents=True)
    (ws / "a" / "Cargo.toml").write_text('[package]\nname = "a"\n')
    assert cargo.project_root(str(ws / "a" / "src")) == str(ws)
    solo = tmp_path / "solo"
    (solo / "src").mkdir(parents=True)
    (solo / "Cargo.toml").write_text('[package]\nname = "solo"\n')
    assert cargo.project_root(str(solo / "src")) == str(solo)


def test_legacy_config_without_extension_is_the_one_edited(tmp_path):
    (tmp_path / ".cargo").mkdir()
    (tmp_path / ".cargo" / "config").write_text("[build]\n")
    assert cargo.project_config(str(tmp_path)) == str(tmp_path / ".cargo" / "config")


def test_host_triple_comes_from_rustc():
    assert cargo.host_triple() == HOST


@pytest.fixture
def crate(tmp_path):
    root = tmp_path / "hello"
    run(["cargo", "new", "--quiet", "--vcs", "none", str(root)])
    return root


def test_cargo_build_links_through_linkwrap_cc(crate, tmp_path, lw_home):
    path = cargo.project_config(str(crate))
    cargo.plan_install(path, [HOST], script("linkwrap-cc")).apply()
    env = {"CARGO_TARGET_DIR": str(tmp_path / "target"), "LINKWRAP_LINKER": "mold"}
    done, calls = execs(["cargo", "build", "--quiet"], cwd=crate, env=env, tmp=tmp_path)
    assert len(ran(calls, "linkwrap-cc")) == 1
    binary = tmp_path / "target" / "debug" / "hello"
    assert run([binary]).stdout == "Hello, world!\n"
    # The linker linkwrap was told to use signed the output.
    assert "mold" in comment(binary)
    cargo.plan_uninstall(path).apply()
    assert not os.path.exists(path)


@pytest.mark.parametrize("case", ["no host table", "host table without linker"])
def test_install_from_another_place_moves_linkwraps_own_line(tmp_path, case):
    path = tmp_path / "config.toml"
    path.write_text(CASES[case])
    install(path)
    moved = cargo.plan_install(str(path), [HOST], "/elsewhere/bin/linkwrap-cc")
    moved.apply()
    assert "(was /opt/linkwrap/bin/linkwrap-cc)" in moved.said[0]
    assert cargo.linker_of(cargo.parse(str(path), path.read_bytes()), HOST) == "/elsewhere/bin/linkwrap-cc"
    uninstall(path)
    assert path.read_text() == CASES[case]


def test_a_hand_set_linkwrap_cc_is_not_taken_over_without_force(tmp_path):
    path = tmp_path / "config.toml"
    original = f'[target.{HOST}]\nlinker = "/old/linkwrap-cc"\n'
    path.write_text(original)
    with pytest.raises(InstallError, match="--force"):
        install(path)
    assert path.read_text() == original


def test_write_atomic_keeps_another_users_owner_group_and_mode(tmp_path, other_user):
    """As root, rewriting another user's 0640 config must leave it theirs (issue 31 item 3)."""
    _, uid, gid = other_user
    path = tmp_path / "config.toml"
    path.write_bytes(b"[build]\n")
    os.chown(path, uid, gid)
    os.chmod(path, 0o640)
    marker.write_atomic(str(path), b"[build]\njobs = 2\n")
    st = os.stat(path)
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (uid, gid, 0o640)
    assert path.read_bytes() == b"[build]\njobs = 2\n"
