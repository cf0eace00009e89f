"""`linkwrap server status`: the server's own line, with its start as a time and an age."""
from linkwrap.cli import server as server_cli


def test_the_start_is_a_utc_time_and_an_age():
    line = "pid=7 version=0.1.0 install=ab links=3 running=0 started=1796070943"
    assert server_cli.readable(line, now=1796070943 + 185) == \
        "pid=7 version=0.1.0 install=ab links=3 running=0 started=2026-11-30 20:35:43 UTC (3 min ago)"
    assert server_cli.readable(line, now=1796070943 + 5).endswith("(5 s ago)")
    assert server_cli.readable(line, now=1796070943 + 3 * 86400).endswith("(3 days ago)")
    assert server_cli.readable("pid=7 something else") == "pid=7 something else"


# The server's figures, from a real server (the fixtures of tests/server/test_server.py).
import os  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402

from linkrecords import lw  # noqa: E402
from tests.server.test_server import client, link, server, socket_path, wait_for  # noqa: F401,E402


def figures(text):
    m = re.search(r"links=(\d+) running=(\d+)", text)
    assert m, text
    return int(m.group(1)), int(m.group(2))


def test_status_counts_links_only_and_the_servers_own_figures(tmp_path, lw_home, client, server):  # noqa: F811
    # Status requests are not links, and every spare answers with the server's figures, not its own
    # copy from when it was forked: asked again and again, the figures stay.
    for _ in range(4):
        assert figures(lw("server", "status").stdout) == (0, 0)
    env = {**os.environ, "LINKWRAP_LINKER": "mold"}
    for out in ("a", "b"):
        done = link(client, tmp_path, env, out=out)
        assert done.returncode == 0, done.stderr
    # the parent hears a link's answer on its notify pipe: readiness, not timing
    wait_for(lambda: figures(lw("server", "status").stdout) == (2, 0), "2 links, none running")
    for _ in range(3):
        assert figures(lw("server", "status").stdout) == (2, 0)


def test_after_stop_status_says_stopping_or_not_running(lw_home, server):  # noqa: F811
    assert "stopping" in lw("server", "stop").stdout
    out = lw("server", "status").stdout
    assert "stopping" in out or out == "no link server running\n", out


def test_after_a_kill_status_is_one_line(lw_home, server):  # noqa: F811
    os.kill(server, signal.SIGKILL)
    os.waitpid(server, 0)
    # its spares see the server gone and exit; the socket stays behind
    wait_for(lambda: "pid=" not in lw("server", "status").stdout, "the spares' exit")
    assert os.path.exists(socket_path(lw_home))
    out = lw("server", "status").stdout
    assert out.count("\n") == 1 and out.startswith("no link server running"), out
    assert "stale socket" in out, out
    out = lw("server", "stop").stdout
    assert out.count("\n") == 1 and "removed" in out and not os.path.exists(socket_path(lw_home)), out
