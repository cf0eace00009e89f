"""`linkwrap log path|status|on|off|clear`."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from linkrecords import c_object, cc_link, lw  # noqa: E402


def test_path_status_off_on_clear(tmp_path, lw_home):
    assert lw("log", "path", cwd=tmp_path).stdout.strip() == str(lw_home / "links.db")
    obj = c_object(tmp_path)
    assert cc_link([obj, "-o", "a"], tmp_path).returncode == 0
    status = lw("log", "status", cwd=tmp_path).stdout
    assert "Recording: on" in status and "Records: 1 links in 1 builds" in status

    assert "off" in lw("log", "off", cwd=tmp_path).stdout
    assert cc_link([obj, "-o", "b"], tmp_path).returncode == 0
    assert "Recording: off" in lw("log", "status", cwd=tmp_path).stdout
    assert "Records: 1 links" in lw("log", "status", cwd=tmp_path).stdout

    lw("log", "on", cwd=tmp_path)
    assert cc_link([obj, "-o", "c"], tmp_path).returncode == 0
    assert "Records: 2 links in 1 builds" in lw("log", "status", cwd=tmp_path).stdout

    assert "Deleted" in lw("log", "clear", cwd=tmp_path).stdout
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
