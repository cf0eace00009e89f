"""An incremental base built off the build's path from a saved link (linkwrap/bench/incremental_base.py),
then relinks that patch it or, where they cannot, a full linker linking (pipeline.py's patch-only).

Real gcc objects through the real linkwrap-cc script; the base is built by build() (the builder's own
work, in this process) or by a real warm server while it is idle. Every patched output is checked
three ways: the program prints the new result, linkwrap ld's --incremental-check relinks it from
scratch into the same layout and finds it byte-identical, and GNU's readelf finds the new code's
function at the address the output's symbol table gives."""
import glob
import json
import os
import subprocess

from linkrecords import cc_link, db_rows, not_small
from linkwrap.bench import incremental_base
from linkwrap.ld.incremental import where
from tests.server.test_server import client  # noqa: F401 (fixture)

MAIN = '#include <stdio.h>\nextern int f(int);\nint main(void){printf("%d\\n", f(2));return 0;}\n'


def project(root, body="x * 2", extra=False):
    os.makedirs(root, exist_ok=True)
    files = {"main.c": not_small(MAIN), "lib.c": f"int f(int x){{return {body};}}\n"}
    if extra:
        files["extra.c"] = "int h(void){return 1;}\n"
    for name, text in files.items():
        with open(os.path.join(root, name), "w") as f:
            f.write(text)
    subprocess.run(["gcc", "-g", "-c", *files], cwd=root, check=True)
    return [n[:-2] + ".o" for n in files]


def link(root, objs, env=None):
    done = cc_link([*objs, "-o", "app"], root, env={"LINKWRAP_SAVE": "1", **(env or {})})
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return subprocess.run([os.path.join(root, "app")], capture_output=True, text=True, check=True).stdout


def last_row(home):
    return db_rows(home)[-1]


def checked(root, objs):
    """linkwrap ld's own check of the output beside its state: relinked from scratch into the same
    layout, byte for byte (through the driver, as the wrapper runs it: its -B shim)."""
    shim = glob.glob(os.path.join(os.environ["LINKWRAP_HOME"], "cache", "shim", "python-*"))
    assert shim, "the wrapper made no shim for linkwrap's own linker"
    env = {**os.environ, where.ENV: where.PATCH_ONLY}
    done = subprocess.run(["cc", f"-B{shim[0]}", *objs, "-o", "app", "-Wl,--incremental-check,--incremental-why"],
                          cwd=root, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "incremental: unchanged" in done.stderr or "patched" in done.stderr, done.stderr


def symbol(root, name):
    out = subprocess.run(["readelf", "-Ws", os.path.join(root, "app")], capture_output=True, text=True,
                         check=True).stdout
    for f in (line.split() for line in out.splitlines()):
        if len(f) >= 8 and f[7] == name and f[3] == "FUNC":
            return int(f[1], 16)
    raise AssertionError(f"no {name} in the symbol table")


def test_a_saved_full_link_asks_for_a_base_and_the_next_relink_patches_it(tmp_path, lw_home):
    root = str(tmp_path / "p")
    objs = project(root)
    assert link(root, objs) == "4\n"
    row = last_row(lw_home)
    assert row["linker"] != "python", row      # a full linker served the first link
    queue = incremental_base.wanted()
    assert len(queue) == 1, queue             # and the saved link asked for a base
    assert not where.ready(os.path.join(root, "app"))
    before = open(os.path.join(root, "app"), "rb").read()
    assert incremental_base.build(queue[0][0]) is None
    assert where.ready(os.path.join(root, "app"))
    assert open(os.path.join(root, "app"), "rb").read() == before   # the user's output is not touched

    project(root, body="x * 3")               # an edit inside the function: new objects
    assert link(root, objs) == "6\n"
    row = last_row(lw_home)
    assert row["linker"] == "python", row
    assert any("trying a patch, its base is ready" in r for r in json.loads(row["reasons"])), row["reasons"]
    with open(os.path.join(root, ".app.lwinc", "last")) as f:
        assert f.read().startswith("patched 1 input(s): lib.o")
    checked(root, objs)
    # the call resolves to f where the symbol table puts it, and f's code there is the new one
    dis = subprocess.run(["objdump", "-d", os.path.join(root, "app")], capture_output=True, text=True,
                         check=True).stdout
    assert f"{symbol(root, 'f'):x} <f>:" in dis and f"call   {symbol(root, 'f'):x} <f>" in dis


def test_a_relink_it_cannot_patch_is_linked_by_the_full_linker_and_asks_for_a_new_base(tmp_path, lw_home):
    root = str(tmp_path / "p")
    objs = project(root)
    link(root, objs)
    ident, first_ask = incremental_base.wanted()[0]
    assert incremental_base.build(ident) is None
    incremental_base.done(ident, first_ask)  # what the host does once the base is built
    assert incremental_base.wanted() == []
    state = os.path.join(root, ".app.lwinc", "state")
    kept = open(state, "rb").read()

    objs = project(root, body="x * 5", extra=True)   # an input added: no patch can make that
    assert link(root, objs) == "10\n"
    row = last_row(lw_home)
    assert row["linker"] not in ("python", None), row
    said = [r for r in json.loads(row["reasons"]) if "could not patch" in r]
    assert len(said) == 1 and "an input was added or removed (extra.o)" in said[0], row["reasons"]
    assert (row["exit_status"], row["fell_back"]) == (0, 0), row    # no failure, no fall-back as asked
    assert open(state, "rb").read() == kept     # the refusal wrote nothing
    assert [i for i, _ in incremental_base.wanted()] == [ident]   # asked again, from this link

    # the new base is built from that link: the next edit patches again
    assert incremental_base.build(ident) is None
    objs = project(root, body="x * 7", extra=True)
    assert link(root, objs) == "14\n"
    assert last_row(lw_home)["linker"] == "python"
    checked(root, objs)


def test_with_this_output_replayed_the_patches_are_judged_against_the_replay_not_more_full_relinks(tmp_path,
                                                                                                   lw_home):
    """Issue 36 item 5: three patches timed, and `linkwrap bench`'s replay of this very output stands in for
    the full linker's relinks the output never had: the next relink is decided at once, by the replay."""
    from clirun import linkwrap
    root = str(tmp_path / "p")
    objs = project(root)
    link(root, objs)
    ident, asked = incremental_base.wanted()[0]
    assert incremental_base.build(ident) is None
    incremental_base.done(ident, asked)
    for k in (3, 5, 7):                       # three patches: the incremental side has its samples
        objs = project(root, body=f"x * {k}")
        assert link(root, objs) == f"{2 * k}\n"
        assert last_row(lw_home)["linker"] == "python", last_row(lw_home)["reasons"]
    done = linkwrap("bench", "--budget", "3", "--linker", "bfd", "app", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    objs = project(root, body="x * 11")
    assert link(root, objs) == "22\n"
    row = last_row(lw_home)
    said = [r for r in json.loads(row["reasons"]) if "(measured by replay)" in r]
    assert len(said) == 1, row["reasons"]
    # the figure decided: patched where it was faster than GNU ld's replay, else the full linker linked it
    if row["linker"] == "python":
        assert "measured faster than the best full linker" in said[0] and " vs bfd " in said[0], said
    else:
        assert row["linker"] not in ("python", None) and "not faster than bfd " in said[0], (row["linker"], said)


def test_turned_off_or_released_no_base_is_asked_for(tmp_path, lw_home):
    root = str(tmp_path / "p")
    objs = project(root)
    link(root, objs, {"LINKWRAP_INCREMENTAL": "0"})
    assert incremental_base.wanted() == []
    rel = os.path.join(root, "target", "release")
    os.makedirs(rel)
    done = cc_link([*objs, "-o", "target/release/app"], root, env={"LINKWRAP_SAVE": "1"})
    assert done.returncode == 0, done.stderr
    assert incremental_base.wanted() == []


def test_a_failed_build_is_not_retried_until_the_link_is_saved_again(tmp_path, lw_home):
    root = str(tmp_path / "p")
    objs = project(root)
    link(root, objs)
    ident, ask = incremental_base.wanted()[0]
    # the saved inputs gone (evicted): the build says so in one line, and the marker keeps it
    for f in glob.glob(os.path.join(str(lw_home), "saved", "objects", "*")):
        os.unlink(f)
    why = incremental_base.build(ident)
    assert why and "is gone" in why and "\n" not in why, why
    incremental_base.done(ident, ask, why)
    assert incremental_base.wanted() == []
    link(root, objs)                          # saved again: asked again
    assert [i for i, _ in incremental_base.wanted()] == [ident]


def test_the_idle_warm_server_builds_the_base_at_idle_priority_and_the_next_relink_patches(tmp_path, lw_home,
                                                                                         client, monkeypatch):
    """The whole loop as a user meets it: links through the native client, the server builds the base
    once it is idle (after measuring the saved link: one background job at a time), and the edit's
    relink is a patch."""
    from tests.bench.test_background import serve, user_config
    monkeypatch.setenv("CI", "")            # set, empty: the suite itself runs with CI=true
    user_config(lw_home, background_quiet_s=0, background_load=1000, background_budget_s=20)
    serve(lw_home, monkeypatch)
    root = str(tmp_path / "p")
    objs = project(root)

    def served(objs):
        done = subprocess.run([client, *objs, "-o", "app"], cwd=root, capture_output=True, text=True,
                              env={**os.environ, "LINKWRAP_SAVE": "1"})
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        return subprocess.run([os.path.join(root, "app")], capture_output=True, text=True).stdout

    assert served(objs) == "4\n"
    # `bench --wait` returns once the base the measured link asked for is built too (the measurer
    # goes first): a script's next relink is then a patch
    from clirun import linkwrap
    waited = linkwrap("bench", "--wait", "--timeout", "600", cwd=root)
    assert waited.returncode == 0, waited.stderr
    assert where.ready(os.path.join(root, "app")) and not incremental_base.wanted()
    # built by the server's builder, in the kernel's idle classes for CPU and I/O, at nice 19
    from linkwrap.bench import background
    built = incremental_base.last_built()
    assert built and built["priority"] == {"policy": os.SCHED_IDLE, "nice": 19,
                                           "ioclass": background.IOPRIO_CLASS_IDLE}, built
    project(root, body="x * 9")
    assert served(objs) == "18\n"
    row = last_row(lw_home)
    assert row["linker"] == "python" and row["entry_point"] == "server", row
    # the patch ran in a fork of the server's child (run/in_process.py): no new interpreter, no driver
    assert row["linker_start"] == "in-process", row
    with open(os.path.join(root, ".app.lwinc", "last")) as f:
        assert f.read().startswith("patched 1 input(s): lib.o")
    checked(root, objs)


def test_status_says_what_is_queued_and_when_the_last_base_was_built(tmp_path, lw_home):
    from clirun import linkwrap
    root = str(tmp_path / "p")
    objs = project(root)
    link(root, objs)
    out = linkwrap("status", cwd=root).stdout
    assert "Incremental bases: queued 1, none built yet" in out, out
    ident, asked = incremental_base.wanted()[0]
    incremental_base._note_built(ident, '{"policy": 5, "nice": 19, "ioclass": 3}')
    incremental_base.done(ident, asked)
    out = linkwrap("status", cwd=root).stdout
    assert "Incremental bases: queued 0, last built " in out, out
