"""`linkwrap log path|status|on|off|clear`."""
import os
import pty
import select
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from conftest import script  # noqa: E402
from linkrecords import c_object, cc_link, lw  # noqa: E402


def test_path_status_off_on_clear(tmp_path, lw_home):
    assert lw("log", "path", cwd=tmp_path).stdout == (f"link records (SQLite): {lw_home / 'links.db'}\n"
                                                      f"linkwrap's own faults (text log): {lw_home / 'linkwrap.log'}\n")
    alone = lw("log", cwd=tmp_path).stdout.splitlines()  # alone: status
    assert alone[0] == "Recording: on" and alone[:2] == lw("log", "status", cwd=tmp_path).stdout.splitlines()[:2]
    obj = c_object(tmp_path)
    assert cc_link([obj, "-o", "a"], tmp_path).returncode == 0
    status = lw("log", "status", cwd=tmp_path).stdout
    assert "Recording: on" in status and "Records: 1 link in 1 build" in status

    assert "off" in lw("log", "off", cwd=tmp_path).stdout
    assert cc_link([obj, "-o", "b"], tmp_path).returncode == 0
    assert "Recording: off" in lw("log", "status", cwd=tmp_path).stdout
    assert "Records: 1 link " in lw("log", "status", cwd=tmp_path).stdout

    lw("log", "on", cwd=tmp_path)
    assert cc_link([obj, "-o", "c"], tmp_path).returncode == 0
    assert "Records: 2 links in 1 build," in lw("log", "status", cwd=tmp_path).stdout

    assert "Deleted" in lw("log", "clear", "--yes", cwd=tmp_path).stdout
    assert not (lw_home / "links.db").exists()
    assert "Records: 0 links" in lw("log", "status", cwd=tmp_path).stdout


def test_a_recording_failure_shows_in_status_until_log_on(tmp_path, lw_home):
    (lw_home / ".warned-EROFS").write_text("")
    assert "Recording failed at least once (EROFS)" in lw("log", "status", cwd=tmp_path).stdout
    lw("log", "on", cwd=tmp_path)
    assert "Recording failed" not in lw("log", "status", cwd=tmp_path).stdout


def test_an_unknown_action_is_a_usage_error(tmp_path, lw_home):
    done = lw("log", "backup", cwd=tmp_path, check=False)
    assert done.returncode == 2 and "invalid choice" in done.stderr


def test_clear_without_a_terminal_needs_yes_and_keeps_the_records(tmp_path, lw_home):
    obj = c_object(tmp_path)
    assert cc_link([obj, "-o", "a"], tmp_path).returncode == 0
    done = lw("log", "clear", cwd=tmp_path, check=False)  # stdin is not a terminal here
    assert done.returncode == 2 and "add --yes" in done.stderr and done.stderr.startswith("linkwrap: error:")
    assert "Records: 1 link " in lw("log", "status", cwd=tmp_path).stdout


def on_a_terminal(argv, answer, cwd):
    """Run `linkwrap ARGV` on a real pseudo-terminal, answer its question; -> (exit status, screen text)."""
    main, sub = pty.openpty()
    proc = subprocess.Popen([script("linkwrap"), *argv], stdin=sub, stdout=sub, stderr=sub, cwd=cwd,
                            close_fds=True)
    os.close(sub)
    seen, answered, deadline = b"", False, time.monotonic() + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            seen += chunk
        if not answered and b"[y/N]" in seen:
            os.write(main, answer + b"\n")
            answered = True
        if proc.poll() is not None and not ready:
            break
    os.close(main)
    return proc.wait(timeout=30), seen.decode("utf-8", "replace")


def test_clear_on_a_terminal_asks_first(tmp_path, lw_home):
    obj = c_object(tmp_path)
    assert cc_link([obj, "-o", "a"], tmp_path).returncode == 0
    code, screen = on_a_terminal(["log", "clear"], b"n", tmp_path)
    assert f"Delete 1 link record in 1 build in {lw_home}? [y/N]" in screen
    assert code == 1 and "Nothing deleted." in screen
    assert (lw_home / "links.db").exists()
    code, screen = on_a_terminal(["log", "clear"], b"y", tmp_path)
    assert code == 0 and "Deleted the link records" in screen
    assert not (lw_home / "links.db").exists()


def test_status_names_the_fault_log_and_not_config_notices_as_recording_failures(tmp_path, lw_home):
    (lw_home / "linkwrap.log").write_text("--- a fault\n")
    (lw_home / ".warned-config-0123abcd").write_text("")
    from linkrecords import lw
    done = lw("log", "status")
    assert done.returncode == 0, done.stderr
    assert f"linkwrap's own faults (tracebacks): {lw_home / 'linkwrap.log'}" in done.stdout
    assert "Recording failed" not in done.stdout


def test_config_errors_are_the_users_and_counted_apart_from_faults(tmp_path, lw_home):
    obj = c_object(tmp_path)
    failed = cc_link([obj, "-o", "a"], tmp_path, env={"LINKWRAP_LINKER": "moldy"})
    assert failed.returncode != 0 and "LINKWRAP_LINKER=moldy" in failed.stderr
    log = (lw_home / "linkwrap.log").read_text()
    assert "configuration error: LINKWRAP_LINKER=moldy" in log and "linkwrap fault" not in log
    done = lw("log", "status")
    assert "linkwrap's own faults" not in done.stdout
    assert (f"Configuration errors (yours to fix): 1 in {lw_home / 'linkwrap.log'}" in done.stdout
            and "the last: LINKWRAP_LINKER=moldy" in done.stdout), done.stdout
    with open(lw_home / "linkwrap.log", "a") as f:
        f.write("--- 2026-01-01T00:00:00Z linkwrap 0 pid 1\nlinkwrap fault while probing: OSError: x\n\n")
    done = lw("log", "status")
    assert f"linkwrap's own faults (tracebacks): {lw_home / 'linkwrap.log'}" in done.stdout
    assert done.stdout.split("linkwrap's own faults (tracebacks): ")[1].split("\n")[0].endswith(": 1")
    assert "Configuration errors (yours to fix): 1 in" in done.stdout


def test_a_read_only_state_dir_is_one_line_not_a_crash(tmp_path, monkeypatch):
    import mounts
    state = tmp_path / "state"
    state.mkdir()
    with mounts.tmpfs_mount(tmp_path / "ro", "ro,size=1m") as point:
        monkeypatch.setenv("LINKWRAP_HOME", point)
        from linkrecords import lw
        done = lw("log", "off", check=False)
        assert done.returncode == 1
        assert done.stderr == f"linkwrap: error: {point}/logs-off: Read-only file system\n"


def test_a_fault_log_that_is_a_directory_is_said_and_not_counted_as_a_fault(tmp_path, lw_home):
    log = lw_home / "linkwrap.log"
    log.mkdir()
    from linkwrap import faults
    assert faults.note("probing", RuntimeError("boom")).endswith("RuntimeError: boom")  # kept nowhere, no raise
    done = lw("log", "status")
    assert done.stderr == ""
    assert "linkwrap's own faults (tracebacks)" not in done.stdout
    assert (f"linkwrap's own faults cannot be logged or read: {log}: Is a directory; remove it or make it "
            "a file of yours\n") in done.stdout


def test_a_recording_failure_said_in_several_builds_is_one_line_until_log_on(tmp_path, lw_home, monkeypatch):
    from linkwrap import faults
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    markers = [faults.fallback_marker(str(lw_home), f"EACCES-{crc}") for crc in ("0000000a", "0000000b")]
    for m in markers:
        open(m, "w").close()
    status = lw("log", "status").stdout
    assert [line for line in status.splitlines() if line.startswith("Recording failed")] == [
        f"Recording failed at least once (EACCES); `linkwrap log on` resets this notice: {markers[0]}"]
    lw("log", "on")
    assert not any(os.path.exists(m) for m in markers)
    assert "Recording failed" not in lw("log", "status").stdout
