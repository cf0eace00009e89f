"""`linkwrap explain`: real filesystems, real outputs, real linkers; the --json keys are a stable interface."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import mounts
from clirun import linkwrap
from conftest import machine_linkers, rust_gcc_ld

STANDINS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "standins")


def explain(*argv, cwd, env=None):
    done = linkwrap("explain", "--json", *argv, cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return json.loads(done.stdout)


# The entry point as the state dir has it, none compiled in a fresh LINKWRAP_HOME: links go through
# the script, which keeps mold's --no-fork (the installed native client, the default, takes the server).
NO_CLIENT = {"LINKWRAP_INSTALL_ENTRY": "state"}


def big_file(path, mib=16):
    """An output large enough for the probe to measure its page cache share; just written, so cached."""
    with open(path, "wb") as f:
        f.write(os.urandom(mib << 20))
    os.chmod(path, 0o755)


def test_json_keys_are_the_stable_interface(tmp_path, lw_home):
    data = explain("out", cwd=tmp_path, env=NO_CLIENT)
    assert {"probe", "decision"} <= set(data)
    p, d = data["probe"], data["decision"]
    assert {"fs", "fs_options", "kernel", "output", "cpus", "mem_available_mb"} <= set(p)
    assert {"exists", "nlink", "held_by_others", "cached_fraction", "cache_not_measured"} <= set(p["output"])
    assert {"linker", "version", "flags", "write_mode", "reasons"} <= set(d)
    assert d["write_mode"] in ("in-place", "fresh")
    assert isinstance(d["flags"], list) and all(isinstance(f, str) for f in d["flags"])
    assert d["reasons"] and all(isinstance(r, str) for r in d["reasons"])
    # values of this machine (mold first in the default order)
    assert p["output"]["exists"] is False
    assert isinstance(p["cpus"], int) and p["cpus"] >= 1
    assert p["kernel"] == os.uname().release.split("-")[0].split("+")[0]
    assert (d["linker"], d["version"]) == ("mold", ".".join(map(str, machine_linkers()["mold"].version)))
    assert d["flags"] == ["--no-fork", f"--threads={p['cpus']}"]
    assert d["write_mode"] == "fresh" and d["reasons"][-1] == "no existing output -> fresh"
    # The memory the link would add and where that figure comes from; no limit here, so no admission.
    m = data["memory"]
    assert m["source"] == "default" and m["predicted_kb"] > 0 and "no record of mold here" in m["detail"]
    assert m["admission"] is (p["mem_limit_mb"] is not None)
    assert data["request"] == {"output": str(tmp_path / "out"), "kind": "pie", "cwd": str(tmp_path),
                               "driver": "cc", "fuse_ld": None, "inputs": [],
                               "inputs_gone": {"rustc_temporaries": 0, "not_found": []}}
    assert p["output"]["cache_not_measured"] is None    # nothing there to measure


@pytest.mark.parametrize("fstype, options, expect_option", [
    ("btrfs", "compress=zstd", "compress=zstd"),
    ("xfs", None, None),
    ("ext4", None, None),
    ("tmpfs", None, None),
])
def test_each_filesystem_is_named(tmp_path, lw_home, fstype, options, expect_option):
    with mounts.filesystem(tmp_path, fstype, options) as point:
        p = explain(os.path.join(point, "out"), cwd=tmp_path)["probe"]
    assert p["fs"] == fstype
    assert p["fs_local"] is True
    if expect_option:
        assert expect_option in p["fs_options"]


def wild_standin(tmp_path, version):
    """A directory whose `wild` is the recording stand-in (tests/standins/wild.py) of that version."""
    bindir = tmp_path / f"wild-{version}"
    bindir.mkdir()
    exe = bindir / "wild"
    exe.write_text(f'#!/bin/sh\nWILD_STANDIN_VERSION={version} exec {sys.executable} {STANDINS}/wild.py "$@"\n')
    exe.chmod(0o755)
    return {"PATH": f"{bindir}:{os.environ['PATH']}", "LINKWRAP_LINKER": "wild"}


def test_wild_gets_mmap_on_btrfs_and_not_on_ext4(tmp_path, lw_home):
    env = wild_standin(tmp_path, "0.10.0")
    found = {}
    for fstype in ("btrfs", "ext4"):
        with mounts.filesystem(tmp_path, fstype) as point:
            found[fstype] = explain(os.path.join(point, "out"), cwd=tmp_path, env={**env, **NO_CLIENT})
    btrfs, ext4 = found["btrfs"]["decision"], found["ext4"]["decision"]
    cpus = found["btrfs"]["probe"]["cpus"]
    assert (btrfs["linker"], btrfs["version"]) == ("wild", "0.10.0")
    assert btrfs["flags"] == ["--no-fork", f"--threads={cpus}", "--mmap-output-file"]
    assert ext4["flags"] == ["--no-fork", f"--threads={cpus}"]
    assert any("wild buffers its output on btrfs" in r for r in btrfs["reasons"])


def test_in_place_only_while_every_condition_holds(tmp_path, lw_home):
    out = tmp_path / "prog"
    big_file(out)
    d = explain(out, cwd=tmp_path)
    assert d["probe"]["output"]["nlink"] == 1 and d["probe"]["output"]["cached_fraction"] >= 0.5
    assert d["decision"]["write_mode"] == "in-place", d["decision"]["reasons"]

    # a hard link, as Cargo makes
    os.link(out, tmp_path / "uplifted")
    d = explain(out, cwd=tmp_path)
    assert d["probe"]["output"]["nlink"] == 2
    assert d["decision"]["write_mode"] == "fresh"
    assert "output has nlink=2 (a hard link, e.g. Cargo's uplifted copy) -> fresh" in d["decision"]["reasons"]
    os.unlink(tmp_path / "uplifted")

    # another process keeps it open
    holder = subprocess.Popen([sys.executable, "-c", f"f = open({str(out)!r}, 'rb'); input()"],
                              stdin=subprocess.PIPE)
    try:
        # wait until it has the file open
        for _ in range(200):
            if any(os.path.realpath(f"/proc/{holder.pid}/fd/{fd}") == str(out)
                   for fd in os.listdir(f"/proc/{holder.pid}/fd")):
                break
            subprocess.run(["sleep", "0.01"])
        d = explain(out, cwd=tmp_path)
        assert d["probe"]["output"]["held_by_others"] is True
        assert d["decision"]["write_mode"] == "fresh"
        assert "another process holds, maps or runs the output -> fresh" in d["decision"]["reasons"]
    finally:
        holder.communicate(b"\n")
    assert explain(out, cwd=tmp_path)["decision"]["write_mode"] == "in-place"

    # lld never gains from it
    d = explain(out, cwd=tmp_path, env={"LINKWRAP_LINKER": "lld"})["decision"]
    assert (d["linker"], d["write_mode"]) == ("lld", "fresh")


def test_link_arguments_after_double_dash(tmp_path, lw_home):
    data = explain("--", "main.o", "-shared", "-o", "libx.so", cwd=tmp_path)
    assert (data["request"]["kind"], data["request"]["output"]) == ("shared", str(tmp_path / "libx.so"))
    # OUTPUT before -- replaces the command line's -o; --kind overrides the kind
    data = explain("--kind", "exec", "other", "--", "main.o", "-shared", "-o", "libx.so", cwd=tmp_path)
    assert (data["request"]["kind"], data["request"]["output"]) == ("exec", str(tmp_path / "other"))
    # rustc's injected -fuse-ld=lld is not a choice; a C project's own -fuse-ld=gold is
    gcc_ld = rust_gcc_ld()
    d = explain("--", f"-B{gcc_ld}", "-fuse-ld=lld", "main.o", "-o", "app", cwd=tmp_path)["decision"]
    if "wild" in machine_linkers():   # nothing measured on this machine: its default order, wild first
        assert d["linker"] == "wild" and "machine default order (wild before rust-lld)" in d["reasons"][0], \
            d["reasons"]
        assert d["prior"]["used"] == "machine default order" and d["prior"]["rows"] == []
    else:
        assert d["linker"] == "rust-lld" and "rustc's own default" in d["reasons"][0], d["reasons"]
    assert d["measured"] is None   # nothing measured here yet
    d = explain("--", "-fuse-ld=gold", "main.o", "-o", "app", cwd=tmp_path)["decision"]
    gold = machine_linkers()["gold"].label
    assert d["linker"] == "gold" and d["reasons"][0] == f"the command line asks for -fuse-ld=gold: {gold}"


def test_forced_linker(tmp_path, lw_home):
    d = explain("out", cwd=tmp_path, env={"LINKWRAP_LINKER": "lld"})
    cpus = d["probe"]["cpus"]
    lld = machine_linkers()["lld"]
    assert (d["decision"]["linker"], d["decision"]["version"]) == ("lld", lld.label.split()[1])
    assert d["decision"]["flags"] == [f"--threads={cpus}"]
    assert d["decision"]["reasons"][0] == f"LINKWRAP_LINKER=lld: {lld.label}"
    d = explain("out", cwd=tmp_path, env={"LINKWRAP_LINKER": "bfd"})["decision"]
    assert (d["linker"], d["flags"]) == ("bfd", [])


def test_profile_and_files_from_the_project(tmp_path, lw_home):
    (tmp_path / ".git").mkdir()
    (tmp_path / "linkwrap.toml").write_text('[profile.release]\nprefer = ["lld"]\n')
    data = explain("target/release/deps/app-0123abcd", cwd=tmp_path)
    assert data["config"] == {"profile": "release", "files": [str(tmp_path / "linkwrap.toml")]}
    assert data["decision"]["linker"] == "lld"


KNOWN_LIST = "mold, wild, lld, rust-lld, bfd, gold, python"


@pytest.mark.parametrize("json_flag", [(), ("--json",)])
@pytest.mark.parametrize("setup, env, message", [
    (lambda d: (d / "linkwrap.toml").write_text('prefer = ["mold"]\nin_place = maybe\n'), {},
     "{d}/linkwrap.toml:2: Invalid value (column 12)"),
    (lambda d: (d / "linkwrap.toml").write_text('prefer = "mold"\n'), {},
     "{d}/linkwrap.toml:1: 'prefer' must be a list of linker names"),
    (lambda d: (d / "linkwrap.toml").mkdir(), {}, "{d}/linkwrap.toml: cannot read: a directory"),
    (lambda d: None, {"LINKWRAP_LINKER": "nonsense"},
     f"LINKWRAP_LINKER=nonsense: not a linker linkwrap knows ({KNOWN_LIST})"),
])
def test_a_configuration_error_is_one_line_exit_1(tmp_path, lw_home, json_flag, setup, env, message):
    """The same for a file and for LINKWRAP_LINKER, as `linkwrap config` says it (links run as asked)."""
    (tmp_path / ".git").mkdir()
    setup(tmp_path)
    done = linkwrap("explain", *json_flag, "out", cwd=tmp_path, env=env)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"linkwrap: error: {message.format(d=tmp_path)}\n"


def test_a_known_but_missing_forced_linker_chooses_as_usual(tmp_path, lw_home):
    # wild, taken off PATH (CI puts a real one there): the one linker a machine may well lack.
    path = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep)
                           if not any(os.path.exists(os.path.join(d, n)) for n in ("wild", "ld.wild")))
    d = explain("out", cwd=tmp_path, env={"LINKWRAP_LINKER": "wild", "PATH": path})["decision"]
    assert d["linker"] == "mold"
    assert d["reasons"][0] == "LINKWRAP_LINKER=wild, but wild is not installed; choosing as usual"


def test_linkwrap_disable_is_explained_as_the_link_would_do(tmp_path, lw_home):
    d = explain("out", cwd=tmp_path, env={"LINKWRAP_DISABLE": "1"})["decision"]
    assert (d["linker"], d["flags"], d["write_mode"]) == (None, [], "fresh")
    assert d["reasons"] == ["LINKWRAP_DISABLE=1: linkwrap is off, the link runs exactly as asked"]


def test_a_small_output_says_not_measured(tmp_path, lw_home):
    """The probe measures the page-cache share only from output_file.CACHE_PROBE_MIN_BYTES (8 MiB) on:
    below that explain must say "not measured", not "unknown". The decision stays fresh."""
    out = tmp_path / "app"
    out.write_bytes(os.urandom(1_200_000))
    data = explain(out, cwd=tmp_path)
    o, d = data["probe"]["output"], data["decision"]
    assert (o["size"], o["cached_fraction"], o["cache_not_measured"]) == (1_200_000, None, "< 8 MiB")
    assert d["write_mode"] == "fresh"
    assert d["reasons"][-1] == ("output is 1.1 MiB (< 8 MiB): in place would save at most 0.14 ms, "
                                "and its page-cache share is not measured -> fresh")
    assert not any("unknown" in r for r in d["reasons"]), d["reasons"]
    text = linkwrap("explain", out, cwd=tmp_path, env={"COLUMNS": "250"}).stdout
    assert "in page cache          not measured (< 8 MiB)" in text, text
    assert "1200000 bytes (1.1 MiB)" in text
    # a big one is measured: no note, a share
    big_file(out)
    o = explain(out, cwd=tmp_path)["probe"]["output"]
    assert o["cache_not_measured"] is None and o["cached_fraction"] >= 0.5


def test_a_directory_given_as_the_output_is_one_line(tmp_path, lw_home):
    (tmp_path / "target" / "debug").mkdir(parents=True)
    for given in ("target", "target/debug/", str(tmp_path)):
        done = linkwrap("explain", given, cwd=tmp_path)
        assert (done.returncode, done.stdout) == (2, ""), done.stdout
        assert done.stderr == (f"linkwrap: error: {given} is a directory, not a link's output: name the file the "
                               "link writes (e.g. target/debug/app), or give no output for the last recorded link\n")


def test_an_output_ending_in_a_slash_is_one_line(tmp_path, lw_home):
    (tmp_path / "hello").write_text("a file: its name with a slash is no output either")
    for given in ("/nonexistent/dir/", "hello/"):
        done = linkwrap("explain", given, cwd=tmp_path)
        assert (done.returncode, done.stdout) == (2, ""), done.stdout
        assert done.stderr == (f"linkwrap: error: {given} ends in '/': a link's output is a file "
                               "(e.g. target/debug/app)\n")


def test_an_output_that_is_not_a_regular_file_is_not_judged_by_facts_never_looked_at(tmp_path, lw_home):
    os.mkfifo(tmp_path / "out")     # the probe must not open it (a FIFO would block)
    data = explain("out", cwd=tmp_path)
    assert data["probe"]["output"]["is_regular"] is False
    assert data["probe"]["output"]["cache_not_measured"] == "not a regular file"
    assert [r for r in data["decision"]["reasons"] if r.endswith("-> fresh")] == ["output is not a regular file -> fresh"]
    text = linkwrap("explain", "out", cwd=tmp_path, env={"COLUMNS": "250"}).stdout
    assert "held by others         not checked (not a regular file)" in text, text
    assert "in page cache          not measured (not a regular file)" in text, text


def test_facts_say_what_was_looked_at(tmp_path, lw_home):
    text = linkwrap("explain", "out", cwd=tmp_path, env={"COLUMNS": "250"}).stdout
    assert "input bytes              none given (no link arguments after --)" in text, text
    # the probe's None means "no limit" or "not readable": it cannot tell which
    limit = text.split("memory limit (cgroup)")[1].split("\n")[0].strip()
    assert limit == "none found" or (limit.endswith(" MiB") and limit[:-4].isdigit()), limit
    assert " MB" not in text   # probe values are MiB
    (tmp_path / "main.o").write_bytes(b"x" * 100)
    text = linkwrap("explain", "--", "main.o", "gone.o", "-o", "out", cwd=tmp_path, env={"COLUMNS": "250"}).stdout
    assert "input bytes              100 (2 input files, 1 not found)" in text, text


def test_an_unreadable_response_file_is_one_line(tmp_path, lw_home):
    (tmp_path / "args").mkdir()
    done = linkwrap("explain", "--", "@args", "-o", "out", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")  # a usage error: the command line names a file that cannot be read
    assert done.stderr.startswith("linkwrap: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert "args" in done.stderr and "Traceback" not in done.stderr


def test_tables_for_people(tmp_path, lw_home):
    done = linkwrap("explain", "out", cwd=tmp_path, env={"COLUMNS": "200", **NO_CLIENT})
    assert done.returncode == 0, done.stderr
    text = done.stdout
    mold = machine_linkers()["mold"].label
    for words in ("Facts", "Decision", "Reasons", "filesystem", "kernel", "CPUs usable",
                  mold, "-Wl,--no-fork", "write mode", "fresh", f"1. {mold}: first installed of"):
        assert words in text, text


def test_at_80_columns_paths_stay_whole_and_wrapped_lines_keep_their_indent(tmp_path, lw_home):
    where = tmp_path / ("a-long-directory-" + "0123456789abcdef" * 3) / "target" / "debug" / "deps"
    where.mkdir(parents=True)
    out = where / ("app-" + "0123456789abcdef" * 2)
    done = linkwrap("explain", str(out), cwd=tmp_path, env={"COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{out}  kind pie"), lines[0]  # whole, for the terminal to wrap and to copy
    reasons = lines[lines.index("Reasons") + 1:]
    assert len(reasons) >= 2 and any(len(l) > 70 for l in reasons), reasons
    for line in reasons:
        if line.startswith("Recorded link"):
            break
        # a reason's own line ("  3. ...") or its continuation, indented under the reason's text
        assert line.startswith("  ") and (line.lstrip()[0].isdigit() or line.startswith("     ")), reasons


def test_bad_usage_is_one_line(tmp_path, lw_home):
    done = linkwrap("explain", "out", "stray", cwd=tmp_path)
    assert done.returncode == 2  # a usage error, as argparse says them
    assert done.stderr == "linkwrap: error: unexpected arguments: stray (link arguments go after --)\n"


def test_names_the_processes_that_hold_the_output(tmp_path, lw_home):
    prog = tmp_path / "prog"
    prog.write_bytes(open("/bin/sleep", "rb").read())
    prog.chmod(0o755)
    assert explain("prog", cwd=tmp_path)["held_by"] == []
    running = subprocess.Popen([str(prog), "60"])
    mapper = subprocess.Popen([sys.executable, "-c", (
        "import mmap, sys, time\n"
        "f = open(sys.argv[1], 'rb'); m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)\n"
        "f.close(); print('ready', flush=True); time.sleep(60)\n"), str(prog)], stdout=subprocess.PIPE, text=True)
    try:
        assert mapper.stdout.readline() == "ready\n"
        for _ in range(50):  # until the kernel shows the sleeper running the file
            report = explain("prog", cwd=tmp_path)
            if len(report["held_by"]) == 2:
                break
        assert report["probe"]["output"]["held_by_others"] is True
        assert f"pid {running.pid} (prog)" in report["held_by"]
        assert {h.split()[1] for h in report["held_by"]} == {str(running.pid), str(mapper.pid)}
    finally:
        running.kill()
        mapper.kill()
        running.wait()
        mapper.wait()


def test_an_output_in_a_missing_directory_says_whose_facts_these_are(tmp_path, lw_home):
    done = linkwrap("explain", str(tmp_path / "no" / "such" / "out"), cwd=tmp_path, env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert f"{tmp_path / 'no' / 'such'} does not exist (yet): the filesystem facts are those of {tmp_path}" \
        in done.stdout


def test_with_no_output_the_last_recorded_link_is_explained_beside_what_now_would_be(tmp_path, lw_home):
    done = linkwrap("explain", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("linkwrap: error: no link recorded yet to explain")
    assert len(done.stderr.splitlines()) == 1
    (tmp_path / "m.c").write_text("int main(void){return 0;}\n")
    (tmp_path / "linkwrap.toml").write_text("[choice]\nlearn = false\n")   # a relink may try another linker
    subprocess.run(["cc", "-c", "m.c"], cwd=tmp_path, check=True)
    cc = os.path.join(os.path.dirname(sys.executable), "linkwrap-cc")
    subprocess.run([cc, "m.o", "-o", "app"], cwd=tmp_path, check=True)
    sub = tmp_path / "elsewhere"
    sub.mkdir()
    data = explain(cwd=sub)  # the last link, wherever it is asked from
    rec = data["recorded"]
    assert rec["output"] == str(tmp_path / "app") and rec["exit_status"] == 0
    # "now" is decided for the same link: its output and its inputs, as recorded.
    assert data["request"]["output"] == str(tmp_path / "app") and data["request"]["inputs"] == ["m.o"]
    assert data["decision"]["linker"] == rec["linker"] and data["decision"]["write_mode"] == rec["write_mode"]
    # That first link found no server, so its script linked it (mold's --no-fork kept): compared with
    # the script's decision, as the state dir's entry point (no client compiled) would take it now.
    text = linkwrap("explain", "app", cwd=tmp_path, env={"COLUMNS": "100", **NO_CLIENT}).stdout
    assert "Recorded link (" in text and "now: the same decision" in text
    other = "bfd" if rec["linker"] != "bfd" else "mold"
    text = linkwrap("explain", "app", cwd=tmp_path, env={"COLUMNS": "100", "LINKWRAP_LINKER": other}).stdout
    assert f"now: linker {rec['linker']} -> {other}" in text
    # An output never linked has no record: the decision alone.
    assert explain("other", cwd=tmp_path)["recorded"] is None


def test_explain_of_a_cargo_binary_says_what_its_link_really_meets(tmp_path, lw_home):
    # A real Cargo build: target/debug/<bin> is a hard link to deps/<bin>-<hash>, which Cargo deletes
    # before rustc links it, so the link finds no output (nlink=2 is never what a binary's link sees).
    root = tmp_path / "app"
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text('[package]\nname = "my-app"\nversion = "0.1.0"\nedition = "2021"\n')
    (root / "src" / "main.rs").write_text('fn main() { println!("hi"); }\n')
    done = subprocess.run(["cargo", "build", "--offline"], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "CARGO_TARGET_DIR": str(root / "target")})
    assert done.returncode == 0, done.stderr
    uplifted = root / "target" / "debug" / "my-app"
    assert os.stat(uplifted).st_nlink == 2
    data = explain(str(uplifted), cwd=root)
    deps = data["request"]["output"]
    assert os.path.dirname(deps) == str(root / "target" / "debug" / "deps")
    assert os.path.basename(deps).startswith("my_app-") and os.path.samefile(deps, uplifted)
    assert data["note"].startswith(f"Cargo links this binary as {deps} and deletes that file first")
    assert data["probe"]["output"]["exists"] is False
    assert data["decision"]["write_mode"] == "fresh" and data["decision"]["reasons"][-1] == "no existing output -> fresh"
    text = linkwrap("explain", str(uplifted), cwd=root, env={"COLUMNS": "300"}).stdout
    assert "Cargo links this binary as" in text
    # A test binary is not deleted first: explained as it is.
    assert explain("out", cwd=tmp_path)["note"] is None


def test_says_whether_the_linker_is_started_directly(tmp_path, lw_home):
    start = explain("--", "main.o", "-o", "app", cwd=tmp_path)["start"]
    assert start["how"] == "direct" and "cc -###" in start["why"]
    start = explain("--", "main.o", "-flto", "-o", "app", cwd=tmp_path)["start"]
    assert start == {"how": "driver", "why": "-flto is left to the driver"}
    start = explain("--", "main.o", "-o", "app", cwd=tmp_path, env={"LINKWRAP_DISABLE": "1"})["start"]
    assert start["how"] == "driver" and "as asked" in start["why"]
    done = linkwrap("explain", "--", "main.o", "-o", "app", cwd=tmp_path, env={"COLUMNS": "200"})
    assert any(line.split()[:2] == ["started", "directly"] for line in done.stdout.splitlines()), done.stdout


def test_shows_the_decision_of_the_installed_entry_point(tmp_path, lw_home):
    """The server's child reaps mold's worker: no --no-fork there; the script (no native client, or
    LINKWRAP_SERVER=off) keeps it. The reasons say which."""
    data = explain("out", cwd=tmp_path, env=NO_CLIENT)
    assert data["entry"] == {"point": "script", "why": "no native client installed (`linkwrap install` builds one)"}
    assert "--no-fork" in data["decision"]["flags"]
    assert any("cannot wait for its worker" in r for r in data["decision"]["reasons"])
    from linkwrap.install import launcher
    client = launcher.fast_script("linkwrap-cc")  # what `linkwrap install` writes (this LINKWRAP_HOME's)
    assert open(client, "rb").read(4) == b"\x7fELF"
    data = explain("out", cwd=tmp_path, env=NO_CLIENT)
    assert data["entry"]["point"] == "server" and client in data["entry"]["why"]
    assert "--no-fork" not in data["decision"]["flags"]
    assert "mold forks: its worker is reaped after the answer (time and memory stay honest)" in \
        data["decision"]["reasons"]
    # By default the entry point is the installed native client where the wheel's build made one.
    installed = launcher.installed_client("linkwrap-cc")
    if installed:
        data = explain("out", cwd=tmp_path)
        assert data["entry"] == {"point": "server", "why": f"the native client {installed} with the warm link server"}
    off = explain("out", cwd=tmp_path, env={"LINKWRAP_SERVER": "off"})
    assert off["entry"] == {"point": "script", "why": "LINKWRAP_SERVER=off"} and "--no-fork" in off["decision"]["flags"]
    text = linkwrap("explain", "out", cwd=tmp_path, env={"COLUMNS": "200"}).stdout
    assert any(line.split()[:3] == ["entry", "point", "server"] for line in text.splitlines()), text


def test_a_recorded_rustc_link_says_which_inputs_rustc_deleted_and_what_memory_figures_mean(tmp_path, lw_home):
    from conftest import script
    root = tmp_path / "app"
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text('[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n')
    (root / "src" / "main.rs").write_text('fn main() { println!("hi"); }\n')
    done = subprocess.run(["cargo", "build", "--offline", "-q", "--config", f"target.'cfg(all())'.linker='{script('linkwrap-cc')}'"],
                          cwd=root, capture_output=True, text=True, env={**os.environ, "CARGO_TARGET_DIR": str(root / "target")})
    assert done.returncode == 0, done.stderr
    data = explain(cwd=root)                      # the last recorded link: rustc's, its temporaries gone
    gone = data["request"]["inputs_gone"]
    assert gone["rustc_temporaries"] >= 1, data["request"]["inputs"]
    assert not any("/rustc" in i or i.endswith(".rcgu.o") for i in gone["not_found"]), gone
    rec = data["recorded"]
    assert rec["peak_rss_kb"] > 0 and rec["charge_kb"] is not None and rec["charge_how"]
    text = linkwrap("explain", cwd=root, env={"COLUMNS": "300"}).stdout
    assert f"{gone['rustc_temporaries']} deleted since the link (rustc's temporar" in text, text
    assert "not found" not in text.split("input bytes")[1].split("\n")[0], text
    assert "MiB of new memory the link needs (not its peak RSS" in text, text
    assert data["note"] is None                   # in the project: its own link, nothing to say
    # Outside every project, the last link recorded anywhere is shown: said first, naming its project.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    away = explain(cwd=elsewhere)
    assert away["recorded"]["output"] == rec["output"]
    assert away["note"] == ("the current directory is in no project linkwrap has recorded: this is the "
                            f"last link recorded anywhere, of {root}")
    first = linkwrap("explain", cwd=elsewhere, env={"COLUMNS": "300"}).stdout.splitlines()
    assert first[1].startswith("the current directory is in no project linkwrap has recorded"), first[:3]
    assert f"peak RSS {rec['peak_rss_kb'] >> 10} MiB; charge {rec['charge_kb'] >> 10} MiB" in text, text


def test_explain_of_cargos_uplifted_binary_is_the_recorded_link_that_made_it(tmp_path, lw_home, wild):
    # Built through linkwrap: explain target/debug/<bin> shows the link rustc ran for deps/<bin>-<hash>,
    # with rustc's own command line, so rust-lld is found through its sysroot as the link found it.
    from cargokit import env_name, host_triple
    from conftest import script
    root = tmp_path / "app"
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text('[package]\nname = "my-app"\nversion = "0.1.0"\nedition = "2021"\n')
    (root / "src" / "main.rs").write_text('fn main() { println!("hi"); }\n')
    env = wild.env(LINKWRAP_HOME=str(lw_home), CARGO_TARGET_DIR=str(root / "target"))
    env[env_name(host_triple())] = script("linkwrap-cc")
    done = subprocess.run(["cargo", "build", "--offline"], cwd=root, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    uplifted = root / "target" / "debug" / "my-app"
    data = explain(str(uplifted), cwd=root, env=env)
    rec = data["recorded"]
    assert rec is not None and os.path.samefile(rec["output"], uplifted)
    assert os.path.basename(data["request"]["output"]).startswith("my_app-")
    assert "is Cargo's copy (a hard link) of" in data["note"]
    assert "rust-lld" in data["linkers"]
    # The same choice, for the same reasons, as explaining the deps/ path the next link writes.
    same = explain(rec["output"], cwd=root, env=env)
    assert same["decision"]["reasons"] == data["decision"]["reasons"]
    assert data["decision"]["learned"]["links"] == 1 and data["decision"]["learned"]["load_adjusted"] is True
    text = linkwrap("explain", str(uplifted), cwd=root, env={**env, "COLUMNS": "300"}).stdout
    assert "Cargo's copy (a hard link)" in text and "times adjusted for machine load" in text, text
    # Where Cargo cannot make a hard link it copies: the same bytes name the same link.
    copy = root / "copy"
    shutil.copyfile(uplifted, copy)
    os.replace(copy, uplifted)
    copied = explain(str(uplifted), cwd=root, env=env)
    assert "is Cargo's copy (the same bytes) of" in copied["note"]
    assert copied["recorded"]["output"] == rec["output"]
    assert copied["decision"]["linker"] == data["decision"]["linker"]   # the deps file now has one name


def test_a_recorded_fall_back_names_the_linker_that_failed_and_its_error(tmp_path, lw_home):
    # lld is given a flag it rejects: its link fails and the link as asked passes (a fall-back)
    (tmp_path / "m.c").write_text("int main(void){return 0;}\n")
    subprocess.run(["cc", "-c", "m.c"], cwd=tmp_path, check=True)
    (tmp_path / "linkwrap.toml").write_text('prefer = ["lld"]\n[linkers.lld]\nextra_flags = ["--no-such-flag"]\n')
    cc = os.path.join(os.path.dirname(sys.executable), "linkwrap-cc")
    subprocess.run([cc, "m.o", "-o", "app"], cwd=tmp_path, check=True)
    rec = explain("app", cwd=tmp_path)["recorded"]
    lld = machine_linkers()["lld"].label
    assert rec["fell_back"] and rec["first_linker"] == lld and rec["first_exit_status"] not in (0, None)
    assert "--no-such-flag" in rec["first_error"], rec
    text = linkwrap("explain", "app", cwd=tmp_path, env={"COLUMNS": "80"}).stdout
    lines = text[text.index("Recorded link ("):].splitlines()
    first = next(i for i, l in enumerate(lines) if l.startswith("  first: "))
    said = " ".join(l.strip() for l in lines[first:first + 3])
    assert f"first: {lld} failed (exit {rec['first_exit_status']}): " in said and "--no-such-flag" in said, text
    assert lines[first + 1].startswith("         "), text   # wrapped under its text


def test_at_80_columns_the_measurements_and_the_linker_path_fit_whole(tmp_path, lw_home):
    # A deep toolchain directory (a rustup or a /opt install): its path is never cut.
    bin_dir = tmp_path / ("toolchain-" + "0123456789abcdef" * 3) / "lib" / "rustlib" / "bin"
    bin_dir.mkdir(parents=True)
    shutil.copy(shutil.which("mold"), bin_dir / "mold")
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "LINKWRAP_SAVE": "1", "COLUMNS": "80"}
    (tmp_path / "m.c").write_text("int main(void){return 0;}\n")
    subprocess.run(["cc", "-c", "m.c"], cwd=tmp_path, check=True)
    cc = os.path.join(os.path.dirname(sys.executable), "linkwrap-cc")
    subprocess.run([cc, "m.o", "-o", "app"], cwd=tmp_path, check=True, env={**os.environ, **env})
    linkers = machine_linkers()
    names = [n for n in ("mold", "lld", "bfd") if n in linkers]
    done = linkwrap("bench", "--budget", "1", *(f"--linker={n}" for n in names), "app", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    text = linkwrap("explain", "app", cwd=tmp_path, env=env).stdout
    lines = text.splitlines()
    assert any(l.startswith("  linker ") and l.endswith(str(bin_dir / "mold")) for l in lines), text
    table = lines[next(i for i, l in enumerate(lines) if l.startswith("Measured here")) + 1:]
    table = table[:next(i for i, l in enumerate(table) if "the choice" in l)]
    rows = [l for l in table if any(l.lstrip().startswith(linkers[n].label + " ") for n in names)]
    assert len(rows) >= len(names), text    # each linker's name whole on its row, fresh and in place
    for line in table:
        assert len(line) <= 80 and "…" not in line, text
    for line in rows:
        assert re.search(r" ms +\d+\.\d-\d+\.\d( |$)", line), line   # the median and its CI, whole
