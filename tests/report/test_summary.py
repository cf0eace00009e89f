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
