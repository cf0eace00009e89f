"""Summary arithmetic: --since parsing, busy time of overlapping links, totals."""
import pytest

from linkwrap.errors import UsageError
from linkwrap.report import summary


def test_since_accepts_durations_and_dates():
    now = 1_800_000_000.0
    assert summary.parse_since("30m", now) == "2027-01-15T07:30:00.000Z"
    assert summary.parse_since("1d", now) == "2027-01-14T08:00:00.000Z"
    assert summary.parse_since("2026-05-01", now) == "2026-05-01T00:00:00.000Z"
    with pytest.raises(UsageError, match="--since 'soon'"):
        summary.parse_since("soon", now)


def link(start, wall, **kw):
    base = {"started_utc": start, "wall_ms": wall, "cpu_ms": wall, "overhead_ms": 1.0, "peak_rss_kb": 10,
            "output_bytes": 5, "failed": False, "fell_back": False, "fault": None}
    return {**base, **kw}


def test_busy_time_counts_parallel_links_once_and_totals_add_up():
    links = [link("2026-01-01T00:00:00.000Z", 500.0), link("2026-01-01T00:00:00.250Z", 500.0, failed=True),
             link("2026-01-01T00:00:02.000Z", 100.0, fell_back=True, peak_rss_kb=99)]
    assert summary.busy_ms(links) == pytest.approx(850.0)
    t = summary.totals(links)
    assert (t["links"], t["wall_ms"], t["peak_rss_kb"], t["failures"], t["fell_back"]) == (3, 1100.0, 99, 1, 1)


def test_a_fault_counts_as_a_fall_back_and_a_bad_exit_as_a_failure():
    links = [link("2026-01-01T00:00:00.000Z", 1.0), link("2026-01-01T00:00:01.000Z", 1.0, fault="linkwrap fault: x"),
             link("2026-01-01T00:00:02.000Z", 1.0, fell_back=True),
             link("2026-01-01T00:00:03.000Z", 1.0, fell_back=True, failed=True)]
    t = summary.totals(links)
    # the last link failed as asked after its first attempt failed: a failure and a fall-back
    assert (t["failures"], t["fell_back"], t["faults"]) == (1, 3, 1)


# --- which .ninja_log belongs to which build -----------------------------------

import os  # noqa: E402


def ninja_case(tmp_path, *, tool="ninja", outputs=("app", "tool"), log_outputs=("app", "tool"),
               first_link_unix=1_800_000_000.0, log_mtime=1_800_000_003.0):
    """A build whose links start at first_link_unix (1 s apart, 0.5 s each) and a .ninja_log of 3 s."""
    log = tmp_path / ".ninja_log"
    # Lines in the order edges finished, as ninja writes them; the stamp ends last, 3 s after ninja's start.
    lines = [f"{i * 1000}\t{i * 1000 + 500}\t0\t{o}\th{i}" for i, o in enumerate(log_outputs)]
    lines.append("0\t3000\t0\tdone.stamp\thz")
    log.write_text("# ninja log v5\n" + "\n".join(lines) + "\n")
    os.utime(log, (log_mtime, log_mtime))
    from linkwrap.store.spool import utc_iso
    links = [link(utc_iso(first_link_unix + i), 500.0, output_path=str(tmp_path / o))
             for i, o in enumerate(outputs)]
    return {"id": 7, "tool": tool}, links, str(log)


def test_a_ninja_log_whose_last_run_is_the_builds_gives_the_share(tmp_path):
    build, links, path = ninja_case(tmp_path)
    said = []
    share = summary.ninja_share(build, links, path, on_mismatch=said.append)
    assert said == [] and share["links_matched"] == 2 and share["link_edges"] == 2
    assert share["wall_ms"] == 3000.0 and share["link_busy_ms"] == 1000.0


@pytest.mark.parametrize("case, why", [
    ({"tool": "sh"}, "not run by ninja (it was run by sh)"),
    # The log's last run ended an hour before these links: an earlier ninja build's.
    ({"log_mtime": 1_800_000_003.0 - 3600}, "is not the run of that build's links"),
    # ... or the links came long before the run (the log is a later run's).
    ({"first_link_unix": 1_800_000_000.0 - 600}, "is not the run of that build's links"),
    # Right time, but the run linked none of these outputs.
    ({"log_outputs": ("other", "more")}, "has 0 of that build's 2 linked outputs"),
])
def test_a_ninja_log_that_is_not_the_builds_is_not_used(tmp_path, case, why):
    build, links, path = ninja_case(tmp_path, **{k: v for k, v in case.items() if k != "tool"})
    build["tool"] = case.get("tool", "ninja")
    said = []
    assert summary.ninja_share(build, links, path, on_mismatch=said.append) is None
    assert len(said) == 1 and why in said[0] and said[0].startswith(f"{path} is not used for build #7")
    assert summary.ninja_share(build, links, path) is None  # and silently when nobody asked


def test_the_summary_json_explains_its_time_figures():
    notes = summary.NOTES
    assert "excludes the interpreter's start-up" in notes["overhead_ms"]
    assert "+-5 ms" in notes["startup_ms"] and "first_error" in notes["fell_back"]


def test_waits_for_memory_are_counted_and_said_only_when_there_were_any():
    from linkwrap.report import render
    links = [link("2026-01-01T00:00:00.000Z", 500.0, waited_ms=1500.0),
             link("2026-01-01T00:00:00.100Z", 500.0, waited_ms=2600.0),
             link("2026-01-01T00:00:00.200Z", 500.0, waited_ms=0.0),
             link("2026-01-01T00:00:00.300Z", 500.0, waited_ms=None)]
    t = summary.totals(links)
    assert (t["memory_waits"], t["memory_wait_ms"]) == (2, 4100.0)
    assert render.memory_line(t) == "2 links waited 4.10 s for memory"
    assert render.memory_line(summary.totals(links[2:])) is None
