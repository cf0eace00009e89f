"""The warm server's idle exit (server/lifetime.py idle_over, server/workers.py): IDLE_S without a
link ends it, unless the background work it hosts has something pending, and then at most IDLE_S more.

The rule is pure and tested as a table; the hook with a real server, a real link through the native
client and a real replay whose mold (a stand-in that runs the real one) holds until the test lets it go.
The idle time is made short with LINKWRAP_WARM_IDLE_S. Nothing is timed: the test waits past the
idle time (a sleep) and asserts what the server then is (there, or gone)."""
import os
import sys
import time

import pytest

from conftest import tool
from linkwrap.server import lifetime
from tests.bench.test_background import link, serve, user_config
from tests.server.test_server import client, socket_path, wait_for  # noqa: F401 (fixture)


@pytest.mark.parametrize("idle_for, pending, over", [
    (10, True, False), (10, False, False),     # not idle long enough: nothing is asked
    (31, False, True),                         # idle, nothing pending: it ends
    (31, True, False),                         # idle, work pending: it stays
    (61, True, True),                          # but at most the idle time again
])
def test_the_idle_exit_waits_for_pending_work_at_most_the_idle_time_again(idle_for, pending, over):
    asked = []

    def pend():
        asked.append(1)
        return pending
    assert lifetime.idle_over(idle_for, pend, idle=30) is over
    assert bool(asked) == (30 < idle_for <= 60)   # asked only where it decides


@pytest.mark.parametrize("value, seconds", [("", lifetime.IDLE_S), ("2.5", 2.5), ("0", lifetime.IDLE_S),
                                            ("-1", lifetime.IDLE_S), ("soon", lifetime.IDLE_S),
                                            ("nan", lifetime.IDLE_S), ("inf", lifetime.IDLE_S)])
def test_the_idle_time_from_the_environment(value, seconds):
    assert lifetime.idle_s({lifetime.IDLE_ENV: value}) == seconds


# A STAND-IN for mold (not mold): its first run that is no --version (a replay's) holds until the
# release file appears, once; every run then is the real mold's.
HOLDING_MOLD = r'''#!{python}
import os, sys, time
mark = os.environ["HOLD_MARK"]
if "--version" not in sys.argv and not os.path.exists(mark):
    with open(mark + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(mark + ".tmp", mark)
    deadline = time.time() + 600
    while not os.path.exists(os.environ["HOLD_RELEASE"]) and time.time() < deadline:
        time.sleep(0.1)
os.execv({mold!r}, [{mold!r}] + sys.argv[1:])
'''

IDLE = 30


def alive(home):
    return os.path.exists(socket_path(home))   # the server removes its socket as it exits (let_go)


def test_the_idle_server_stays_while_a_measurement_runs_and_at_most_the_idle_time_again(tmp_path, lw_home,
                                                                                       client, monkeypatch):
    monkeypatch.setenv("CI", "")            # set, empty: the suite itself runs with CI=true
    user_config(lw_home, background_quiet_s=0, background_load=1000, background_budget_s=40)
    standin = tmp_path / "standin-bin"
    standin.mkdir()
    (standin / "mold").write_text(HOLDING_MOLD.format(python=sys.executable, mold=tool("mold")))
    (standin / "mold").chmod(0o755)
    real_path = os.environ["PATH"]
    mark, release = tmp_path / "held", tmp_path / "release"
    serve(lw_home, monkeypatch, path_first=standin, HOLD_MARK=str(mark), HOLD_RELEASE=str(release),
          LINKWRAP_WARM_IDLE_S=str(IDLE))
    try:
        # the link itself runs the real mold: the stand-in is only on the server's own PATH
        link(client, tmp_path, {**os.environ, "PATH": real_path})
        linked = time.monotonic()
        wait_for(mark.exists, "the background replay reaching mold", timeout=IDLE)
        # past the idle time and the next check of it, the measurement still held: the server stays
        time.sleep(max(0.0, linked + IDLE + lifetime.CHECK_S + 2 - time.monotonic()))
        assert mark.exists() and not release.exists()
        assert alive(lw_home), "the server exited while its measurer was measuring"
        # and a measurement that never ends keeps it no longer than the idle time again
        wait_for(lambda: not alive(lw_home), "the server's exit at twice the idle time", timeout=10 * IDLE)
    finally:
        release.touch()


def test_with_nothing_pending_the_server_exits_after_the_idle_time(tmp_path, lw_home, client, monkeypatch):
    # CI: no background work at all, so nothing is pending once the link is served
    serve(lw_home, monkeypatch, CI="true", LINKWRAP_WARM_IDLE_S="2")
    link(client, tmp_path, dict(os.environ))
    wait_for(lambda: not alive(lw_home), "the idle server's exit", timeout=120)
