"""Build grouping without Cargo's help: nearest cargo/ninja/make ancestor, or linkwrap run's id."""
import os
import shutil
import subprocess
import sys
import textwrap

from linkwrap.facts import build

PROBE = f"{sys.executable} -c 'from linkwrap.facts import build; print(*build.identify(), sep=chr(9))'"


def identities(path):
    return [line.split("\t") for line in open(path).read().splitlines()]


def test_every_step_of_one_ninja_run_is_one_build_and_the_next_run_another(tmp_path):
    (tmp_path / "build.ninja").write_text(textwrap.dedent(f"""\
        rule probe
          command = {PROBE} > $out
        build a.txt: probe
        build b.txt: probe
        """))
    env = {k: v for k, v in os.environ.items() if k != build.ENV}
    subprocess.run(["ninja", "-j2"], cwd=tmp_path, check=True, capture_output=True, env=env)
    [a], [b] = identities(tmp_path / "a.txt"), identities(tmp_path / "b.txt")
    assert a == b
    key, tool, pid, command, cwd = a
    assert tool == "ninja" and key.startswith(f"ninja:{pid}:") and command.startswith("ninja")
    assert cwd == str(tmp_path)
    subprocess.run(["ninja", "-t", "clean"], cwd=tmp_path, check=True, capture_output=True)
    subprocess.run(["ninja"], cwd=tmp_path, check=True, capture_output=True, env=env)
    assert identities(tmp_path / "a.txt")[0][0] != key


def test_make_groups_its_recipes_even_through_a_shell(tmp_path):
    (tmp_path / "Makefile").write_text(f"all: a b\na:\n\t{PROBE} > a.txt\nb:\n\tsh -c \"{PROBE}\" > b.txt\n")
    env = {k: v for k, v in os.environ.items() if k != build.ENV}
    subprocess.run(["make", "-s", "-j2"], cwd=tmp_path, check=True, env=env)
    [a], [b] = identities(tmp_path / "a.txt"), identities(tmp_path / "b.txt")
    assert a == b and a[1] == "make"


def test_linkwrap_runs_id_wins_over_any_ancestor():
    b = build.identify({build.ENV: "run:1:2:abc", "LINKWRAP_BUILD_CWD": "/src"})
    assert (b.key, b.tool, b.cwd) == ("run:1:2:abc", "linkwrap run", "/src")


def test_outside_any_build_the_link_groups_by_whoever_ran_it(tmp_path):
    out = subprocess.run(["sh", "-c", PROBE], capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if k != build.ENV}).stdout
    key, tool, pid, _, _ = out.rstrip("\n").split("\t")
    assert tool == "sh" and key.startswith(f"sh:{pid}:")


def test_one_process_asked_again_sees_a_shell_that_changed_directory(tmp_path):
    # A server's child identifies many links' builds in one process: a build tool's are kept (its pid
    # and start time name it, and it changes no directory once it runs), but whoever ran a link outside
    # any build (a shell, a script) may cd between two links.
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shell = subprocess.Popen([sys.executable, "-c", "import os, sys\n"
                              "for line in sys.stdin:\n    os.chdir(line.strip()); print('ok', flush=True)"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tmp_path / "a")
    try:
        start = build.read_stat(shell.pid)[2]
        first = build._build("sh", shell.pid, start, "boot")
        as_tool = build._build("ninja", shell.pid, start, "boot")
        shell.stdin.write(f"{tmp_path / 'b'}\n")
        shell.stdin.flush()
        assert shell.stdout.readline() == "ok\n"
        assert (first.cwd, build._build("sh", shell.pid, start, "boot").cwd) == (str(tmp_path / "a"), str(tmp_path / "b"))
        assert build._build("ninja", shell.pid, start, "boot") is as_tool
    finally:
        shell.stdin.close()
        shell.wait()


def test_a_process_name_with_spaces_and_parentheses_is_read_right(tmp_path):
    odd = tmp_path / "x) (y z"
    shutil.copy("/bin/sleep", odd)
    p = subprocess.Popen([str(odd), "5"])
    try:
        name, ppid, start = build.read_stat(p.pid)
        assert (name, ppid) == ("x) (y z", os.getpid()) and start > 0
    finally:
        p.kill()
        p.wait()


# --- project_of: the project a build command builds ---------------------------

def test_a_cargo_member_belongs_to_its_workspace_and_manifest_path_moves_the_start(tmp_path):
    (tmp_path / "ws" / "member" / "src").mkdir(parents=True)
    (tmp_path / "ws" / "Cargo.toml").write_text('[workspace]\nmembers = ["member"]\n')
    (tmp_path / "ws" / "member" / "Cargo.toml").write_text('[package]\nname = "member"\nversion = "0.1.0"\n')
    (tmp_path / "lone" / "src").mkdir(parents=True)
    (tmp_path / "lone" / "Cargo.toml").write_text('[package]\nname = "lone"\nversion = "0.1.0"\n')
    ws = str(tmp_path / "ws")
    assert build.project_of(f"{ws}/member/src", ["cargo", "build"]) == (ws, f"{ws}/target")
    assert build.project_of(str(tmp_path), ["cargo", "build", "--manifest-path", "lone/Cargo.toml"]) == \
        (str(tmp_path / "lone"), str(tmp_path / "lone" / "target"))
    # CARGO_TARGET_DIR elsewhere: found from a linked output by the CACHEDIR.TAG cargo writes.
    target = tmp_path / "elsewhere"
    (target / "debug" / "deps").mkdir(parents=True)
    (target / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    assert build.project_of(ws, ["cargo", "build"], output=str(target / "debug" / "deps" / "member-0123")) == \
        (ws, str(target))


def test_a_cmake_build_directory_belongs_to_its_source_directory(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.13)\nproject(p C)\n"
                                        "add_executable(p main.c)\n")
    (src / "main.c").write_text("int main(void){return 0;}\n")
    subprocess.run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(out)], check=True, capture_output=True)
    assert build.project_of(str(out), ["ninja"]) == (str(src), str(out))
    assert build.project_of(str(tmp_path), ["ninja", "-C", "out"]) == (str(src), str(out))
    assert build.project_of(str(tmp_path), ["cmake", "--build", "out"]) == (str(src), str(out))
    # A hand-written ninja file's project is its directory.
    (tmp_path / "plain").mkdir()
    assert build.project_of(str(tmp_path), ["/usr/bin/ninja", "-f", "plain/build.ninja"]) == \
        (str(tmp_path / "plain"), str(tmp_path / "plain"))
