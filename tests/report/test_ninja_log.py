""".ninja_log v5/v6/v7: parsed alike, runs split where times restart, bad files named with their line."""
import os
import subprocess

import pytest

from linkwrap.report import ninja_log


def write_log(tmp_path, version, lines):
    path = tmp_path / ".ninja_log"
    path.write_text(f"# ninja log v{version}\n" + "".join("\t".join(map(str, l)) + "\n" for l in lines))
    return str(path)


# Two runs, lines in the order edges finished: the second restarts at 0 (end_ms goes down).
LINES = [
    (0, 100, 11, "a.o", "aa"), (0, 120, 12, "b.o", "bb"), (110, 300, 14, "libx.so", "dd"),
    (120, 400, 13, "app", "cc"),
    (0, 50, 21, "a.o", "aa"), (50, 250, 22, "app", "cc"),
]


@pytest.mark.parametrize("version", [5, 6, 7])
def test_every_supported_version_reads_the_same(tmp_path, version):
    v, entries = ninja_log.read(write_log(tmp_path, version, LINES))
    assert v == version and len(entries) == 6 and entries[3] == ninja_log.Entry(120, 400, 13, "app", "cc")
    assert [len(r) for r in ninja_log.runs(entries)] == [4, 2]


def test_the_last_run_and_its_link_share(tmp_path):
    path = write_log(tmp_path, 5, LINES)
    share = ninja_log.link_share(path, [str(tmp_path / "app")])
    # Last run: a.o 0-50, app 50-250; wall 250 ms, link 200 ms.
    assert (share["wall_ms"], share["link_busy_ms"], share["link_edges"]) == (250.0, 200.0, 1)
    assert share["link_share"] == pytest.approx(0.8) and not share["links_guessed"]
    guessed = ninja_log.link_share(path)
    assert guessed["links_guessed"] and guessed["link_edges"] == 1


def test_overlapping_links_count_once_in_busy_time():
    assert ninja_log.busy_ms([(0, 100), (50, 150), (200, 210)]) == 160


def test_a_torn_last_line_is_skipped_and_a_bad_middle_line_is_an_error(tmp_path):
    path = tmp_path / ".ninja_log"
    path.write_text("# ninja log v5\n0\t10\t1\ta\th\n5\t1")
    assert len(ninja_log.read(str(path))[1]) == 1
    path.write_text("# ninja log v5\n0\t10\t1\ta\th\nbroken line\n0\t10\t1\tb\th\n")
    with pytest.raises(ninja_log.NinjaLogError, match=r"\.ninja_log:3: expected 5 tab-separated fields"):
        ninja_log.read(str(path))
    path.write_text("# ninja log v4\n")
    with pytest.raises(ninja_log.NinjaLogError, match=r":1: ninja log v4 is not supported"):
        ninja_log.read(str(path))
    path.write_text("hello\n")
    with pytest.raises(ninja_log.NinjaLogError, match=r":1: not a ninja log"):
        ninja_log.read(str(path))


def test_a_log_written_by_the_real_ninja(tmp_path):
    (tmp_path / "build.ninja").write_text("rule touch\n  command = sleep 0.1 && touch $out\n"
                                          "build x: touch\nbuild y.o: touch\n")
    subprocess.run(["ninja"], cwd=tmp_path, check=True, capture_output=True)
    version, entries = ninja_log.read(str(tmp_path / ".ninja_log"))
    assert version in (5, 6, 7) and sorted(e.output for e in entries) == ["x", "y.o"]
    share = ninja_log.link_share(str(tmp_path / ".ninja_log"), [os.path.join(tmp_path, "x")])
    assert share["link_edges"] == 1 and share["link_busy_ms"] >= 100
