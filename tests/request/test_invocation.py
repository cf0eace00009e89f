"""The Invocation shape: a link learns everything from its Invocation, and its end is a result."""
import os
import subprocess

from linkrecords import c_object, db_rows
from linkwrap.request import invocation
from linkwrap import pipeline


def test_disable_and_non_links_become_the_driver_as_a_result_not_an_exec(tmp_path, lw_home):
    inv = invocation.Invocation(("--version",), "gcc", {"PATH": os.environ["PATH"]}, str(tmp_path), os.getpid(),
                                None, "script", None)
    assert pipeline.link(inv) == invocation.Exec(("gcc", "--version"), inv.environ)
    env = {**os.environ, "LINKWRAP_DISABLE": "1"}
    assert pipeline.link(inv._replace(argv=("a.o", "-o", "x"), driver=None, environ=env)) == \
        invocation.Exec(("cc", "a.o", "-o", "x"), env)


def test_disable_takes_the_usual_spellings_of_on(tmp_path, lw_home):
    inv = invocation.Invocation(("a.o", "-o", "x"), None, {}, str(tmp_path), os.getpid(), None, "script", None)
    for on in ("1", "yes", "YES", "true", "True", "on", " On "):
        env = {"PATH": os.environ["PATH"], "LINKWRAP_DISABLE": on}
        assert pipeline.link(inv._replace(environ=env)) == invocation.Exec(("cc", "a.o", "-o", "x"), env), on
    for off in ("", "0", "no", "false", "off", "2"):
        assert not invocation.disabled({"LINKWRAP_DISABLE": off}), off
    assert not invocation.disabled({})


def test_a_link_takes_environment_caller_and_entry_from_its_invocation(tmp_path, lw_home, monkeypatch):
    """The linker runs in the process's cwd (posix_spawn cannot chdir): a server's child chdirs first."""
    obj = c_object(tmp_path)
    monkeypatch.chdir(tmp_path)
    sleeper = subprocess.Popen(["sleep", "30"])  # stands for a client: its parent (this test) is its build
    try:
        env = {**os.environ, "LINKWRAP_LINKER": "mold", "CARGO_CRATE_NAME": "hello", "CARGO_BIN_NAME": "hello"}
        assert "CARGO_CRATE_NAME" not in os.environ
        inv = invocation.Invocation((os.path.basename(obj), "-o", "hello"), None, env, str(tmp_path),
                                    sleeper.pid, None, "server", None)
        assert pipeline.link(inv) == 0
        from linkwrap.facts import build
        # the build is found from the caller's parent (this test's process), not from this process's parent
        assert build.identify({}, sleeper.pid).pid == os.getpid()
    finally:
        sleeper.kill()
        sleeper.wait()
    assert subprocess.run([str(tmp_path / "hello")]).returncode == 0
    (row,) = db_rows(lw_home)
    assert (row["pid"], row["entry_point"], row["crate_name"], row["cwd"]) == (sleeper.pid, "server", "hello",
                                                                              str(tmp_path))
    assert row["linker"] == "mold" and row["linker_start"] == "direct"


def test_an_owner_tag_names_the_private_directory(tmp_path, lw_home, monkeypatch):
    from linkwrap.request import args
    from linkwrap.run import output
    from linkwrap.choice import policy
    seen = []
    real = output._remove_work_dir
    monkeypatch.setattr(output, "_remove_work_dir", lambda work, keep=None: seen.append(work) or real(work, keep))
    req = args.parse(["a.o", "-o", "out"], "cc", cwd=str(tmp_path))
    plan = output.prepare(req, policy.FRESH, "4242-1-abcdef01")
    assert os.path.basename(plan.work_dir) == "4242-1-abcdef01"
    output.abort(plan, linker_ran=False)
    assert seen == [plan.work_dir] and not os.path.exists(tmp_path / output.TMP_DIR)
