"""A measurement taken while the rest of the machine is busy (linkwrap/bench/load.py): marked, still
counted, and measured again by the warm server when the machine is idle.

Real parts: a real competing CPU load (busy-loop processes, one per usable CPU, at the normal
priority the bench itself runs at), real `linkwrap bench` replays, the real server. The machine the
tests run on is shared, so "idle" is the user's file lifting the load limit far above anything the
machine can reach, and "busy" is a limit far below what the busy loops alone use; nothing is timed.
"""
import json
import os
import subprocess
import sys

from clirun import linkwrap
from linkrecords import db_rows
from linkwrap.bench import background, load
from linkwrap.evidence import measured
from tests.bench.test_background import finished, link, serve, user_config
from tests.server.test_server import client  # noqa: F401 (fixture)


class BusyLoops:
    """One busy-loop process per usable CPU: the rest of the machine, kept busy."""

    def __enter__(self):
        n = len(os.sched_getaffinity(0))
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
            p.wait()


def saved_link(client, project):
    """A link saved with no server (the Python path): `linkwrap bench` and the server replay it."""
    env = {**os.environ, "LINKWRAP_SERVER": "off"}
    return link(client, project, env, save=True)


def rows_of(project, output):
    key = measured.output_key(output)
    return [r for r in measured.load_rows(str(project)) if r.output == key]


def queued_outputs():
    return [m["output"] for m, *_ in background.queued(os.environ)[0]]


def test_the_rest_of_the_machines_cpu_is_counted_and_the_measurers_own_is_not():
    start = load.sample()
    with BusyLoops() as loops:
        # Our own child's CPU (a busy loop run to its end) is the measurer's, not the machine's.
        subprocess.run([sys.executable, "-c", "import time\nt = time.process_time()\n"
                        "while time.process_time() - t < 0.5: pass"], check=True)
        loops_cpu = sum(_cpu_s(p.pid) for p in loops.procs)
        end = load.sample()
    cpu_s, wall_s = load.others(start, end)
    own = end[1] - start[1]
    assert own >= 0.5
    # At least what the busy loops used (less a clock tick each, /proc/stat's resolution)…
    ticks = len(loops.procs) * 2 / os.sysconf("SC_CLK_TCK")
    assert cpu_s >= loops_cpu - ticks, (cpu_s, loops_cpu)
    # …and not our own: the machine's whole busy time less it.
    assert cpu_s <= (end[0] - start[0]) - own + 1e-9
    assert load.others_cpus(cpu_s, wall_s) == cpu_s / wall_s


def _cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_measurement_under_load_is_marked_busy_and_measured_again_when_idle(tmp_path, lw_home, client,
                                                                              monkeypatch):
    monkeypatch.setenv("CI", "")   # set, empty: the suite itself runs with CI=true in CI
    # The limit: a tenth of a CPU per usable CPU, far below what the busy loops use.
    user_config(lw_home, background_load=0.1, background_quiet_s=0, background_budget_s=40)
    project = tmp_path / "app"
    project.mkdir()
    output = saved_link(client, project)
    with BusyLoops():
        done = linkwrap("bench", "--budget", "5", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    [report] = json.loads(done.stdout)
    cpus = len(os.sched_getaffinity(0))
    assert report["load"]["busy"] is True and report["load"]["limit_cpus"] == 0.1 * cpus
    assert report["load"]["others_cpus"] >= report["load"]["limit_cpus"]
    rows = rows_of(project, output)
    assert rows and all(r.busy is True and r.others_cpus >= 0.1 * cpus for r in rows)
    # the store's table has the mark too, as a column (reports and queries)
    stored = db_rows(lw_home, "SELECT others_cpus, taken_busy FROM bench_results")
    assert stored and all(r["taken_busy"] == 1 and r["others_cpus"] >= 0.1 * cpus for r in stored), stored
    # It counts (a link of this output follows it) and it is queued again for an idle machine.
    assert output in queued_outputs()

    # The machine idle, as far as the limit goes: the warm server measures it again.
    user_config(lw_home, background_load=1000, background_quiet_s=0, background_budget_s=40)
    serve(lw_home, monkeypatch)
    waited = linkwrap("bench", "--wait", "--timeout", "600", "--json", cwd=project)
    assert waited.returncode == 0, waited.stderr
    [record] = finished(output)
    assert record["load"]["busy"] is False and record["load"]["limit_cpus"] == 1000 * cpus
    [again] = json.loads(waited.stdout)
    assert again["load"]["busy"] is False
    rows = rows_of(project, output)
    assert rows and all(r.busy is False for r in rows)   # the busy results replaced
    stored = db_rows(lw_home, "SELECT taken_busy FROM bench_results ORDER BY id")
    assert stored[-1]["taken_busy"] == 0, stored           # the background measurer's rows, idle
    assert output not in queued_outputs()
    table = linkwrap("bench", "--wait", cwd=project, env={"COLUMNS": "250"})
    assert "others used" in table.stdout and "taken busy" not in table.stdout


def test_bench_and_status_say_a_measurement_was_taken_busy(tmp_path, lw_home, client, monkeypatch):
    monkeypatch.setenv("CI", "")
    user_config(lw_home, background_load=0.1)
    project = tmp_path / "app"
    project.mkdir()
    saved_link(client, project)
    with BusyLoops():
        done = linkwrap("bench", "--budget", "5", cwd=project, env={"COLUMNS": "250"})
    assert done.returncode == 0, done.stderr
    assert "taken busy (limit" in done.stdout and "measured again when idle" in done.stdout
    status = linkwrap("status", cwd=project).stdout
    assert "1 taken busy" in status and "measured again when idle" in status
    # Measured again on an idle machine (as far as the limit goes): no longer said.
    user_config(lw_home, background_load=1000)
    assert linkwrap("bench", "--budget", "5", cwd=project).returncode == 0
    assert "taken busy" not in linkwrap("status", cwd=project).stdout
