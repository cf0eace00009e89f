"""linkwrap.paths computes the XDG directories itself (platformdirs costs ~20 ms to import on
every link): they must be the ones platformdirs gives."""
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
