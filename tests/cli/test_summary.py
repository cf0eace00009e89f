"""`linkwrap summary`: real links (cc, cargo with a build script and a proc-macro, mold) -> rows, table, JSON."""
import os
import re
import subprocess
import sys
import textwrap
import time
import json

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from conftest import script  # noqa: E402
from linkrecords import c_object, cc_link, db_rows, lw, spool_record, summary_json  # noqa: E402


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
    assert b["totals"]["links"] == 3 and abs(b["totals"]["wall_ms"] - sum(walls)) <= 0.0005 * (len(walls) + 1)  # JSON rounds to 0.001

    # The table shows the same build; a second build (after a change) becomes "the last build".
    table = lw("summary", cwd=root, env={"LINKWRAP_HOME": str(lw_home), "COLUMNS": "150"}).stdout
    assert "demo_derive (proc-macro)" in table and "demo (build script)" in table and "3 links" in table
    # On 80 columns: whole names with their kind, a header that does not wrap, nothing wider.
    narrow = lw("summary", cwd=root, env={"LINKWRAP_HOME": str(lw_home), "COLUMNS": "80"}).stdout
    lines = narrow.splitlines()
    assert all(len(line) <= 80 for line in lines), narrow
    assert lines[0].startswith("build 1  cargo  3 links  ") and "cargo" in lines[0]
    names = {line.split("  ")[0].strip() for line in lines}
    assert {"demo (build script)", "demo", "demo_derive (proc-macro)"} <= names, narrow
    assert "linkwrap's own time:" in narrow and "starting Python and loading linkwrap" in narrow
    assert "choosing a linker and recording the link" in narrow
    assert "overhead_ms" in data["notes"] and "start-up" in data["notes"]["overhead_ms"]
    assert all(l["startup_ms"] > 0 for l in b["links"])
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
    # In a project a number is the project's own (it has one build); across projects, the #id.
    bad = lw("summary", "--build", "2", cwd=tmp_path, check=False)
    [project] = {r["project_dir"] for r in db_rows(lw_home, "SELECT project_dir FROM builds")}
    assert bad.returncode == 2 and bad.stderr.strip() == (
        f"linkwrap: error: no build 2 in the project in {project}: it has 1 (see `linkwrap summary --all`; "
        "`--all-projects --build N` takes the number across every project)"), bad.stderr
    bad = lw("summary", "--all-projects", "--build", "9999", cwd=tmp_path, check=False)
    assert bad.returncode == 2 and bad.stderr.strip() == \
        "linkwrap: error: no build '9999' in the records (see `linkwrap summary --all`)"
    bad = lw("summary", "--since", "yesterday", cwd=tmp_path, check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("linkwrap: error: --since 'yesterday'")
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
    # The line folds where its figures' widths put the 150th column: read it unfolded.
    assert "from .ninja_log v5" in " ".join(out.split()), out


def ninja_links(tmp_path, n=3):
    """A real ninja build of n programs, each linked through linkwrap-cc."""
    for i in range(n):
        (tmp_path / f"p{i}.c").write_text("int main(void){return 0;}\n")
    rules = "".join(f"build p{i}.o: cc p{i}.c\nbuild p{i}: link p{i}.o\n" for i in range(n))
    (tmp_path / "build.ninja").write_text(
        "rule cc\n  command = cc -c $in -o $out\n"
        f"rule link\n  command = {script('linkwrap-cc')} $in -o $out\n"
        "rule note\n  command = echo note > $out\n"
        "build note.txt: note\n" + rules)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINKWRAP_BUILD")}
    subprocess.run(["ninja", *[f"p{i}" for i in range(n)]], cwd=tmp_path, check=True, capture_output=True, env=env)
    return env


def test_a_bad_ninja_log_given_is_an_error_and_a_bad_one_found_is_a_warning(tmp_path, lw_home):
    ninja_links(tmp_path)
    bad = len((tmp_path / ".ninja_log").read_text().splitlines()) + 1
    with open(tmp_path / ".ninja_log", "a") as f:
        f.write("not a line\n0\t1\t2\tx\th\n")  # a damaged log of this very build
    found = lw("summary", cwd=tmp_path)
    assert "linkwrap: warning:" in found.stderr and f".ninja_log:{bad}: expected 5 tab-separated" in found.stderr
    assert "3 links" in found.stdout and "Linking:" not in found.stdout
    given = lw("summary", "--ninja-log", ".ninja_log", cwd=tmp_path, check=False)
    assert given.returncode == 1 and given.stderr.strip() == \
        f"linkwrap: error: .ninja_log:{bad}: expected 5 tab-separated fields (start_ms, end_ms, mtime, output, hash)"


def test_a_script_linking_beside_an_older_ninja_log_says_nothing_about_ninja(tmp_path, lw_home):
    ninja_links(tmp_path)
    obj = c_object(tmp_path, "m")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINKWRAP_BUILD")}
    loop = f"cd {tmp_path} && for i in $(seq 30); do {script('linkwrap-cc')} {obj} -o s$i || exit 1; done"
    assert subprocess.run(["sh", "-c", loop], env=env).returncode == 0
    [b] = summary_json(cwd=tmp_path)["builds"]
    assert b["tool"] == "sh" and b["totals"]["links"] == 30 and b["linking"] is None
    out = lw("summary", cwd=tmp_path, env={"COLUMNS": "120"})
    assert "ninja" not in out.stdout and "Linking:" not in out.stdout and out.stderr == ""
    # Named by hand, the log is still not this build's: said on stderr, and not used.
    given = lw("summary", "--json", "--ninja-log", ".ninja_log", cwd=tmp_path)
    assert json.loads(given.stdout)["builds"][0]["linking"] is None
    # named as the summary names the build (its number in the project: the ninja build came first)
    assert given.stderr.startswith(f"linkwrap: warning: .ninja_log is not used for {b['name']}: ") and \
        "not run by ninja (it was run by sh)" in given.stderr


def test_a_later_ninja_run_that_linked_nothing_takes_the_log_away_from_the_earlier_build(tmp_path, lw_home):
    env = ninja_links(tmp_path)
    [b] = summary_json(cwd=tmp_path)["builds"]
    assert b["linking"]["link_edges"] == 3  # the log's last run is this build's
    subprocess.run(["ninja", "note.txt"], cwd=tmp_path, check=True, capture_output=True, env=env)
    [again] = summary_json(cwd=tmp_path)["builds"]
    assert again["id"] == b["id"] and again["linking"] is None
    assert "Linking:" not in lw("summary", cwd=tmp_path).stdout


def test_a_record_without_an_output_never_becomes_the_last_build(tmp_path, lw_home):
    obj = c_object(tmp_path)
    assert cc_link([obj, "-o", "a"], tmp_path).returncode == 0
    [linked] = summary_json(cwd=tmp_path)["builds"]
    # `linkwrap-cc --help` as an older pipeline recorded it: no output, a build of its own, later.
    spool_record(lw_home, build_key="sh:1:2:x", build_tool="sh", argv=("--help",), output_path=None,
                 started_unix=time.time() + 5)
    [last] = summary_json(cwd=tmp_path)["builds"]
    assert last["id"] == linked["id"] and last["totals"]["links"] == 1
    assert [b["id"] for b in summary_json("--all", cwd=tmp_path)["builds"]] == [linked["id"]]


def test_the_counts_of_failures_and_fall_backs_are_the_records(tmp_path, lw_home):
    (tmp_path / "f.c").write_text("int f(void){return 1;}\n")
    subprocess.run(["cc", "-fPIC", "-c", "f.c"], cwd=tmp_path, check=True)
    obj = c_object(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINKWRAP_BUILD")}
    steps = (f"{script('linkwrap-cc')} {obj} -o ok; "
             f"LINKWRAP_LINKER=python {script('linkwrap-cc')} -shared -Wl,-z,pack-relative-relocs f.o -o libf.so; "
             f"{script('linkwrap-cc')} missing.o -o nope 2>/dev/null; "                    # fails
             "true")
    assert subprocess.run(["sh", "-c", f"cd {tmp_path} && {steps}"], env=env).returncode == 0
    rows = db_rows(lw_home)
    failed = sum(1 for r in rows if r["exit_status"] != 0)
    # A link that failed as asked after its chosen linker failed is a failure and a fall-back: the
    # table counts what each link's JSON says (fell_back: true).
    fell_back = sum(1 for r in rows if r["fell_back"] or (r["fault"] and r["exit_status"] == 0))
    assert (len(rows), failed, fell_back) == (3, 1, 2)
    [b] = summary_json(cwd=tmp_path)["builds"]
    assert (b["totals"]["failures"], b["totals"]["fell_back"]) == (failed, fell_back)
    assert b["totals"]["fell_back"] == sum(1 for l in b["links"] if l["fell_back"])
    fb = {l["crate_name"]: l for l in b["fell_back"]}
    assert sorted(fb) == ["libf.so", "nope"]
    assert fb["libf.so"]["first_linker"].startswith("python ")
    assert "not supported yet: -z pack-relative-relocs" in fb["libf.so"]["first_error"]
    table = lw("summary", cwd=tmp_path, env={"COLUMNS": "80"}).stdout
    assert "linked as asked instead (2):" in table and "libf.so: python " in table
    assert "failed (1) after fall-back" in table
    assert "linkwrap-ld: not supported yet: -z pack-relative-relocs" in table
    assert "failed: nope" in table
    # A second build, so that --all shows the builds table and its failed/fell back column.
    assert subprocess.run(["sh", "-c", f"cd {tmp_path} && {script('linkwrap-cc')} {obj} -o two"],
                          env=env).returncode == 0
    many = lw("summary", "--all", cwd=tmp_path, env={"COLUMNS": "80"}).stdout
    row = next(line for line in many.splitlines() if line.strip().startswith(f"{b['id']} "))
    assert row.split()[-1] == f"{failed}/{fell_back}", many


def test_an_unknown_option_shows_the_summary_usage(tmp_path, lw_home):
    done = lw("summary", "--frob", cwd=tmp_path, check=False)
    assert done.returncode == 2
    assert done.stderr.startswith("usage: linkwrap summary ") and \
        "linkwrap summary: error: unrecognized arguments: --frob" in done.stderr
    for argv in (("report", "--html", "x.html", "--frob"), ("log", "status", "--frob"),
                 ("run", "--frob", "--", "true")):
        done = lw(*argv, cwd=tmp_path, check=False)
        assert done.returncode == 2 and done.stderr.startswith(f"usage: linkwrap {argv[0]} "), done.stderr


def test_two_projects_built_alternately_each_see_their_own_builds(tmp_path, lw_home):
    # A Cargo package and a hand-written ninja project, built in turn, twice.
    rs = tmp_path / "rs"
    (rs / "src").mkdir(parents=True)
    (rs / "Cargo.toml").write_text('[package]\nname = "rsapp"\nversion = "0.1.0"\nedition = "2021"\n')
    (rs / "src" / "main.rs").write_text('fn main() { println!("one"); }\n')
    (rs / ".cargo").mkdir()
    (rs / ".cargo" / "config.toml").write_text(f'[target.x86_64-unknown-linux-gnu]\nlinker = "{script("linkwrap-cc")}"\n')
    nj = tmp_path / "nj"
    nj.mkdir()
    for round_ in range(2):
        subprocess.run(["cargo", "build", "-q"], cwd=rs, check=True, env=cargo_env(rs), capture_output=True)
        ninja_links(nj, n=2)
        # The next round relinks both.
        (rs / "src" / "main.rs").write_text(f'fn main() {{ println!("{round_}"); }}\n')
        for i in range(2):
            (nj / f"p{i}.c").write_text(f"int main(void){{return {round_};}}\n")
    # A `linkwrap run` that links nothing is a build, but not listed unless asked.
    lw("run", "--quiet", "--", "true", cwd=rs)

    mine = summary_json("--all", cwd=rs / "src")  # anywhere inside the project
    assert mine["scope"]["project_dir"] == str(rs)
    assert [b["tool"] for b in mine["builds"]] == ["cargo", "cargo"]
    assert all(l["crate_name"] == "rsapp" for b in mine["builds"] for l in b["links"])
    theirs = summary_json("--all", cwd=nj)
    assert [b["tool"] for b in theirs["builds"]] == ["ninja", "ninja"]
    assert {l["crate_name"] for b in theirs["builds"] for l in b["links"]} == {"p0", "p1"}
    # The last build here is this project's, although the ninja build came after it.
    [last] = summary_json(cwd=rs)["builds"]
    assert last["id"] == mine["builds"][-1]["id"]
    everything = summary_json("--all", "--all-projects", cwd=rs)
    assert len(everything["builds"]) == 4 and everything["scope"]["project_dir"] is None
    with_empty = summary_json("--all", "--empty", cwd=rs)
    assert len(with_empty["builds"]) == 3 and with_empty["builds"][-1]["totals"]["links"] == 0

    # A project with no builds yet says so rather than showing another project's.
    other = tmp_path / "other"
    other.mkdir()
    (other / "Cargo.toml").write_text('[package]\nname = "other"\nversion = "0.1.0"\n')
    out = lw("summary", cwd=other).stdout
    assert out == f"No builds recorded for the project in {other} (`--all-projects` shows every project's).\n"
    status = lw("log", "status", cwd=nj).stdout
    assert f"This project: 4 links in 2 builds ({nj};" in status
    page = lw("report", "--html", "-", cwd=rs).stdout
    # Its two builds of one link each: a table row each, or a timeline bar each.
    assert page.count('class="link-bar"') + page.count('<td id="build-') == 2 and "p0" not in page

    # Builds are numbered per project (issue 37): ninja's first build here is its build 1, though
    # a cargo build was recorded before it; the listing's numbers are what --build takes.
    assert [b["project_build"] for b in theirs["builds"]] == [1, 2] and theirs["builds"][0]["id"] > 1
    assert [(b["name"], b["number"]) for b in theirs["builds"]] == [("build 1", "1"), ("build 2", "2")]
    [first] = summary_json("--build", "1", cwd=nj)["builds"]
    assert first["id"] == theirs["builds"][0]["id"] and first["name"] == "build 1"
    assert lw("summary", "--build", "1", cwd=nj, env={"COLUMNS": "150"}).stdout.startswith("build 1  ninja  2 links")
    listed = lw("summary", "--all", cwd=nj, env={"COLUMNS": "150"}).stdout.splitlines()
    assert [line.split()[0] for line in listed if " ninja " in line] == ["1", "2"], listed
    # Across every project: the number counting every project's (#id), which --all-projects --build
    # takes, and the project it is of.
    across = [b for b in everything["builds"] if b["tool"] == "ninja"]
    assert [b["number"] for b in across] == [f"#{b['id']}" for b in across]
    assert across[0]["name"] == f"build 1 of nj (#{across[0]['id']})"
    [same] = summary_json("--all-projects", "--build", str(across[0]["id"]), cwd=rs)["builds"]
    assert same["id"] == across[0]["id"]
    # explain and the report name a build as the summary does.
    explained = lw("explain", cwd=nj, env={"COLUMNS": "200"}).stdout
    assert " UTC, build 2)" in explained, explained
    page = lw("report", "--html", "-", cwd=nj).stdout
    assert ">Build 2 · ninja · " in page and ">Build 1 · ninja · " in page and "build #" not in page.lower()


def test_a_forced_linker_that_is_not_installed_is_said_by_summary_status_and_config(tmp_path, lw_home):
    # wild is found on PATH only: without its directory it is a known linker that is not installed
    path = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep)
                           if d and not os.access(os.path.join(d, "wild"), os.X_OK))
    env = {"PATH": path, "LINKWRAP_LINKER": "wild"}
    obj = c_object(tmp_path)
    # One line on stderr, once per build (both links here are of one build: this test's process's)
    said_once = ("linkwrap: warning: LINKWRAP_LINKER=wild, but wild is not installed: this build links with "
                 "linkwrap's usual choice (said once per build; `linkwrap config` shows what is installed)\n")
    for out, stderr in (("a", said_once), ("b", "")):
        done = cc_link([obj, "-o", out], cwd=tmp_path, env=env)
        assert done.returncode == 0 and done.stdout == "" and done.stderr == stderr, done.stderr
    [used] = {r["linker_version"] for r in db_rows(lw_home)}
    said = f"forced linker wild is not installed (LINKWRAP_LINKER=wild; 2 links used {used})"
    text = lw("summary", cwd=tmp_path, env={"COLUMNS": "200"}).stdout
    assert said in text, text
    data = summary_json(cwd=tmp_path)
    assert data["forced_missing"] == [{"linker": "wild", "links": 2, "used": {used: 2}}]
    assert data["builds"][0]["forced_missing"] == data["forced_missing"]
    text = lw("status", cwd=tmp_path).stdout
    assert f"warning: {said} in build 1\n" in text, text
    text = lw("config", cwd=tmp_path, env=env).stdout
    assert "warning: forced linker wild is not installed: links choose as usual (LINKWRAP_LINKER=wild; installed: " in text
    assert json.loads(lw("config", "--json", cwd=tmp_path, env=env).stdout)["forced_not_installed"] == "wild"
    # an installed forced linker is nothing to say
    assert "forced linker" not in lw("config", cwd=tmp_path, env={"LINKWRAP_LINKER": "mold"}).stdout
    cc_link([obj, "-o", "c"], cwd=tmp_path, env={"LINKWRAP_LINKER": "mold"})
    assert summary_json("--all", cwd=tmp_path)["forced_missing"][0]["links"] == 2
    # Another build is told again.
    done = cc_link([obj, "-o", "b"], cwd=tmp_path, env={**env, "LINKWRAP_BUILD_ID": "another-build"})
    assert done.returncode == 0 and done.stderr == said_once, done.stderr


def test_a_cmake_builds_links_belong_to_its_project_from_the_source_or_the_build_directory(tmp_path, lw_home):
    # Another project built first: its build must never pass for this one's.
    ctr = tmp_path / "ctr"
    ctr.mkdir()
    ninja_links(ctr, n=1)
    cm = tmp_path / "cm"
    cm.mkdir()
    (cm / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.16)\nproject(cm C)\n"
                                       "add_executable(app main.c)\n")
    (cm / "main.c").write_text("int main(void){return 0;}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINKWRAP_BUILD")}
    # No builds of cm yet: in its source directory the summary says so, not ctr's build.
    out = lw("summary", cwd=cm).stdout
    assert out == f"No builds recorded for the project in {cm} (`--all-projects` shows every project's).\n"
    subprocess.run(["cmake", "-G", "Ninja", "-S", ".", "-B", "build",
                    f"-DCMAKE_C_LINKER_LAUNCHER={script('linkwrap-launch')}"], cwd=cm, check=True,
                   capture_output=True, env=env)
    subprocess.run(["ninja", "-C", "build"], cwd=cm, check=True, capture_output=True, env=env)
    for where in (cm, cm / "build"):
        data = summary_json(cwd=where)
        assert data["scope"]["project_dir"] == str(cm), where
        [b] = data["builds"]
        assert b["tool"] == "ninja" and [os.path.basename(l["output_path"]) for l in b["links"]] == ["app"]
    assert f"This project: 1 link in 1 build ({cm};" in lw("log", "status", cwd=cm).stdout
    # Outside every project the last build of any is shown, and said to be another project's.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = lw("summary", cwd=elsewhere, env={"COLUMNS": "200"}).stdout
    assert out.startswith(f"The current directory is in no recorded project: the last build of every "
                          f"project's, in {cm} ")


def test_a_full_disk_fall_back_is_counted_alike_in_the_table_and_the_json(tmp_path, lw_home):
    # A 1 MiB tmpfs: mold (forced) fails for want of space, and so does the link as asked. The table
    # counts the fall-back the JSON records, and shows mold's own error, not only GNU ld's.
    import mounts
    (tmp_path / "big.cc").write_text("#include <string>\nstatic char blob[4 << 20] = {1};\n"
                                     "int main(){ std::string s(\"x\"); return blob[0] + s.size() - 2; }\n")
    subprocess.run(["g++", "-c", "big.cc"], cwd=tmp_path, check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINKWRAP_BUILD")}
    with mounts.tmpfs_mount(tmp_path, "size=1m") as point:
        done = subprocess.run([script("linkwrap"), "run", "--", script("linkwrap"), "launch", "--", "g++", "big.o",
                               "-o", os.path.join(point, "app")], cwd=tmp_path, capture_output=True, text=True,
                              env={**env, "LINKWRAP_LINKER": "mold"})
    assert done.returncode != 0 and "No space left on device" in done.stderr, done.stderr
    [b] = summary_json(cwd=tmp_path)["builds"]
    [link] = b["links"]
    assert link["fell_back"] and link["first_linker"].startswith("mold ") and link["failed"]
    assert (b["totals"]["failures"], b["totals"]["fell_back"]) == (1, 1)
    table = lw("summary", cwd=tmp_path, env={"COLUMNS": "300"}).stdout
    assert "linked as asked instead (1):" in table and link["first_linker"] in table, table
    assert link["first_error"] in table, table
    assert "after fall-back" in table, table


def test_summary_leads_with_the_time_against_the_callers_default_once_bench_measured_it(tmp_path, lw_home):
    c_object(tmp_path, "m", big=True)
    cc = script("linkwrap-cc")
    env = {"LINKWRAP_SAVE": "1", "LINKWRAP_LINKER": "mold", "COLUMNS": "200"}
    lw("run", "--quiet", "--", cc, "m.o", "-o", "app", cwd=tmp_path, env=env)
    lines = lw("summary", cwd=tmp_path, env=env).stdout.splitlines()
    # First, after which build it is: what the user installed linkwrap for, honestly not known yet.
    assert lines[0].startswith("build 1  "), lines
    assert lines[2].startswith("Linked in ") and "not measured yet" in lines[2] and "saved" not in lines[2], lines
    assert "This project, 1 build (1 link): what the default linker would have taken is not measured yet" == lines[3]
    # bench replays the saved link with mold and with the caller's default, GNU ld.
    lw("bench", "--budget", "1", "--linker", "mold", "--linker", "bfd", "app", cwd=tmp_path, env=env)
    lw("run", "--quiet", "--", cc, "m.o", "-o", "app", cwd=tmp_path, env=env)
    data = summary_json(cwd=tmp_path, env=env)
    [b] = data["builds"]
    [l] = b["links"]
    [bench] = db_rows(lw_home, "SELECT * FROM bench_results WHERE linker = 'mold' AND variant = 'fresh'")
    assert l["linker"] == "mold" and bench["ratio_vs"] == "bfd" and b["project_build"] == 2
    default_ms = l["wall_ms"] / bench["ratio_median"]
    s = b["saved"]
    assert s["measured_links"] == s["links"] == 1 and abs(s["default_ms"] - default_ms) < 0.01  # --json rounds
    assert abs(s["saved_ms"] - (default_ms - l["wall_ms"])) < 0.01
    from linkwrap.report.render import fmt_ms
    [label] = {r["linker_label"] for r in db_rows(lw_home, "SELECT * FROM bench_results WHERE linker = 'bfd'")}
    lines = lw("summary", cwd=tmp_path, env=env).stdout.splitlines()
    assert lines[0].startswith("build 2  "), lines
    assert lines[2].startswith(f"Linked in {fmt_ms(l['wall_ms'])}; the default linker ({label}) would take "
                               f"~{fmt_ms(default_ms)} (measured): "), lines
    # Over the project's history: both builds, and both links measured (the first was mold's too).
    assert data["history"]["builds"] == 2 and data["history"]["measured_links"] == 2
    assert lines[3].startswith("This project, 2 builds (2 links): ") and lines[3].endswith(
        f"against the default linker ({label}) (measured) on every link"), lines
