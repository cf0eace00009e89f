"""linkwrap's own faults: the log keeps bugs with their traceback, the user's errors without."""
from linkwrap import faults
from linkwrap.errors import ConfigError


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


def test_a_fault_the_log_cannot_keep_says_why_and_not_where_it_is_not(lw_home):
    log = lw_home / "linkwrap.log"
    log.mkdir()
    assert faults.note("probing", RuntimeError("boom")) == "linkwrap fault while probing: RuntimeError: boom"
    assert isinstance(faults.unkept, IsADirectoryError) and faults.unkept.filename == str(log)
    log.rmdir()
    faults.note("probing", RuntimeError("again"))
    assert faults.unkept is None and "RuntimeError: again" in log.read_text()
