"""`linkwrap run -- <build>`: every link under it is one build, its summary follows, its exit status passes."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from conftest import script  # noqa: E402
from linkrecords import c_object, lw, summary_json  # noqa: E402


def makefile(tmp_path, extra=""):
    c_object(tmp_path, "m")
    cc = script("linkwrap-cc")
    (tmp_path / "Makefile").write_text(
        f"all: a b\na:\n\t{cc} m.o -o a\nb:\n\tsh -c '{cc} m.o -o b && sleep 0.3'\n{extra}")


def test_run_groups_the_links_of_its_build_and_prints_the_summary_after_it(tmp_path, lw_home):
    makefile(tmp_path)
    done = lw("run", "--", "make", "-s", "-j2", cwd=tmp_path, env={"COLUMNS": "150"})
    assert done.stdout == ""  # make -s says nothing, and the summary goes to stderr
    assert "2 links" in done.stderr and "from linkwrap run" in done.stderr
    [b] = summary_json(cwd=tmp_path)["builds"]
    assert b["tool"] == "linkwrap run" and b["command"] == "make -s -j2" and b["exit_status"] == 0
    assert sorted(l["crate_name"] for l in b["links"]) == ["a", "b"]
    assert b["wall_ms"] >= 300 and 0 < b["linking"]["link_share"] < 1


def test_run_returns_the_builds_exit_status_and_still_records_it(tmp_path, lw_home):
    makefile(tmp_path, "fail:\n\texit 7\n")
    done = lw("run", "--", "make", "-s", "a", "fail", cwd=tmp_path, check=False)
    assert done.returncode == 2  # make's own status for a failed recipe
    [b] = summary_json(cwd=tmp_path)["builds"]
    assert b["exit_status"] == 2 and b["totals"]["links"] == 1
    assert lw("run", "--", "sh", "-c", "exit 5", cwd=tmp_path, check=False).returncode == 5


def test_run_without_a_command_or_with_a_missing_one_is_a_one_line_error(tmp_path, lw_home):
    done = lw("run", cwd=tmp_path, check=False)
    assert done.returncode == 2 and done.stderr.startswith("linkwrap: error: usage: linkwrap run --")
    done = lw("run", "--", "no-such-build-tool-xyz", cwd=tmp_path, check=False)
    assert done.returncode == 127 and done.stderr == "linkwrap: error: cannot run no-such-build-tool-xyz: No such file or directory\n"
    assert "Traceback" not in done.stderr


def test_run_json_is_all_that_goes_to_stdout(tmp_path, lw_home):
    makefile(tmp_path)
    # Not -s: make echoes its recipes on stdout, which --json sends to stderr.
    done = lw("run", "--json", "--", "make", "-j2", cwd=tmp_path)
    data = json.loads(done.stdout)
    [b] = data["builds"]
    assert b["tool"] == "linkwrap run" and b["totals"]["links"] == 2 and "notes" in data
    assert "m.o -o a" in done.stderr  # the build's own output, kept apart
    assert "--json" in lw("run", "--help", cwd=tmp_path).stdout
    assert "stdout carries only the JSON" in " ".join(lw("run", "--help", cwd=tmp_path).stdout.split())


def test_a_run_without_links_says_so_in_one_line(tmp_path, lw_home):
    done = lw("run", "--", "sh", "-c", "exit 0", cwd=tmp_path, env={"COLUMNS": "100"})
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("no links recorded for this build #"), done.stderr
    assert lines[0].endswith("exit status 0): sh -c 'exit 0'")


# --- signals ---------------------------------------------------------------------

def build_processes(token):
    """Pids of live processes whose environment carries token (every process of the build does)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"LW_TEST_TOKEN={token}".encode() in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            continue
    return found


def default_signals():
    """As a terminal's job starts: a test runner started in the background ignores SIGINT, and a
    command started with a signal ignored rightly keeps ignoring it."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


SLEEPY_BUILD = "echo started > started; sleep 600 & sleep 600; wait"


def test_timeout_leaves_no_process_of_the_build_behind(tmp_path, lw_home):
    """A CI timeout signals `linkwrap run`: the build's whole process group ends with it, and the build
    is recorded as ended by that signal (exit status 128+15)."""
    token = f"{os.getpid()}-{tmp_path.name}"
    done = subprocess.run(["timeout", "--preserve-status", "5", script("linkwrap"), "run", "-q", "--",
                           "sh", "-c", SLEEPY_BUILD], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "LW_TEST_TOKEN": token}, stdin=subprocess.DEVNULL)
    assert (tmp_path / "started").exists()  # the build did run
    assert done.returncode == 128 + 15, done.stderr
    assert build_processes(token) == []
    [b] = summary_json("--all", "--empty", cwd=tmp_path)["builds"]  # it linked nothing: --empty
    assert b["exit_status"] == 128 + 15 and b["command"] == f"sh -c '{SLEEPY_BUILD}'"


def test_plain_timeout_too(tmp_path, lw_home):
    token = f"{os.getpid()}-{tmp_path.name}-plain"
    done = subprocess.run(["timeout", "5", script("linkwrap"), "run", "-q", "--", "sh", "-c", SLEEPY_BUILD],
                          cwd=tmp_path, capture_output=True, env={**os.environ, "LW_TEST_TOKEN": token},
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 124  # timeout's own status
    assert build_processes(token) == []


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_linkwrap_run_alone_reaches_the_build(tmp_path, lw_home, sig):
    """Sent to linkwrap's pid only (not its group, as a supervisor may): the build still gets it, ends,
    and linkwrap exits with the build's status. The build's sleep is in the foreground: a
    non-interactive sh makes background jobs ignore SIGINT."""
    token = f"{os.getpid()}-{tmp_path.name}-{sig}"
    proc = subprocess.Popen([script("linkwrap"), "run", "-q", "--", "sh", "-c", "echo started > started; exec sleep 600"],
                            cwd=tmp_path, env={**os.environ, "LW_TEST_TOKEN": token}, stdin=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=default_signals)
    while not (tmp_path / "started").exists():
        assert proc.poll() is None
        time.sleep(0.01)
    time.sleep(0.1)  # `exec sleep` has replaced sh
    proc.send_signal(sig)
    assert proc.wait(timeout=60) == 128 + sig
    assert build_processes(token) == []
    [b] = summary_json("--all", "--empty", cwd=tmp_path)["builds"]  # it linked nothing: --empty
    assert b["exit_status"] == 128 + sig


def test_the_builds_leader_stays_unreaped_while_the_rest_of_its_group_ends(tmp_path, lw_home):
    """After a forwarded signal linkwrap waits for the build's whole group; the leader, already dead, is
    reaped only after that, so its pid (the group's id that linkwrap signals and polls) cannot be
    another process's meanwhile. The group's last member looks at the leader once it has died: a zombie
    (state Z), not gone."""
    member = ('trap "" TERM; while :; do s=$(cut -d" " -f3 /proc/$1/stat 2>/dev/null || echo gone); '
              'case $s in Z|gone) echo $s > leader; exit;; esac; sleep 0.01; done')
    build = f"sh -c '{member}' member $$ & echo started > started; exec sleep 600"
    proc = subprocess.Popen([script("linkwrap"), "run", "-q", "--", "sh", "-c", build], cwd=tmp_path,
                            stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=default_signals)
    while not (tmp_path / "started").exists():
        assert proc.poll() is None
        time.sleep(0.01)
    time.sleep(0.1)  # `exec sleep` has replaced sh
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    assert (tmp_path / "leader").read_text().strip() == "Z"


def test_on_a_terminal_the_build_reads_it_and_gets_ctrl_c(tmp_path, lw_home):
    """The build runs in a group of its own made the terminal's foreground, as a shell does: it can
    read the terminal (no SIGTTIN stop), and ^C from the terminal ends it: exit status 128+2."""
    import pty
    pid, master = pty.fork()
    if pid == 0:  # a new session with the pty as its controlling terminal
        os.chdir(tmp_path)
        try:
            default_signals()
            os.execv(script("linkwrap"), ["linkwrap", "run", "-q", "--", "sh", "-c",
                                          "read line; echo got $line; echo started > started; exec sleep 600"])
        finally:
            os._exit(127)
    import select
    os.write(master, b"hello\n")
    seen, deadline = b"", time.monotonic() + 120  # a guard against a hang, not a timing
    while b"got hello" not in seen:
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            raise AssertionError(f"the build never read the terminal (stopped by SIGTTIN?): {seen!r}")
        if select.select([master], [], [], 1)[0]:
            seen += os.read(master, 1024)
    while not (tmp_path / "started").exists():
        time.sleep(0.01)
    time.sleep(0.1)
    os.write(master, b"\x03")  # ^C, as typed
    _, status = os.waitpid(pid, 0)
    os.close(master)
    assert os.waitstatus_to_exitcode(status) == 128 + signal.SIGINT


def test_make_is_told_how_to_link_through_linkwrap_and_then_records_its_link_alone(tmp_path, lw_home):
    # GNU make's built-in rules: prog.o and m2.o compiled with $(CC) -c, prog linked with $(CC) (LINK.o).
    (tmp_path / "prog.c").write_text("int main(void){return 0;}\n")
    (tmp_path / "m2.c").write_text("int m2;\n")
    (tmp_path / "Makefile").write_text("prog: prog.o m2.o\n")
    env = {"PATH": os.path.dirname(script("linkwrap-launch")) + os.pathsep + os.environ["PATH"]}
    done = lw("run", "--", "make", "-s", cwd=tmp_path, env=env)
    assert "no links recorded" in done.stderr
    [hint] = [line for line in done.stderr.splitlines() if line.startswith("linkwrap: note: ")]
    command = hint.split("`")[1]
    assert "CC='linkwrap-launch cc'" in command
    for f in ("prog.o", "m2.o", "prog"):
        os.unlink(tmp_path / f)
    done = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, **env})
    assert done.returncode == 0 and "linkwrap: note:" not in done.stderr, done.stderr
    assert subprocess.run([str(tmp_path / "prog")]).returncode == 0
    [b] = [b for b in summary_json("--all", cwd=tmp_path)["builds"] if b["links"]]
    # The compile steps went to cc untouched: neither recorded nor chosen for.
    assert [os.path.basename(l["output_path"]) for l in b["links"]] == ["prog"]


def test_a_link_that_compiles_its_sources_too_is_said_apart_from_linking(tmp_path, lw_home):
    # make's one-step rule `$(CXX) -o $@ $<` compiles and links in one driver call: that time is
    # not the linker's, so it is marked and kept out of the linking share; `a` links alone.
    c_object(tmp_path, "m")
    (tmp_path / "main.cpp").write_text("#include <iostream>\nint main() { std::cout << 1; }\n")
    cc = script("linkwrap-launch")
    (tmp_path / "Makefile").write_text(f"all: a cxxapp\na:\n\t{cc} cc m.o -o a\n"
                                       f"cxxapp: main.cpp\n\t{cc} c++ -o $@ $<\n")
    done = lw("run", "--", "make", "-s", "-j2", cwd=tmp_path, env={"COLUMNS": "80"})
    assert "cxxapp (compile+link)" in done.stderr, done.stderr
    assert "Compile+link: 1 link whose driver compiled sources too" in done.stderr, done.stderr
    [b] = summary_json(cwd=tmp_path)["builds"]
    links = {l["crate_name"]: l for l in b["links"]}
    assert (links["cxxapp"]["compiles"], links["a"]["compiles"]) == (True, False)
    share = b["linking"]
    assert share["compile_links"] == 1 and share["compile_sum_ms"] == links["cxxapp"]["wall_ms"]
    assert share["link_sum_ms"] == links["a"]["wall_ms"]   # the share is a's link alone
    lw("report", "--html", str(tmp_path / "r.html"), cwd=tmp_path)
    page = (tmp_path / "r.html").read_text()
    assert "<span class=compiles>compile+link</span>" in page and "1 link compiled sources too" in page


def test_a_build_whose_every_link_compiles_too_has_no_linking_share(tmp_path, lw_home):
    (tmp_path / "main.c").write_text("int main(void) { return 0; }\n")
    (tmp_path / "Makefile").write_text(f"app: main.c\n\t{script('linkwrap-launch')} cc -o $@ $<\n")
    done = lw("run", "--", "make", "-s", cwd=tmp_path, env={"COLUMNS": "80"})
    assert "Linking:" not in done.stderr and "Compile+link: 1 link" in done.stderr, done.stderr
    [b] = summary_json(cwd=tmp_path)["builds"]
    assert b["linking"]["link_share"] is None and b["linking"]["compile_links"] == 1
    # summary's wrapped lines stay under their text, never at column 0
    for line in lw("summary", cwd=tmp_path, env={"COLUMNS": "60"}).stdout.splitlines():
        assert not line or line.startswith((" ", "build ", "20", "Compile+link:", "Build:", "linkwrap's own",
                                            "By linker", "Linked in ", "This project, ",
                                            "(mode")), line  # the one-line note of the columns left out


def other_checkout(tmp_path):
    """Another checkout of linkwrap (as another virtual environment's would be); -> its `linkwrap` argv."""
    import shutil
    import linkwrap
    here = os.path.dirname(os.path.dirname(os.path.abspath(linkwrap.__file__)))
    other = tmp_path / "other-checkout"
    for part in ("linkwrap", "templates"):
        shutil.copytree(os.path.join(here, part), other / part)
    return other, [sys.executable, "-c",
                   f"import sys; sys.path.insert(0, {str(other)!r}); from linkwrap.cli.main import main; sys.exit(main())"]


def test_a_project_installed_from_another_linkwrap_install_is_said_in_one_line(tmp_path, lw_home):
    # Another install links the project: a run from this one links with that one's code, and says
    # so, without failing.
    from cargokit import new_crate
    other, theirs = other_checkout(tmp_path)
    crate = new_crate(tmp_path)
    # the other checkout's own entry point (its state dir's), not this environment's installed client
    subprocess.run([*theirs, "install"], cwd=crate, check=True, capture_output=True,
                   env={**os.environ, "LINKWRAP_INSTALL_ENTRY": "state"})
    done = lw("run", "--", "cargo", "build", "-q", cwd=crate)
    said = [line for line in done.stderr.splitlines() if "another linkwrap install" in line]
    assert len(said) == 1 and said[0].startswith("linkwrap: note: the Cargo config's linker for "), done.stderr
    assert str(other) in said[0] and "`linkwrap install` from this one" in said[0], said
    assert done.returncode == 0 and "1 link" in done.stderr
    status = lw("status", cwd=crate).stdout
    assert any(line.startswith("warning: ") and "another linkwrap install" in line for line in status.splitlines())
    lw("install", cwd=crate)   # this one's, now
    done = lw("run", "--", "cargo", "build", "-q", cwd=crate)
    assert "another linkwrap install" not in done.stderr + lw("status", cwd=crate).stdout, done.stderr


def test_a_cmake_build_directory_with_another_installs_launcher_is_said_in_one_line(tmp_path, lw_home):
    other, theirs = other_checkout(tmp_path)
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.21)\nproject(p C)\n"
                                        "add_executable(app main.c)\n")
    (src / "main.c").write_text("int main(void) { return 0; }\n")
    build = tmp_path / "build"
    subprocess.run(["cmake", "-S", str(src), "-B", str(build), "-G", "Ninja"], check=True, capture_output=True)
    subprocess.run([*theirs, "install", "--cmake", str(build)], check=True, capture_output=True, cwd=tmp_path,
                   env={**os.environ, "LINKWRAP_INSTALL_ENTRY": "state"})
    done = lw("run", "--", "cmake", "--build", str(build), cwd=tmp_path)
    said = [line for line in done.stderr.splitlines() if "another linkwrap install" in line]
    assert len(said) == 1 and str(other) in said[0] and "install --cmake" in said[0], done.stderr
    assert done.returncode == 0
