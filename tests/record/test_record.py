"""record.save: one record per link through the real linkwrap-cc, never a failed or noisy link."""
import os
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
import mounts  # noqa: E402
from conftest import script  # noqa: E402
from linkrecords import c_object, cc_link, db_rows  # noqa: E402

from linkwrap import faults  # noqa: E402
from linkwrap.request import args  # noqa: E402
from linkwrap.choice import policy
from linkwrap.record import record
from linkwrap.run.run import Outcome  # noqa: E402


def test_a_real_c_link_gives_one_row_with_real_times(tmp_path, lw_home):
    obj = c_object(tmp_path)
    done = cc_link([obj, "-o", "hello"], tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    [row] = db_rows(lw_home)
    assert row["wall_ms"] > 0 and row["user_ms"] + row["sys_ms"] > 0 and row["peak_rss_kb"] > 1000
    assert row["overhead_ms"] > 0
    assert row["output_path"] == str(tmp_path / "hello")
    assert row["output_bytes"] == os.path.getsize(tmp_path / "hello")
    assert (row["crate_name"], row["crate_kind"], row["exit_status"], row["fell_back"]) == \
        ("hello", "executable", 0, 0)
    assert row["input_count"] == 1 and row["input_bytes"] == os.path.getsize(obj)
    assert row["kernel_release"] == os.uname().release
    assert row["argv"] == f'["{obj}", "-o", "hello"]' and row["cwd"] == str(tmp_path)
    assert row["started_utc"].endswith("Z") and row["record_uid"]
    assert row["linker"] and row["write_mode"] in ("fresh", "in-place") and row["reasons"].startswith("[")


def test_log_off_records_nothing_and_costs_one_stat(tmp_path, lw_home):
    (lw_home / record.OFF_MARKER).write_text("")
    obj = c_object(tmp_path)
    assert cc_link([obj, "-o", "hello"], tmp_path).returncode == 0
    assert not (lw_home / record.SPOOL).exists()


def test_sixty_four_links_at_once_give_sixty_four_rows(tmp_path, lw_home):
    obj = c_object(tmp_path)
    procs = [subprocess.Popen([script("linkwrap-cc"), obj, "-o", f"out{i}"], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for i in range(64)]
    results = [(p.wait(), p.stdout.read(), p.stderr.read()) for p in procs]
    assert all(r == (0, b"", b"") for r in results), results[:3]
    rows = db_rows(lw_home)
    assert sorted(r["output_path"] for r in rows) == sorted(str(tmp_path / f"out{i}") for i in range(64))
    assert all(r["wall_ms"] > 0 for r in rows)


@pytest.mark.parametrize("kind", ["read-only", "full"])
def test_a_state_dir_that_cannot_take_records_costs_no_link_and_is_said_once(tmp_path, monkeypatch, kind):
    obj = c_object(tmp_path, big=True)  # no small link: mold first
    opts = "ro,size=1m" if kind == "read-only" else "size=64k"
    with mounts.tmpfs_mount(tmp_path, opts) as point:
        if kind == "full":
            fd = os.open(os.path.join(point, "filler"), os.O_WRONLY | os.O_CREAT)
            try:
                while True:
                    os.write(fd, b"\0" * 4096)
            except OSError:
                pass
            finally:
                os.close(fd)
        monkeypatch.setenv("LINKWRAP_HOME", point)
        first = cc_link([obj, "-o", "one"], tmp_path)
        second = cc_link([obj, "-o", "two"], tmp_path)
        assert first.returncode == second.returncode == 0
        assert subprocess.run([str(tmp_path / "two")]).returncode == 0
        # Without a cache or a record, the link still gets the linker linkwrap chose (mold first).
        from outputkit import written_by
        assert written_by(tmp_path / "one") == written_by(tmp_path / "two") == "mold"
        assert first.stdout == second.stdout == ""
        assert first.stderr.count("linkwrap: warning: cannot record links") == 1, first.stderr
        assert len(first.stderr.splitlines()) == 1
        assert second.stderr == ""
        # The read-only dir could not hold its once-marker: it went to /tmp (and goes now).
        fallback = faults.fallback_markers(point)
        assert [os.path.basename(m).split("-")[3] for m in fallback] == (["EROFS"] if kind == "read-only" else [])
        for m in fallback:
            os.unlink(m)


def test_a_state_dir_the_user_cannot_write_is_said_once_per_build(tmp_path, monkeypatch):
    """chmod 0500 on the state dir, links run without root's power to ignore it: each build's
    first link says its records are lost (rustc drops a passed link's stderr: once for ever is never)."""
    obj = c_object(tmp_path)
    state = tmp_path / "state"
    state.mkdir(mode=0o500)
    monkeypatch.setenv("LINKWRAP_HOME", str(state))
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # where the once-markers go, as the state dir cannot

    def link(build, out):
        # setpriv: no capabilities, so permissions hold as for any user (the tests run as root)
        return subprocess.run(["setpriv", "--bounding-set=-all", "--inh-caps=-all", script("linkwrap-cc"), obj,
                               "-o", out], cwd=tmp_path, capture_output=True, text=True,
                              env={**os.environ, "LINKWRAP_BUILD_ID": build})
    said = (f"linkwrap: warning: cannot record links in {state} (Permission denied); links are not affected; "
            "said once (see `linkwrap log status`)\n")
    runs = [link("build-1", "a"), link("build-1", "b"), link("build-2", "c")]
    assert [r.returncode for r in runs] == [0, 0, 0]
    assert [r.stderr for r in runs] == [said, "", said]
    assert subprocess.run([str(tmp_path / "c")]).returncode == 0
    assert not os.listdir(state)
    markers = faults.fallback_markers(str(state))
    assert [os.path.basename(m).split("-")[3] for m in markers] == ["EACCES", "EACCES"]


def request(argv, cwd="/w"):
    return args.parse(argv, "cc", {}, cwd=cwd)


CARGO = {"CARGO_PKG_NAME": "demo", "CARGO_MANIFEST_DIR": "/w/demo"}
SYSROOT = "/r/lib/rustlib/x86_64-unknown-linux-gnu/lib"


@pytest.mark.parametrize("argv, env, expected", [
    (["main.o", "-o", "app"], {}, ("app", "executable")),
    (["-shared", "a.o", "-o", "libz.so.1"], {}, ("libz.so.1", "shared-library")),
    (["x.o", "-o", "t/debug/build/demo-1/build_script_build-1"],
     {**CARGO, "CARGO_CRATE_NAME": "build_script_build"}, ("demo", "build-script")),
    (["-shared", "m.o", f"{SYSROOT}/libproc_macro-abc.rlib", "-o", "t/debug/deps/libderive-1.so"],
     {**CARGO, "CARGO_CRATE_NAME": "derive"}, ("derive", "proc-macro")),
    (["-shared", "m.o", f"{SYSROOT}/libstd-abc.rlib", "-Wl,--gc-sections", "-o", "t/debug/deps/libplug.so"],
     {**CARGO, "CARGO_CRATE_NAME": "plug"}, ("plug", "cdylib")),
    (["-shared", "m.o", "/tmp/rustcX/rmeta.o", f"{SYSROOT}/libstd-abc.so", "-o", "t/debug/deps/libdyl.so"],
     {**CARGO, "CARGO_CRATE_NAME": "dyl"}, ("dyl", "dylib")),
    (["-shared", "m.o", "-o", "t/debug/deps/libodd.so"], {**CARGO, "CARGO_CRATE_NAME": "odd"}, ("odd", "shared")),
    (["m.o", f"{SYSROOT}/libtest-abc.rlib", "-o", "t/debug/deps/demo-1"],
     {**CARGO, "CARGO_CRATE_NAME": "demo"}, ("demo", "test")),
    (["m.o", "-o", "t/debug/deps/demo-1"],
     {**CARGO, "CARGO_CRATE_NAME": "demo", "CARGO_BIN_NAME": "demo-cli"}, ("demo-cli", "bin")),
    # a binary's own unit tests: Cargo sets CARGO_BIN_NAME there too
    (["m.o", f"{SYSROOT}/libtest-abc.rlib", "-o", "t/debug/deps/demo_cli-2"],
     {**CARGO, "CARGO_CRATE_NAME": "demo_cli", "CARGO_BIN_NAME": "demo-cli"}, ("demo-cli", "test")),
    (["m.o", "-o", "t/debug/examples/hello-1"], {**CARGO, "CARGO_CRATE_NAME": "hello"}, ("hello", "example")),
])
def test_what_was_linked(argv, env, expected):
    assert record.classify(request(argv), env) == expected


def outcome(code=0, wall=10.0, command=("cc",)):
    return Outcome(code, wall, 6.0, 2.0, 50_000, b"", b"", command, policy.FRESH, 1234 if code == 0 else None,
                   "mold 1.10.1", "driver")


def test_a_fall_back_is_recorded_with_both_attempts():
    req = request(["a.o", "-o", "app"])
    decision = policy.as_asked("mold 1.10.1 failed (exit 1); linked as asked")
    started = 1_000_000_000
    rec = record.make(req, None, decision, outcome(wall=20.0), started_ns=started, now_ns=started + 50_000_000,
                      first_attempt=outcome(1, 15.0, ("cc", "-B/shim")), environ={})  # the link took 50 ms
    assert rec["fell_back"] and rec["first_exit_status"] == 1 and rec["first_command"] == ("cc", "-B/shim")
    assert rec["exit_status"] == 0 and rec["linker"] == "as asked"
    # linkwrap's own time excludes both linker runs: 50 - 20 - 15 = 15 ms (a clock read here would
    # add however long a busy machine kept this process from running).
    assert rec["overhead_ms"] == 15.0
    assert rec["nlink_before"] is None and rec["fs_type"] is None  # no probe: unknown, not wrong


def test_a_fault_is_recorded_with_its_reason():
    req = request(["a.o", "-o", "app"])
    decision = policy.as_asked("linkwrap fault while choosing a linker: OSError: boom")
    rec = record.make(req, None, decision, outcome(), started_ns=time.perf_counter_ns(), environ={})
    assert rec["fault"] == "linkwrap fault while choosing a linker: OSError: boom"


def test_save_never_raises_and_notes_its_own_fault(lw_home):
    assert record.save(None, None, None, None, started_ns=0) is None
    assert "linkwrap fault while building the link record" in (lw_home / "linkwrap.log").read_text()


@pytest.mark.parametrize("stderr, expected", [
    # The Python linker refusing what it cannot do yet.
    (b"linkwrap-ld: not supported yet: -shared (shared library output)\n"
     b"collect2: error: ld returned 1 exit status\n", "linkwrap-ld: not supported yet: -shared (shared library output)"),
    # mold's fatal line, before gcc's closing collect2 line.
    (b"mold: fatal: unknown command line option: --frobnicate\ncollect2: error: ld returned 1 exit status\n",
     "mold: fatal: unknown command line option: --frobnicate"),
    (b"ld.lld: error: unable to find library -lnope\ncollect2: error: ld returned 1 exit status\n",
     "ld.lld: error: unable to find library -lnope"),
    # GNU ld says why without any of the words: the last line that is not collect2's.
    (b"/usr/bin/ld: cannot find -lnope: No such file or directory\ncollect2: error: ld returned 1 exit status\n",
     "/usr/bin/ld: cannot find -lnope: No such file or directory"),
    (b"/usr/bin/ld: m.o: in function `main':\nm.c:(.text+0x5): undefined reference to `nope'\n"
     b"collect2: error: ld returned 1 exit status\n", "m.c:(.text+0x5): undefined reference to `nope'"),
    # Nothing but collect2's line: that is all there is to say.
    (b"collect2: error: ld returned 1 exit status\n", "collect2: error: ld returned 1 exit status"),
    (b"\n  \n", None),
    (b"", None),
    (b"\xff\xfe broken bytes: fatal\n", "\ufffd\ufffd broken bytes: fatal"),
])
def test_first_error_is_the_line_that_says_why(stderr, expected):
    assert record.first_error(stderr) == expected


def test_first_error_is_cut_to_300_characters():
    line = record.first_error(b"mold: fatal: " + b"x" * 1000 + b"\n")
    assert len(line) == record.FIRST_ERROR_CHARS and line.startswith("mold: fatal: xxx") and line.endswith("…")


def test_a_real_fall_back_keeps_why_the_first_attempt_failed(tmp_path, lw_home):
    # The Python linker does not write RELR relocations yet: forced onto such a link it
    # fails, and the link is done again as asked.
    (tmp_path / "f.c").write_text("int f(void){return 1;}\n")
    subprocess.run(["cc", "-fPIC", "-c", "f.c"], cwd=tmp_path, check=True)
    done = cc_link(["-shared", "-Wl,-z,pack-relative-relocs", "f.o", "-o", "libf.so"], tmp_path,
                   env={"LINKWRAP_LINKER": "python"})
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")  # the failed attempt's words are kept out
    [row] = db_rows(lw_home)
    assert (row["fell_back"], row["first_exit_status"], row["exit_status"], row["linker"]) == (1, 1, 0, "as asked")
    assert row["first_linker"].startswith("python ")
    assert row["first_error"].startswith("linkwrap-ld: not supported yet: -z pack-relative-relocs")


def test_start_up_is_the_time_from_the_process_start_to_linkwraps_code(tmp_path, lw_home):
    """startup_ms covers what overhead_ms cannot: the interpreter's start and imports.

    Nothing here compares durations against each other's speed (that is for benchmarks/): only
    that the parts are there and that they cannot add up to more than the whole link process."""
    obj = c_object(tmp_path)
    t = time.perf_counter()
    assert cc_link([obj, "-o", "hello"], tmp_path).returncode == 0
    whole_ms = (time.perf_counter() - t) * 1000
    [row] = db_rows(lw_home)
    assert isinstance(row["startup_ms"], float) and row["startup_ms"] >= 0
    # startup_ms starts at the process's start time in /proc, which is counted in clock ticks: the
    # parts can exceed the whole by at most one tick (and a rounding), however busy the machine is.
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    assert row["startup_ms"] + row["overhead_ms"] + row["wall_ms"] <= whole_ms + tick_ms + 1


def test_a_rust_dylib_and_a_cdylib_are_told_apart_from_rustcs_own_link(tmp_path, lw_home):
    # Real rustc links through linkwrap-cc: each library's kind comes from the command line rustc wrote.
    import json
    import subprocess
    from conftest import script
    kinds = {}
    for kind in ("dylib", "cdylib"):
        crate = tmp_path / kind
        (crate / "src").mkdir(parents=True)
        (crate / "Cargo.toml").write_text(f'[package]\nname = "lib{kind}"\nversion = "0.1.0"\nedition = "2021"\n'
                                          f'[lib]\ncrate-type = ["{kind}"]\n')
        (crate / "src" / "lib.rs").write_text('#[no_mangle]\npub extern "C" fn answer() -> i32 { 42 }\n')
        done = subprocess.run([script("linkwrap"), "run", "--json", "--", "cargo", "build", "-q"], cwd=crate,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        [b] = json.loads(done.stdout)["builds"]
        kinds.update({l["crate_name"]: l["crate_kind"] for l in b["links"]})
    assert kinds == {"libdylib": "dylib", "libcdylib": "cdylib"}, kinds


def test_a_cargo_build_in_a_terminal_is_told_once_that_its_links_cannot_be_recorded(tmp_path, lw_home,
                                                                                   monkeypatch):
    """The state dir made 0500 after `linkwrap install` (the build run without root's power over it):
    rustc drops a passed link's stderr, so each build's terminal is told once -- two links in a build,
    one line; the next build, one line again -- and every build passes, its binaries running."""
    from cargokit import env_name, host_triple, new_crate
    from test_faults import _in_a_terminal
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "cargo-home"))
    for var in ("RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", env_name(host_triple(), "LINKER")):
        monkeypatch.delenv(var, raising=False)
    crate = new_crate(tmp_path)
    os.mkdir(os.path.join(crate, "src", "bin"))
    with open(os.path.join(crate, "src", "bin", "second.rs"), "w") as f:
        f.write("fn main() {}\n")
    # No warm server from install (install/warm.py): one started now, with root's power over the
    # state dir, would record what the unprivileged builds below cannot; theirs start their own.
    assert subprocess.run([script("linkwrap"), "install"], cwd=crate, capture_output=True,
                          env={**os.environ, "LINKWRAP_SERVER": "off"}).returncode == 0
    lw_home.chmod(0o500)
    env = {**os.environ, "TERM": "xterm", "TMPDIR": str(tmp_path), "CARGO_TARGET_DIR": str(tmp_path / "target")}
    unprivileged = ["setpriv", "--bounding-set=-all", "--inh-caps=-all"]
    said = []
    for main in ("fn main() {}\n", 'fn main() { println!("again"); }\n'):
        with open(os.path.join(crate, "src", "main.rs"), "w") as f:
            f.write(main)
        status, shown = _in_a_terminal([*unprivileged, "cargo", "build", "--quiet"], crate, env)
        assert status == 0, shown
        said.append([line for line in shown.splitlines() if "linkwrap" in line])
    lw_home.chmod(0o700)
    assert subprocess.run([str(tmp_path / "target" / "debug" / "hello")], capture_output=True).stdout == b"again\n"
    assert [len(lines) for lines in said] == [1, 1], said
    for [line] in said:  # after the erase of cargo's progress line, if any
        assert line.split("\x1b[K")[-1].startswith(f"linkwrap: warning: cannot record links in {lw_home} "
                                                   "(Permission denied)"), line
