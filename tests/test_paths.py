"""linkwrap.paths computes the XDG directories itself (platformdirs costs ~20 ms to import on
every link): they must be the ones platformdirs gives."""
import os

import platformdirs
import pytest

from linkwrap import paths


@pytest.mark.parametrize("xdg", [{}, {"XDG_STATE_HOME": "/x/state", "XDG_CACHE_HOME": "/x/cache",
                                      "XDG_CONFIG_HOME": "/x/config"},
                                 {"XDG_STATE_HOME": "", "XDG_CACHE_HOME": "  "}])
def test_same_directories_as_platformdirs(monkeypatch, xdg):
    monkeypatch.delenv("LINKWRAP_HOME", raising=False)
    for var in ("XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    for k, v in xdg.items():
        monkeypatch.setenv(k, v)
    assert paths.state_dir() == platformdirs.user_state_dir("linkwrap")
    assert paths.cache_dir() == platformdirs.user_cache_dir("linkwrap")
    assert paths.config_dir() == platformdirs.user_config_dir("linkwrap")


def test_linkwrap_home_holds_everything(monkeypatch, tmp_path):
    monkeypatch.setenv("LINKWRAP_HOME", str(tmp_path))
    assert paths.state_dir() == str(tmp_path)
    assert paths.cache_dir() == str(tmp_path / "cache")
    assert paths.user_config_file() == str(tmp_path / "config" / "linkwrap.toml")
    assert paths.log_file() == str(tmp_path / "linkwrap.log")


def test_a_ctrl_c_while_the_walk_closes_its_fds_stays_a_ctrl_c(tmp_path, monkeypatch):
    # The CI failure of 2026-12-04: a KeyboardInterrupt between two of the walk's closes left closed
    # fds on its list, the finally closed them again, and EBADF replaced the interrupt (the link ran on,
    # warning "Bad file descriptor"). The interrupt must come out, and no fd of the walk stay open.
    target = tmp_path / "a" / "b"
    target.mkdir(parents=True)
    real_close, calls = os.close, []

    def close(fd):
        calls.append(fd)
        real_close(fd)
        if len(calls) == 2:
            raise KeyboardInterrupt

    before = set(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(os, "close", close)
    with pytest.raises(KeyboardInterrupt):
        paths.open_trusted_dir(str(target))
    monkeypatch.undo()
    assert len(calls) == len(set(calls))   # none closed twice
    assert set(os.listdir("/proc/self/fd")) <= before
