"""ld --incremental under a real `cargo build`: rustc names its objects anew every build (a salt in
each codegen unit's name, a temporary directory for symbols.o and -L …/raw-dylibs); the relink
matches them by what stays, and an edit of one function patches the output instead of a full link."""
import glob
import os
import stat
import subprocess

from tests import cargokit

from .. import corpus

MAIN = """mod other;
fn main() {
    println!("{} {}", other::value(3) * MULT, other::name());
}
"""
OTHER = """pub fn value(x: u64) -> u64 { x + 1 }
pub fn name() -> &'static str { "other" }
"""


def _linker(root):
    """cc with linkwrap-ld as its GNU ld (the caller's -fuse-ld=bfd after rustc's own -fuse-ld=lld)."""
    shim = corpus.shim_dir(root)
    if not os.path.exists(os.path.join(shim, "ld.bfd")):
        os.symlink(corpus.linkwrap_ld(), os.path.join(shim, "ld.bfd"))
    script = os.path.join(root, "incremental-cc")
    with open(script, "w") as f:
        f.write(f'#!/bin/sh\nexec cc "$@" -B{shim} -fuse-ld=bfd '
                '-Wl,--incremental,--incremental-why,--incremental-check\n')
    os.chmod(script, stat.S_IRWXU)
    return script


def test_an_edit_of_one_function_in_a_cargo_build_is_patched(tmp_path):
    crate = cargokit.new_crate(tmp_path, "app")
    with open(os.path.join(crate, "src", "other.rs"), "w") as f:
        f.write(OTHER)
    env = {**os.environ, cargokit.env_name(cargokit.host_triple()): _linker(str(tmp_path)),
           "CARGO_TARGET_DIR": str(tmp_path / "target")}
    env.pop("RUSTFLAGS", None)
    decisions = []
    for mult in (2, 5, 7):
        with open(os.path.join(crate, "src", "main.rs"), "w") as f:
            f.write(MAIN.replace("MULT", str(mult)))
        subprocess.run(["cargo", "build", "--quiet"], cwd=crate, env=env, check=True, capture_output=True)
        out = subprocess.run([str(tmp_path / "target" / "debug" / "app")], capture_output=True, text=True)
        assert out.stdout == f"{4 * mult} other\n"
        [last] = glob.glob(str(tmp_path / "target" / "debug" / "deps" / ".app-*.lwinc" / "last"))
        with open(last) as f:
            decisions.append(f.read().strip())
    # the first build is the base; each edit after it patches (--incremental-check: byte-identical to a
    # link from scratch into the same layout, or the link would have failed)
    assert decisions[0].startswith("full"), decisions
    assert all(d.startswith("patched 1 input(s): ") and d.endswith(".rcgu.o") for d in decisions[1:]), decisions


def test_through_the_wrapper_the_state_stays_beside_the_output_and_edits_are_patched(tmp_path, lw_home):
    """linkwrap-cc as Cargo's linker, its own linker asked for and told to link incrementally: the
    wrapper writes each link in a private directory and renames it over the output, so the state must
    be kept beside the output it is for (LINKWRAP_LD_OUTPUT), not in that directory, which goes."""
    from conftest import script
    crate = cargokit.new_crate(tmp_path, "app")
    with open(os.path.join(crate, "src", "other.rs"), "w") as f:
        f.write(OTHER)
    env = {**os.environ, cargokit.env_name(cargokit.host_triple()): script("linkwrap-cc"),
           "CARGO_TARGET_DIR": str(tmp_path / "target"), "LINKWRAP_LINKER": "python",
           "LINKWRAP_LD_INCREMENTAL": "1", "LINKWRAP_LD_NO_FALLBACK": "1"}
    env.pop("RUSTFLAGS", None)
    deps = tmp_path / "target" / "debug" / "deps"
    decisions = []
    for mult in (2, 5, 7):
        with open(os.path.join(crate, "src", "main.rs"), "w") as f:
            f.write(MAIN.replace("MULT", str(mult)))
        done = subprocess.run(["cargo", "build", "--quiet"], cwd=crate, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        out = subprocess.run([str(tmp_path / "target" / "debug" / "app")], capture_output=True, text=True)
        assert out.stdout == f"{4 * mult} other\n"
        [last] = glob.glob(str(deps / ".app-*.lwinc" / "last"))
        with open(last) as f:
            decisions.append(f.read().strip())
    assert decisions[0].startswith("full"), decisions
    assert all(d.startswith("patched 1 input(s): ") and d.endswith(".rcgu.o") for d in decisions[1:]), decisions
    # the linker really was linkwrap's own (its .comment), and nothing was left in the private directory
    comment = subprocess.run(["readelf", "-p", ".comment", str(tmp_path / "target" / "debug" / "app")],
                             capture_output=True, text=True).stdout
    assert "linkwrap" in comment, comment
    assert not (deps / ".linkwrap-tmp").exists()
