"""linkwrap's own faults: the log keeps bugs with their traceback, the user's errors without."""
from linkwrap import faults
from linkwrap.errors import ConfigError
from users import other_user  # noqa: F401


def test_a_bug_is_logged_with_its_traceback(lw_home):
    try:
        raise RuntimeError("boom")
    except RuntimeError as e:
        reason = faults.note("probing", e)
    assert reason == "linkwrap fault while probing: RuntimeError: boom"
    text = (lw_home / "linkwrap.log").read_text()
    assert reason in text and "Traceback (most recent call last)" in text


def test_a_users_error_is_logged_without_traceback(lw_home):
    faults.note("choosing a linker", ConfigError("linkwrap.toml:2: bad"))
    assert "Traceback" not in (lw_home / "linkwrap.log").read_text()


def test_warn_once_says_it_once(lw_home, capfd):
    faults.warn_once("config-1", "first")
    faults.warn_once("config-1", "second")
    faults.warn_once("config-2", "other")
    assert capfd.readouterr().err == "linkwrap: warning: first\nlinkwrap: warning: other\n"


def test_warn_once_remembers_in_tmp_when_the_state_dir_cannot(tmp_path, monkeypatch, capfd):
    state = tmp_path / "not-a-dir"
    state.write_text("")  # nothing can be created under it (ENOTDIR), even by root
    monkeypatch.setenv("LINKWRAP_HOME", str(state))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    faults.warn_once("k", "x")
    faults.warn_once("k", "x")
    assert capfd.readouterr().err == "linkwrap: warning: x\n"
    assert [p.name for p in tmp_path.glob("linkwrap-*-warned-k-*")]


def test_a_marker_another_user_planted_in_tmp_does_not_silence_the_warning(tmp_path, monkeypatch, capfd,
                                                                          other_user):
    import os
    state = tmp_path / "not-a-dir"
    state.write_text("")
    monkeypatch.setenv("LINKWRAP_HOME", str(state))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    planted = faults.fallback_marker(str(state), "k")
    open(planted, "w").close()
    os.chown(planted, other_user[1], other_user[2])   # as another user of a shared /tmp would
    faults.warn_once("k", "x")
    assert capfd.readouterr().err == "linkwrap: warning: x\n"


def test_a_fault_the_log_cannot_keep_says_why_and_not_where_it_is_not(lw_home):
    log = lw_home / "linkwrap.log"
    log.mkdir()
    assert faults.note("probing", RuntimeError("boom")) == "linkwrap fault while probing: RuntimeError: boom"
    assert isinstance(faults.unkept, IsADirectoryError) and faults.unkept.filename == str(log)
    log.rmdir()
    faults.note("probing", RuntimeError("again"))
    assert faults.unkept is None and "RuntimeError: again" in log.read_text()


def _in_a_terminal(argv, cwd, env, timeout=600):
    """Run argv as a session leader whose controlling terminal is a new pty (as a build in a terminal
    is); -> (exit status, everything the terminal showed)."""
    import os
    import pty
    import select
    import time
    pid, master = pty.fork()
    if pid == 0:  # the child: pty.fork made the pty its controlling terminal
        try:
            os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    shown, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the last process holding the terminal is gone
                break
            if not chunk:
                break
            shown += chunk
    _, status = os.waitpid(pid, 0)
    os.close(master)
    return os.waitstatus_to_exitcode(status), shown.decode("utf-8", "replace")


def _two_binaries_installed(tmp_path, monkeypatch):
    """A crate of two binaries (two links a build) with linkwrap installed as its linker."""
    import os
    import subprocess
    from cargokit import env_name, host_triple, new_crate
    from conftest import script
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "cargo-home"))
    for var in ("RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", env_name(host_triple(), "LINKER")):
        monkeypatch.delenv(var, raising=False)
    crate = new_crate(tmp_path)
    os.mkdir(os.path.join(crate, "src", "bin"))
    with open(os.path.join(crate, "src", "bin", "second.rs"), "w") as f:
        f.write("fn main() {}\n")
    assert subprocess.run([script("linkwrap"), "install"], cwd=crate, capture_output=True).returncode == 0
    return crate


def test_a_warning_in_a_cargo_build_reaches_the_builds_terminal(tmp_path, lw_home, monkeypatch):
    """rustc keeps a successful linker's stderr to itself (rustc 1.95 shows it only under -W
    linker-messages): a once-per-build warning of a link rustc runs (LINKWRAP_CONFIG_ERRORS=warn and a
    broken linkwrap.toml) is written to the build's terminal instead, once per build, and the build
    passes. Without a terminal (a pipe, as CI has) it goes to stderr: unseen by default, a rustc
    warning under -W linker-messages (docs/policy.md section 9, "Where a warning is seen")."""
    import os
    import subprocess
    crate = _two_binaries_installed(tmp_path, monkeypatch)
    with open(os.path.join(crate, "linkwrap.toml"), "w") as f:
        f.write("prefer = [\n")  # malformed
    env = {**os.environ, "LINKWRAP_CONFIG_ERRORS": "warn", "TERM": "xterm",
           "CARGO_TARGET_DIR": str(tmp_path / "target")}

    def piped(target, **extra):
        # A new session: no controlling terminal, whatever the terminal pytest runs in.
        return subprocess.run(["cargo", "build", "--quiet"], cwd=crate, start_new_session=True,
                              env={**env, "CARGO_TARGET_DIR": str(tmp_path / target), **extra},
                              capture_output=True, text=True, timeout=600)
    quiet = piped("t0")
    assert quiet.returncode == 0 and "linkwrap" not in quiet.stderr, quiet.stderr
    told = piped("t1", RUSTFLAGS="-W linker-messages")
    assert told.returncode == 0, told.stderr
    said = [line for line in told.stderr.splitlines() if "linking as asked" in line]
    # rustc's warning (it drops our own "warning: "), once a build
    assert len(said) == 1 and "linker stderr: linkwrap:" in said[0], told.stderr

    for build in (1, 2):
        if build == 2:  # the next build, both binaries relinked: said again, once
            for name in ("main.rs", os.path.join("bin", "second.rs")):
                with open(os.path.join(crate, "src", name), "a") as f:
                    f.write("// edited\n")
        status, shown = _in_a_terminal(["cargo", "build", "--quiet"], crate, env)
        assert status == 0, shown
        warnings = [line for line in shown.splitlines() if "linkwrap: warning:" in line]
        assert len(warnings) == 1, (build, shown)  # two links in the build, said once
        assert "linkwrap.toml" in warnings[0] and "linking as asked" in warnings[0]


def test_a_forced_linker_not_installed_is_said_in_the_cargo_builds_terminal(tmp_path, lw_home, monkeypatch):
    """LINKWRAP_LINKER=wild with no wild on PATH: the build links as usual and its terminal is told so
    in one line (issue 37: it said nothing during the build), and the binaries run."""
    import os
    import subprocess
    crate = _two_binaries_installed(tmp_path, monkeypatch)
    path = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep)
                           if d and not os.access(os.path.join(d, "wild"), os.X_OK))
    target = tmp_path / "target"
    env = {**os.environ, "PATH": path, "LINKWRAP_LINKER": "wild", "TERM": "dumb",
           "CARGO_TARGET_DIR": str(target)}
    status, shown = _in_a_terminal(["cargo", "build", "--quiet"], crate, env)
    assert status == 0, shown
    warnings = [line for line in shown.splitlines() if "linkwrap: warning:" in line]
    assert len(warnings) == 1, shown
    assert "LINKWRAP_LINKER=wild, but wild is not installed" in warnings[0]
    assert "\x1b[K" not in warnings[0]  # TERM=dumb: no escape over the progress line
    for name in ("hello", "second"):
        assert subprocess.run([str(target / "debug" / name)]).returncode == 0
