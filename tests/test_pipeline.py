"""The link path end to end through the real linkwrap-cc script: fail-open, silence, pass-through."""
import json
import os
import subprocess
import textwrap

import pytest

STANDINS = os.path.join(os.path.dirname(__file__), "standins")
GCC_LD = "/opt/rust/lib/rustlib/x86_64-unknown-linux-gnu/bin/gcc-ld"  # only passed through, never run


def link(linkwrap_cc, argv, cwd, **env):
    return subprocess.run([linkwrap_cc, *argv], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **env})


def comment(path) -> str:
    return subprocess.run(["readelf", "-p", ".comment", str(path)], capture_output=True, text=True).stdout


def test_disable_passes_every_argument_through_untouched(tmp_path, lw_home, linkwrap_cc):
    rsp = tmp_path / "args.rsp"
    rsp.write_text("a.o\n-o\nout\n")
    argv = [f"-B{GCC_LD}", "-fuse-ld=lld", f"@{rsp}", "-Wl,-z,now"]
    done = link(linkwrap_cc, argv, tmp_path, LINKWRAP_DISABLE="1",
                LINKWRAP_CC=os.path.join(STANDINS, "record-driver"), RECORD_TO=str(tmp_path / "argv"))
    assert done.returncode == 0
    assert (tmp_path / "argv").read_text().splitlines() == argv


def test_success_prints_nothing_and_the_program_runs(tmp_path, lw_home, linkwrap_cc, hello_obj):
    done = link(linkwrap_cc, [str(hello_obj), "-o", "hello"], tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert subprocess.run([str(tmp_path / "hello")], capture_output=True, text=True).stdout == "hello\n"


def test_a_failing_link_fails_the_same_way_as_cc(tmp_path, lw_home, linkwrap_cc):
    (tmp_path / "u.c").write_text("int missing(void); int main(void){return missing();}\n")
    subprocess.run(["cc", "-c", "u.c"], cwd=tmp_path, check=True)
    direct = subprocess.run(["cc", "u.o", "-o", "direct"], cwd=tmp_path, capture_output=True, text=True)
    for linker in ("mold", "lld", "bfd"):
        done = link(linkwrap_cc, ["u.o", "-o", "wrapped"], tmp_path, LINKWRAP_LINKER=linker)
        assert done.returncode == direct.returncode == 1
        assert not (tmp_path / "wrapped").exists()
        # Linked again as asked (linkwrap cannot tell the caller's error from its choice's), and
        # only the caller's own command's message is passed through, once.
        assert done.stderr.count("missing") == 1, done.stderr
        assert "undefined reference to `missing'" in done.stderr and "mold" not in done.stderr


def test_questions_to_the_driver_are_not_links(tmp_path, lw_home, linkwrap_cc):
    done = link(linkwrap_cc, ["--version"], tmp_path)
    direct = subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout
    assert done.returncode == 0 and done.stdout == direct
    assert not (lw_home / "links.spool").exists() and not list(lw_home.glob("*.spool*"))


def test_fault_injected_into_the_probe_still_links(tmp_path, lw_home, linkwrap_cc, hello_obj):
    inject = tmp_path / "inject"
    inject.mkdir()
    # sitecustomize runs at interpreter start: it breaks the probe the way a bug would.
    (inject / "sitecustomize.py").write_text(textwrap.dedent("""
        import linkwrap.facts.probe as p
        def broken(request, environ=None, later=False):
            raise RuntimeError("injected probe fault")
        p.snapshot = broken
    """))
    done = link(linkwrap_cc, [str(hello_obj), "-o", "hello"], tmp_path, PYTHONPATH=str(inject))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert subprocess.run([str(tmp_path / "hello")], capture_output=True, text=True).stdout == "hello\n"
    assert "injected probe fault" in (lw_home / "linkwrap.log").read_text()


def test_a_chosen_linker_that_vanished_falls_back(tmp_path, lw_home, linkwrap_cc, hello_obj):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink("/usr/bin/mold", bindir / "mold")
    env = {"PATH": f"{bindir}:{os.environ['PATH']}", "LINKWRAP_LINKER": "mold"}
    assert link(linkwrap_cc, [str(hello_obj), "-o", "first"], tmp_path, **env).returncode == 0
    (bindir / "mold").unlink()
    (bindir / "mold").write_text("#!/bin/sh\nexit 1\n")  # now a broken "mold"
    (bindir / "mold").chmod(0o755)
    done = link(linkwrap_cc, [str(hello_obj), "-o", "second"], tmp_path, **env)
    assert (done.returncode, done.stdout) == (0, "")
    # Forced, it failed: the user is told, in one line, that the link was made as asked instead.
    assert done.stderr.startswith("linkwrap: warning: LINKWRAP_LINKER=mold: ") and done.stderr.count("\n") == 1
    assert "linked as asked instead" in done.stderr
    assert subprocess.run([str(tmp_path / "second")], capture_output=True, text=True).stdout == "hello\n"


def test_mold_run_hijack_is_dropped(tmp_path, lw_home, linkwrap_cc, hello_obj):
    """Under `mold -run`, exec of any ld* becomes mold; linkwrap's choice must stand."""
    done = link(linkwrap_cc, [str(hello_obj), "-o", "hello"], tmp_path, LINKWRAP_LINKER="lld",
                LD_PRELOAD="/usr/lib/x86_64-linux-gnu/mold/mold-wrapper.so", MOLD_PATH="/usr/bin/mold")
    assert done.returncode == 0, done.stderr
    text = comment(tmp_path / "hello")
    assert "LLD" in text and "mold" not in text


def test_forced_linker_is_used(tmp_path, lw_home, linkwrap_cc, hello_obj):
    done = link(linkwrap_cc, [str(hello_obj), "-o", "hello"], tmp_path, LINKWRAP_LINKER="mold")
    assert done.returncode == 0, done.stderr
    assert "mold" in comment(tmp_path / "hello")


def test_paths_that_are_not_utf8(tmp_path, lw_home, linkwrap_cc, hello_obj):
    """Linux paths are bytes: an output in a Latin-1 named directory links, and is recorded."""
    odd = os.path.join(os.fsencode(tmp_path), b"d\xe9j\xe0")
    os.mkdir(odd)
    out = os.path.join(odd, b"out\xff")
    done = subprocess.run([os.fsencode(linkwrap_cc), os.fsencode(hello_obj), b"-o", out], capture_output=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert subprocess.run([out], capture_output=True).stdout == b"hello\n"
    summary = subprocess.run([os.path.join(os.path.dirname(linkwrap_cc), "linkwrap"), "summary", "--json"],
                             capture_output=True, text=True)
    assert summary.returncode == 0, summary.stderr
    assert "out\\ufffd" in summary.stdout or "out\ufffd" in summary.stdout


def test_no_response_file_is_left_beside_an_output_whose_name_prefixes_it(tmp_path, lw_home, linkwrap_cc, hello_obj):
    (tmp_path / "a.rsp").write_text(f"{hello_obj}\n-o\nlink\n")
    done = link(linkwrap_cc, ["@a.rsp"], tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.rsp", "hello.c", "hello.o", "link", "lw-home"]


# --- the caller's own linker choices win (issue 10, item 9) -------------------

def _spooled(lw_home):
    from linkwrap.store import spool
    from linkwrap.record.record import SPOOL
    with open(lw_home / SPOOL, "rb") as f:
        return spool.parse(f.read())[0]


def test_a_b_directory_holding_an_ld_is_the_callers_linker(tmp_path, lw_home, linkwrap_cc, hello_obj):
    # The caller's own ld: GNU ld that leaves a mark, in a -B directory.
    mine = tmp_path / "my-ld"
    mine.mkdir()
    from conftest import tool
    bfd = tool("ld.bfd")
    (mine / "ld").write_text(f"#!/bin/sh\necho ran > {tmp_path}/mark\nexec {bfd} \"$@\"\n")
    (mine / "ld").chmod(0o755)
    done = link(linkwrap_cc, [f"-B{mine}/", str(hello_obj), "-o", "hello"], tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert (tmp_path / "mark").read_text() == "ran\n"
    assert "mold" not in comment(tmp_path / "hello")
    rec, = _spooled(lw_home)
    assert rec["linker"] == "as asked"
    assert f"the command line names its own linker (-B{mine}/ (holds a linker)): linking as asked" in rec["reasons"]


def test_clang_ld_path_is_the_callers_linker(tmp_path, lw_home, linkwrap_cc, hello_obj):
    from conftest import tool
    clang, bfd = tool("clang"), tool("ld.bfd")
    done = link(linkwrap_cc, [f"--ld-path={bfd}", str(hello_obj), "-o", "hello"], tmp_path, LINKWRAP_CC=clang)
    assert (done.returncode, done.stderr) == (0, "")
    assert "mold" not in comment(tmp_path / "hello") and "LLD" not in comment(tmp_path / "hello")
    rec, = _spooled(lw_home)
    assert rec["linker"] == "as asked" and f"--ld-path={bfd}" in rec["argv"]


@pytest.mark.parametrize("flag, ours", [("-Wl,--threads=1", "--threads="), ("-Wl,--fork", "--no-fork")])
def test_the_callers_thread_and_fork_flags_reach_mold_unchanged(tmp_path, lw_home, linkwrap_cc, hello_obj,
                                                                 flag, ours):
    done = link(linkwrap_cc, [str(hello_obj), flag, "-o", "hello"], tmp_path, LINKWRAP_LINKER="mold")
    assert (done.returncode, done.stderr) == (0, "")
    assert "mold" in comment(tmp_path / "hello")
    rec, = _spooled(lw_home)
    assert flag in rec["argv"] and "{args}" in rec["command"]  # the caller's arguments, as given
    assert not any(a.startswith(f"-Wl,{ours}") for a in rec["command"])
    assert not any(f.startswith(ours) for f in rec["flags_added"])


def test_a_broken_linkwrap_toml_fails_cargo_build_with_one_line(tmp_path, lw_home, linkwrap_cc):
    """rustc shows a failed link's stderr: the user learns of the broken file in this build."""
    from cargokit import env_name, host_triple, new_crate
    crate = new_crate(tmp_path)
    toml = os.path.join(crate, "linkwrap.toml")
    with open(toml, "w") as f:
        f.write('prefer = ["mold"]\nforbid = "lld"\n')
    env = {**os.environ, env_name(host_triple()): linkwrap_cc, "CARGO_TARGET_DIR": str(tmp_path / "target")}
    done = subprocess.run(["cargo", "build", "--quiet"], cwd=crate, capture_output=True, text=True, env=env)
    assert done.returncode != 0
    ours = [line for line in done.stderr.splitlines() if "linkwrap: " in line]
    assert len(ours) == 1, done.stderr
    assert f"linkwrap: error: {toml}:2: 'forbid' must be a list of linker names (fix it; LINKWRAP_DISABLE=1" in ours[0]
    env["LINKWRAP_DISABLE"] = "1"
    assert subprocess.run(["cargo", "build", "--quiet"], cwd=crate, capture_output=True, env=env).returncode == 0


def test_the_recorded_prediction_is_the_one_made_before_the_link(tmp_path, lw_home, hello_obj):
    """A link that admission does not hold back predicts its memory after the answer, for its record:
    from the history as it was before this link, as `linkwrap explain` shows it, not after this link's
    own charge went in."""
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    from conftest import tool
    from linkrecords import cc_link, db_rows
    from linkwrap import paths
    from linkwrap.request import args
    from linkwrap.evidence import predict
    from linkwrap.choice.choose import choose
    # 24 MiB of data: GNU ld reads it into its heap, a charge the history keeps (predict.REMEMBER_MIN_KB).
    (tmp_path / "data.bin").write_bytes(os.urandom(24 << 20))
    subprocess.run([tool("objcopy"), "-I", "binary", "-O", "elf64-x86-64", "-B", "i386:x86-64", "data.bin",
                    "data.o"], cwd=tmp_path, check=True)
    argv = [str(hello_obj), str(tmp_path / "data.o"), "-o", "hello"]
    env = {**os.environ, "LINKWRAP_LINKER": "bfd"}
    request = args.parse(argv, None, env, cwd=str(tmp_path))
    # An earlier link of this output charged 17 MiB; this one reads 24 MiB into GNU ld's heap.
    predict.keep(paths.state_dir(), "bfd", request.output, 17 << 10, 24 << 20)
    before = choose(request, env).memory
    assert before.source == "output" and 17 << 10 < before.kb < 20 << 10
    assert cc_link(argv, tmp_path, env).returncode == 0
    [row] = db_rows(lw_home)
    assert row["linker"] == "bfd" and row["charge_kb"] > 17 << 10
    assert (row["predicted_peak_kb"], row["prediction_source"]) == (before.kb, "output")
    # The history now holds this link's charge: a prediction made after the link would be larger.
    assert choose(request, env).memory.kb > before.kb
    assert row["input_bytes"] == os.path.getsize(hello_obj) + os.path.getsize(tmp_path / "data.o")


@pytest.mark.parametrize("wild_installed", [True, False], ids=["wild", "no-wild"])
def test_a_small_c_link_gets_wild_or_gnu_ld_and_a_bigger_one_mold(tmp_path, lw_home, linkwrap_cc, wild,
                                                                  wild_installed):
    """docs/policy.md 1.3 with the real linkers: under probe.SMALL_INPUT_BYTES of inputs mold and lld go
    after GNU ld (wild stays before it); above, the static order is mold first. The output is the
    linker's, and it runs."""
    from linkrecords import c_object, db_rows
    from outputkit import written_by
    env = {k: v for k, v in wild.env().items() if k != "LINKWRAP_LINKER"}
    if not wild_installed:  # as if it were not: the order is the same, the linker skipped
        (tmp_path / "linkwrap.toml").write_text('forbid = ["wild"]\n')
    body = '#include <stdio.h>\nint main(void){puts("hi");return 0;}\n'
    small = c_object(tmp_path, "small", body)
    big = c_object(tmp_path, "big", body, big=True)
    for obj, out in ((small, "s"), (big, "b")):
        done = subprocess.run([linkwrap_cc, obj, "-o", out], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        assert subprocess.run([str(tmp_path / out)], capture_output=True, text=True).stdout == "hi\n"
    rows = {os.path.basename(r["output_path"]): r for r in db_rows(lw_home)}
    expected = "wild" if wild_installed else "bfd"
    assert rows["s"]["linker"].split()[0] == expected and written_by(tmp_path / "s") == expected, rows["s"]["linker"]
    assert any("a small link" in r for r in json_reasons(rows["s"]))
    assert rows["b"]["linker"].split()[0] == "mold" and written_by(tmp_path / "b") == "mold"
    assert not any("a small link" in r for r in json_reasons(rows["b"]))


def json_reasons(row):
    return json.loads(row["reasons"] or "[]")


def test_saving_by_default_keeps_the_inputs_while_the_linker_runs_and_nothing_of_a_failed_link(
        tmp_path, lw_home, linkwrap_cc, hello_obj):
    """The hard links into the saved-links store are made while the linker runs (pipeline's
    meanwhile), the manifest after: the saved link names the input's own inode. A failed link
    leaves no object of its own in the store."""
    from linkwrap.evidence.saved import manifest_path
    from linkwrap.record import save
    obj = tmp_path / "main.o"
    obj.write_bytes(hello_obj.read_bytes())
    done = link(linkwrap_cc, [str(obj), "-o", "app"], tmp_path, CI="", LINKWRAP_LINKER="bfd")
    assert done.returncode == 0, done.stderr
    m = save.load(manifest_path(str(tmp_path), str(tmp_path / "app"), str(lw_home)))
    how, where, size, _ = m["files"][str(obj)]
    assert how == "object" and os.stat(where).st_ino == os.stat(obj).st_ino
    store = os.path.dirname(where)
    before = set(os.listdir(store))
    (tmp_path / "u.c").write_text("int missing(void); int main(void){return missing();}\n")
    subprocess.run(["cc", "-c", "u.c", "-o", str(obj)], cwd=tmp_path, check=True)  # the next build's object
    failed = link(linkwrap_cc, [str(obj), "-o", "app"], tmp_path, CI="", LINKWRAP_LINKER="bfd")
    assert failed.returncode == 1
    assert set(os.listdir(store)) == before      # its object was kept while it linked, then taken back
    assert save.load(m["path"])["files"][str(obj)][1] == where  # the last good link's manifest stands
