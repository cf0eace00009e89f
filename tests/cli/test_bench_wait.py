"""`linkwrap bench --wait` with nothing left to measure what it waits for: said at once, exit 1.

Real parts: a link saved through the real client with no server (LINKWRAP_SERVER=off: the Python
path), the real state file, and a real process that has exited as the measurer the state names.
"""
import os
import subprocess

from clirun import linkwrap
from linkwrap.bench import background
from tests.bench.test_background import link, serve, user_config
from tests.server.test_server import client  # noqa: F401 (fixture)


def test_with_no_server_bench_wait_says_so_at_once(tmp_path, lw_home, client, monkeypatch):
    monkeypatch.setenv("CI", "")
    project = tmp_path / "app"
    project.mkdir()
    output = link(client, project, {**os.environ, "LINKWRAP_SERVER": "off"}, save=True)
    # Saved and never measured, no server: the whole timeout would pass with nothing measuring it.
    done = linkwrap("bench", "--wait", "--timeout", "600", cwd=project)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"linkwrap: no warm server is running to measure {output}; measure now with `linkwrap bench`"]

    # The state of a measurer that went away mid-measurement: queued, yielded, its pid gone.
    gone = subprocess.Popen(["true"])
    gone.wait()
    background.update_state(lambda st: st.update(queued=[output, output + "-other"], running=output,
                                                 pid=gone.pid))
    done = linkwrap("bench", "--wait", "--timeout", "600", cwd=project)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "linkwrap: no warm server is running to measure 2 saved links; measure now with `linkwrap bench`"]


def test_with_a_server_running_bench_wait_waits_for_it(tmp_path, lw_home, client, monkeypatch):
    monkeypatch.setenv("CI", "")
    user_config(lw_home, background_quiet_s=0, background_load=1000, background_budget_s=40)
    project = tmp_path / "app"
    project.mkdir()
    output = link(client, project, {**os.environ, "LINKWRAP_SERVER": "off"}, save=True)
    serve(lw_home, monkeypatch)
    done = linkwrap("bench", "--wait", "--timeout", "600", cwd=project, env={"COLUMNS": "250"})
    assert done.returncode == 0, done.stderr
    assert "no warm server" not in done.stderr and output in done.stdout.replace("\n", "")
