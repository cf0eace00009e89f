"""The HTML page's pieces on hand-made summaries: fixed colours, concurrency, trends, the hooks."""
import re

from linkwrap.report import html


def link(i, start, wall, linker="mold", output="/p/app", **kw):
    return {"id": i, "started_utc": start, "wall_ms": wall, "linker": linker, "linker_version": f"{linker} 1",
            "crate_name": output.rsplit("/", 1)[-1], "crate_kind": "bin", "output_path": output, "failed": False,
            "fell_back": False, "fault": None, "cpu_ms": wall, "peak_rss_kb": 1000 + i, "output_bytes": 10,
            "write_mode": "fresh", "startup_ms": 20.0, "overhead_ms": 2.0, **kw}


def build(i, links):
    return {"id": i, "tool": "make", "command": "make", "cwd": "/p", "started_utc": None, "wall_ms": None,
            "links": links, "linking": None, "totals": {"links": len(links), "wall_ms": sum(l["wall_ms"] for l in links)}}


def test_a_linker_keeps_its_colour_whatever_else_is_in_the_report():
    assert html.colour("mold") == html.LINKER_COLOURS["mold"]
    assert html.colour("mystery") == html.colour("mystery") and html.colour("mystery") in html.OTHER_COLOURS
    assert len(set(html.LINKER_COLOURS.values())) == len(html.LINKER_COLOURS)


def test_concurrency_counts_the_links_running_at_once():
    b = build(1, [link(1, "2026-01-01T00:00:00.000Z", 100.0), link(2, "2026-01-01T00:00:00.050Z", 100.0),
                  link(3, "2026-01-01T00:00:00.060Z", 10.0), link(4, "2026-01-01T00:00:00.500Z", 10.0)])
    assert re.search(r'data-max="(\d+)"', html.concurrency(b)).group(1) == "3"
    # Back to back is one at a time, not two.
    b = build(2, [link(1, "2026-01-01T00:00:00.000Z", 100.0), link(2, "2026-01-01T00:00:00.100Z", 100.0)])
    assert re.search(r'data-max="(\d+)"', html.concurrency(b)).group(1) == "1"


def test_an_output_has_one_trend_point_per_build_and_a_memory_wait_comes_before_its_link():
    builds = [build(i, [link(i, f"2026-01-0{i}T00:00:00.000Z", 100.0 + i)]) for i in (1, 2, 3)]
    builds[2]["links"].append(link(9, "2026-01-03T00:00:01.000Z", 5.0, output="/p/once",
                                   waited_ms=40.0, wait_note=None, predicted_peak_kb=2048))
    summary = {"builds": builds}
    trends = html.trends(summary)
    app = trends[trends.index('data-output="/p/app"'):trends.index('data-output="/p/once"')]
    assert app.count('class="wall-point"') == 3 and app.count('class="rss-point"') == 3
    line = html.timeline(builds[2])
    assert line.count('class="memory-wait"') == 1 and "waited 40 ms for memory" in line
    # It ran after its wait: not at once with a link that ended before the wait did.
    b = build(4, [link(1, "2026-01-01T00:00:00.000Z", 30.0),
                  link(2, "2026-01-01T00:00:00.000Z", 10.0, waited_ms=40.0)])
    assert 'data-max="1"' in html.concurrency(b)


def test_builds_of_one_plain_link_are_rows_of_one_table_not_sections_of_their_own():
    """A page of many one-link builds (a test binary relinked, a make of one target) was one long page
    of one-bar sections with a concurrency chart each: consecutive ones are one table, a row a build.
    A build with a failed link or a wait for memory keeps its section: its timeline says something."""
    lone = [build(i, [link(i, f"2026-01-01T00:00:0{i}.000Z", 10.0 * i)]) for i in (1, 2, 3)]
    pair = build(4, [link(4, "2026-01-01T00:00:05.000Z", 5.0), link(5, "2026-01-01T00:00:05.000Z", 6.0)])
    failed = build(5, [link(6, "2026-01-01T00:00:06.000Z", 5.0, failed=True)])
    later = [build(i, [link(i, f"2026-01-01T00:00:0{i}.000Z", 1.0)]) for i in (6, 7)]
    builds = [*lone, pair, failed, *later]
    assert [html.lone_link(b) for b in builds] == [True, True, True, False, False, True, True]
    text = html.lone_links_table(later[::-1], "h")
    assert text.startswith("<h2>2 builds of one link each</h2>") and text.count("<tr") == 3  # head + 2
    assert text.index('id="build-h-7"') < text.index('id="build-h-6"')  # newest first, as the sections
    from linkwrap.report.summary import totals
    summary = {"builds": builds, "totals": totals([l for b in builds for l in b["links"]])}
    page = "".join(html.body(summary, {"host": "h"}))
    # newest first: the two later builds' table, the failed build's and the pair's sections, the first three's table
    order = [m.group(0) for m in re.finditer(r"<h2>\d builds of one link each</h2>|<h2 id=\"build-h-\d+\">", page)]
    assert order == ["<h2>2 builds of one link each</h2>", '<h2 id="build-h-5">', '<h2 id="build-h-4">',
                     "<h2>3 builds of one link each</h2>"]
    assert page.count('class="concurrency') <= 2
