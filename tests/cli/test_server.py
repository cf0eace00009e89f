"""`linkwrap server status`: the server's own line, with its start as a time and an age."""
from linkwrap.cli import server


def test_the_start_is_a_utc_time_and_an_age():
    line = "pid=7 version=0.1.0 install=ab links=3 running=0 started=1796070943"
    assert server.readable(line, now=1796070943 + 185) == \
        "pid=7 version=0.1.0 install=ab links=3 running=0 started=2026-11-30 20:35:43 UTC (3 min ago)"
    assert server.readable(line, now=1796070943 + 5).endswith("(5 s ago)")
    assert server.readable(line, now=1796070943 + 3 * 86400).endswith("(3 days ago)")
    assert server.readable("pid=7 something else") == "pid=7 something else"
