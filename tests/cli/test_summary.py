"""`linkwrap summary`: real links (cc, cargo with a build script and a proc-macro, mold) -> rows, table, JSON."""
import os
import re
import subprocess
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from conftest import script  # noqa: E402
from linkrecords import c_object, cc_link, lw, summary_json  # noqa: E402


def make_cargo_project(root):
    """A workspace: bin `demo` with a build script, using proc-macro crate `demo_derive` (no crates.io)."""
    files = {
        "Cargo.toml": """\
            [workspace]
            members = ["demo", "demo_derive"]
            resolver = "2"
            """,
        "demo/Cargo.toml": """\
            [package]
            name = "demo"
            version = "0.1.0"
            edition = "2021"
            build = "build.rs"
            [dependencies]
            demo_derive = { path = "../demo_derive" }
            """,
        "demo/build.rs": """\
            fn main() { println!("cargo:rustc-env=DEMO_BUILT=yes"); }
            """,
        "demo/src/main.rs": """\
            demo_derive::answer!();
            fn main() { println!("{} {}", answer(), env!("DEMO_BUILT")); }
            """,
        "demo_derive/Cargo.toml": """\
            [package]
            name = "demo_derive"
            version = "0.1.0"
            edition = "2021"
            [lib]
            proc-macro = true
            """,
        "demo_derive/src/lib.rs": """\
            use proc_macro::TokenStream;
            #[proc_macro]
            pub fn answer(_: TokenStream) -> TokenStream { "fn answer() -> u32 { 42 }".parse().unwrap() }
            """,
        ".cargo/config.toml": f"""\
            [target.x86_64-unknown-linux-gnu]
            linker = "{script('linkwrap-cc')}"
            """,
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def cargo_env(root):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CARGO_TARGET_", "RUSTFLAGS", "LINKWRAP_BUILD"))}
    return {**env, "CARGO_TARGET_DIR": str(root / "target"), "CARGO_NET_OFFLINE": "true"}


def test_a_cargo_build_lists_every_link_with_real_times(tmp_path, lw_home):
    root = make_cargo_project(tmp_path / "ws")
    env = cargo_env(root)
    done = subprocess.run(["cargo", "build", "--offline"], cwd=root, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr  # the links printed nothing
    assert subprocess.run([root / "target/debug/demo"], capture_output=True, text=True).stdout == "42 yes\n"

    data = summary_json(cwd=root, env={"LINKWRAP_HOME": str(lw_home)})
    [b] = data["builds"]
    assert b["tool"] == "cargo" and "build" in b["command"]
    kinds = sorted((l["crate_name"], l["crate_kind"]) for l in b["links"])
    assert kinds == [("demo", "bin"), ("demo", "build-script"), ("demo_derive", "proc-macro")]
    for l in b["links"]:
        assert l["wall_ms"] > 0 and l["cpu_ms"] > 0 and l["peak_rss_kb"] > 0 and l["output_bytes"] > 0
        assert l["exit_status"] == 0 and os.path.exists(l["output_path"])
    walls = [l["wall_ms"] for l in b["links"]]
    assert walls == sorted(walls, reverse=True)  # slowest first
    assert b["totals"]["links"] == 3 and abs(b["totals"]["wall_ms"] - sum(walls)) < 1e-6

    # The table shows the same build; a second build (after a change) becomes "the last build".
    table = lw("summary", cwd=root, env={"LINKWRAP_HOME": str(lw_home), "COLUMNS": "150"}).stdout
    assert "demo_derive" in table and "proc-macro" in table and "build-script" in table and "3 links" in table
    (root / "demo/src/main.rs").write_text('demo_derive::answer!();\nfn main() { println!("{}", answer()); }\n')
    assert subprocess.run(["cargo", "build", "--offline"], cwd=root, env=env, capture_output=True).returncode == 0
    last = summary_json(cwd=root, env={"LINKWRAP_HOME": str(lw_home)})["builds"][0]
    assert [(l["crate_name"], l["crate_kind"]) for l in last["links"]] == [("demo", "bin")]
    assert len(summary_json("--all", cwd=root)["builds"]) == 2
    assert summary_json("--build", str(b["id"]), cwd=root)["builds"][0]["totals"]["links"] == 3


def peak_rss_kb_under_time(argv, cwd):
    done = subprocess.run(["/usr/bin/time", "-v", *argv], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))


def test_a_mold_links_recorded_peak_rss_is_molds_own(tmp_path, lw_home):
    # 300 MB of .data: far above the ~20 MB a Python process starts with.
    blob = tmp_path / "blob.bin"
    with open(blob, "wb") as f:
        f.truncate(300 << 20)
    subprocess.run(["objcopy", "-I", "binary", "-O", "elf64-x86-64", "-B", "i386:x86-64",
                    "--rename-section", ".data=.data,alloc,load,data,contents", "blob.bin", "blob.o"],
                   cwd=tmp_path, check=True)
    main = c_object(tmp_path, "main", "extern char _binary_blob_bin_start[];\n"
                                      "int main(void){return _binary_blob_bin_start[12345];}\n")
    args = [main, "blob.o", "-fuse-ld=mold", "-Wl,--no-fork"]
    done = cc_link([*args, "-o", "wrapped"], tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    [link] = summary_json(cwd=tmp_path)["builds"][0]["links"]
    assert link["output_bytes"] > 300 << 20

    no_fork = peak_rss_kb_under_time(["cc", *args, "-o", "reference"], tmp_path)
    forking = peak_rss_kb_under_time(["cc", main, "blob.o", "-fuse-ld=mold", "-o", "forked"], tmp_path)
    print(f"peak RSS kB: recorded {link['peak_rss_kb']}, --no-fork under time {no_fork}, fork {forking}")
    assert abs(link["peak_rss_kb"] - no_fork) <= 0.2 * no_fork, (link["peak_rss_kb"], no_fork)
    assert no_fork > 200_000 and forking < no_fork / 3, (no_fork, forking)


def test_the_json_of_an_empty_store_has_no_builds(tmp_path, lw_home):
    data = summary_json(cwd=tmp_path)
    assert data["builds"] == [] and data["totals"]["links"] == 0
    assert "No link records yet" in lw("summary", cwd=tmp_path).stdout


def test_since_and_a_bad_build_id_and_a_bad_since(tmp_path, lw_home):
    obj = c_object(tmp_path)
    assert cc_link([obj, "-o", "a"], tmp_path).returncode == 0
    assert summary_json("--since", "10m", cwd=tmp_path)["totals"]["links"] == 1
    assert summary_json("--since", "2999-01-01", cwd=tmp_path)["totals"]["links"] == 0
    bad = lw("summary", "--build", "9999", cwd=tmp_path, check=False)
    assert bad.returncode == 1 and bad.stderr.strip() == \
        "linkwrap: error: no build '9999' in the records (see `linkwrap summary --all`)"
    bad = lw("summary", "--since", "yesterday", cwd=tmp_path, check=False)
    assert bad.returncode == 1 and bad.stderr.startswith("linkwrap: error: --since 'yesterday'")
    assert "Traceback" not in bad.stderr


def test_a_ninja_build_is_one_build_and_its_ninja_log_gives_the_linking_share(tmp_path, lw_home):
    for i in range(3):
        (tmp_path / f"p{i}.c").write_text("int main(void){return 0;}\n")
    rules = "".join(f"build p{i}.o: cc p{i}.c\nbuild p{i}: link p{i}.o\n" for i in range(3))
    (tmp_path / "build.ninja").write_text(
        "rule cc\n  command = cc -c $in -o $out\n"
        f"rule link\n  command = {script('linkwrap-cc')} $in -o $out\n" + rules)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINKWRAP_BUILD")}
    subprocess.run(["ninja"], cwd=tmp_path, check=True, capture_output=True, env=env)
    data = summary_json(cwd=tmp_path)  # ./.ninja_log is read: it is this build's
    [b] = data["builds"]
    assert b["tool"] == "ninja" and b["totals"]["links"] == 3
    share = b["linking"]
    assert share["version"] == 5 and share["link_edges"] == 3 and not share["links_guessed"]
    assert 0 < share["link_busy_ms"] <= share["wall_ms"] and 0 < share["link_share"] <= 1
    out = lw("summary", cwd=tmp_path, env={"COLUMNS": "150"}).stdout
    assert "from .ninja_log v5" in out


def test_a_bad_ninja_log_given_is_an_error_and_a_bad_one_found_is_a_warning(tmp_path, lw_home):
    obj = c_object(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINKWRAP_BUILD")}
    (tmp_path / ".ninja_log").write_text("# ninja log v5\nnot a line\n0\t1\t2\tx\th\n")
    # A link run from a shell in this directory: the build's cwd is here, so ./.ninja_log is read.
    assert subprocess.run(["sh", "-c", f"cd {tmp_path} && {script('linkwrap-cc')} {obj} -o a"],
                          env=env).returncode == 0
    found = lw("summary", cwd=tmp_path)
    assert "linkwrap: warning:" in found.stderr and ".ninja_log:2: expected 5 tab-separated fields" in found.stderr
    assert "1 links" in found.stdout
    given = lw("summary", "--ninja-log", ".ninja_log", cwd=tmp_path, check=False)
    assert given.returncode == 1 and given.stderr.strip() == \
        "linkwrap: error: .ninja_log:2: expected 5 tab-separated fields (start_ms, end_ms, mtime, output, hash)"
