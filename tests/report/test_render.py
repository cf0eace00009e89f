"""The summary as a person reads it on an 80-column terminal: whole names with their kind, a one-line
header, counts that match the records, linkwrap's own time labelled for what it measures."""
import io

from rich.console import Console

from linkwrap.report import render, summary


def link(i, name, kind, **kw):
    base = {"id": i, "started_utc": f"2026-05-01T10:00:0{i}.000Z", "crate_name": name, "crate_kind": kind,
            "output_path": f"/w/target/debug/{name}", "output_bytes": 4_500_000, "linker": "mold",
            "linker_version": "mold 1.10.1", "write_mode": "in-place", "wall_ms": 123.4, "cpu_ms": 120.0,
            "peak_rss_kb": 150_000, "exit_status": 0, "failed": False, "fell_back": False,
            "first_exit_status": None, "first_linker": None, "first_error": None, "fault": None,
            "overhead_ms": 2.0, "startup_ms": 28.0}
    return {**base, **kw}


def build_of(links, **kw):
    b = {"id": 3, "tool": "cargo", "command": "/root/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin/cargo "
         "build --offline --workspace --all-targets", "cwd": "/work/a/project", "started_utc": "2026-05-01T10:00:00.000Z",
         "wall_ms": None, "exit_status": None, "linking": None, "links": links, **kw}
    b["totals"], b["by_linker"] = summary.totals(links), summary.by_linker(links)
    b["failures"] = [l for l in links if l["failed"]]
    b["fell_back"] = [l for l in links if summary.fell_back(l)]
    return b


def shown(*builds, width=80) -> str:
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    every = [l for b in builds for l in b["links"]]
    render.render({"builds": list(builds), "totals": summary.totals(every), "by_linker": summary.by_linker(every)},
                  console)
    return "\n".join(line.rstrip() for line in console.export_text().splitlines()) + "\n"


APP = [link(1, "app", "build-script"), link(2, "app", "bin"), link(3, "app", "test"),
       link(4, "greet_macros", "proc-macro")]


def test_on_80_columns_names_keep_their_kind_and_the_header_is_one_line():
    text = shown(build_of(APP))
    lines = text.splitlines()
    assert all(len(line.rstrip()) <= 80 for line in lines), text
    # the command as people typed it (the path of cargo is in --json), whole when it fits
    assert lines[0].rstrip() == "build #3  cargo  4 links  cargo build --offline --workspace --all-targets"
    long = shown(build_of(APP, command="/usr/bin/cargo build " + " ".join(f"--features f{i}" for i in range(20))))
    assert long.splitlines()[0].startswith("build #3  cargo  4 links  cargo build --features f0")
    assert long.splitlines()[0].rstrip().endswith("…") and len(long.splitlines()[0].rstrip()) <= 80
    assert lines[1].strip() == "2026-05-01 10:00:00 UTC  /work/a/project"
    rows = {line.split("  ")[0].strip() for line in lines}
    assert {"app (build script)", "app", "app (test)", "greet_macros (proc-macro)"} <= rows, text
    for column in ("linker", "wall", "peak RSS", "status"):
        assert column in text


def test_one_link_is_one_link():
    text = shown(build_of(APP[:1]))
    assert text.splitlines()[0].startswith("build #3  cargo  1 link  ")
    assert "1 link " in text and "1 links" not in text


def test_a_long_name_is_whole_when_there_is_room_and_folds_only_when_not():
    name = "a_crate_with_a_really_quite_long_name_indeed"
    wide = shown(build_of([link(1, name, "proc-macro")]), width=160)
    assert f"{name} (proc-macro)" in wide
    narrow = shown(build_of([link(1, name, "proc-macro")]), width=80)
    assert name[:20] in narrow and "(proc-macro)" in narrow  # folded onto the next line, not cut to 8


def test_fall_backs_say_which_linker_failed_and_why():
    links = [link(1, "app", "bin"),
             link(2, "greet_macros", "proc-macro", fell_back=True, first_exit_status=1, linker="as asked",
                  linker_version=None, first_linker="python 0.1.0",
                  first_error="linkwrap-ld: not supported yet: -shared (shared library output)"),
             link(3, "tool", "bin", fault="linkwrap fault while choosing a linker: OSError: boom",
                  linker="as asked", linker_version=None)]
    text = shown(build_of(links))
    after = text[text.index("linked as asked instead (2):"):]
    assert "greet_macros (proc-macro): python 0.1.0 failed (exit 1)\n" in after
    assert "    linkwrap-ld: not supported yet: -shared (shared library output)" in after
    assert "tool: a fault of linkwrap's own\n" in after and "OSError: boom" in after


def test_linkwraps_own_time_says_what_it_measures():
    text = shown(build_of(APP))
    assert "linkwrap's own time: 120 ms over 4 links, 30 ms per link" in text
    # The clock's resolution is said as such, not as a spread of the figures.
    assert "starting Python and loading linkwrap: 112 ms (timed in 10 ms steps" in text and "±" not in text
    assert "choosing a linker and recording the link: 8.0 ms" in text
    # Records from before start-up was measured: only the inside figure, labelled as such.
    old = shown(build_of([link(1, "app", "bin", startup_ms=None)]))
    assert ("linkwrap's own time (choosing and recording; starting Python not measured):\n"
            "  2.0 ms over 1 link") in old


def test_a_build_with_no_links_is_one_line():
    text = shown(build_of([], tool="linkwrap run", command="make -s", wall_ms=1200.0, exit_status=0))
    assert text.splitlines() == ["no links recorded for this build #3 (1.20 s, exit status 0): make -s"]


def test_the_builds_table_counts_failures_and_fall_backs_from_the_records():
    one = build_of([link(1, "a", "bin"), link(2, "b", "bin", failed=True, exit_status=1),
                    link(3, "c", "bin", fell_back=True, first_exit_status=1)])
    two = build_of([link(4, "d", "bin", fault="linkwrap fault: x"), link(5, "e", "bin")], id=4)
    text = shown(one, two)
    assert "failed/" in text and "fell back" in text
    lines = text.splitlines()
    rows = [line.split() for line in lines if line.startswith((" #3 ", " #4 "))]
    assert [(r[0], r[-1]) for r in rows] == [("#3", "1/1"), ("#4", "0/1")], text  # no project: numbered across all
    footer = lines[lines.index(next(l for l in lines if l.startswith(" #4 "))) + 2].split()
    assert footer == ["5", "617", "ms", "-", "1/2"], text  # nothing measured: no saving said


CONFIG_FAULT = "configuration error: linkwrap.toml:2: unknown linker 'moldy'"


def test_a_link_failed_by_a_config_error_is_a_failure_only():
    bad = link(2, "app", "bin", failed=True, exit_status=1, fault=CONFIG_FAULT, linker="as asked",
               linker_version=None)
    b = build_of([link(1, "lib", "bin"), bad])
    text = shown(b)
    assert "failed: app (/w/target/debug/app) exit 1\n" in text and f"  {CONFIG_FAULT}" in text
    assert "linked as asked instead" not in text
    assert (b["totals"]["failures"], b["totals"]["fell_back"]) == (1, 0)
    rows = [line.split() for line in shown(b, build_of([link(5, "d", "bin")], id=4)).splitlines()
            if line.startswith(" #3 ")]
    assert rows[0][-1] == "1/0"


def test_by_linker_says_the_total_not_a_time_per_link():
    links = APP + [link(5, "tool", "bin", linker="lld", linker_version="LLD 16.0.6", wall_ms=50.0)]
    text = shown(build_of(links), width=160)
    assert "By linker: mold 1.10.1: 4 links, 494 ms in all;  LLD 16.0.6: 1 link, 50 ms in all" in text
    assert "×" not in text


def test_the_builds_of_a_project_have_one_heading_and_lines_wrap_where_rich_wraps_them():
    every = APP + [link(5, "d", "bin")]
    console = Console(width=140, file=io.StringIO(), record=True, color_system=None)
    render.render({"builds": [build_of(APP), build_of([link(5, "d", "bin")], id=4)],
                   "totals": summary.totals(every), "by_linker": summary.by_linker(every),
                   "scope": {"shows": "the project in /work/a/project"}}, console)
    lines = [line.strip() for line in console.export_text().splitlines()]
    assert lines[0] == "Builds of the project in /work/a/project" and "builds" not in lines
    # 140 columns hold the start-up line whole: it is not broken at a fixed place.
    assert any(line.startswith("starting Python and loading linkwrap:") and line.endswith("right in total)")
               for line in lines), lines


def test_the_one_time_costs_of_a_first_build_are_said_apart():
    # A new install's first build: the first link ran the script (Python's start-up, the linkers
    # found, the server started); the others went through the warm server.
    links = [link(1, "app", "build-script", entry_point="script", overhead_ms=230.0, startup_ms=40.0),
             link(2, "greet_macros", "proc-macro", entry_point="server", overhead_ms=7.0, startup_ms=2.0),
             link(3, "app", "bin", entry_point="server", overhead_ms=3.0, startup_ms=2.0)]
    text = " ".join(shown(build_of(links)).split())
    assert "linkwrap's own time: 284 ms over 3 links, 95 ms per link, 270 ms of it one-time" in text
    assert "one-time: 270 ms on 1 link before linkwrap's background server was running (starting Python" in text
    assert "on a new install also finding the linkers" in text
    assert "once the server was running: 7.0 ms per link" in text
    # All through the server, or all by the script: nothing to set apart.
    for entry in ("server", "script"):
        same = shown(build_of([link(i, "app", "bin", entry_point=entry) for i in (1, 2)]))
        assert "one-time" not in same and "server was running" not in same


def test_columns_left_out_at_a_narrow_width_are_named_under_the_table():
    """A column there at 160 columns and gone at 60 is said, not silently missing (issue 32 item 5)."""
    wide = shown(build_of(APP), width=160)
    assert "left out at this width" not in wide
    assert all(column in wide for column in ("mode", "cpu", "output"))
    narrow = shown(build_of(APP), width=60)
    [note] = [line for line in narrow.splitlines() if "left out at this width" in line]
    gone = [column for column in ("mode", "cpu", "output") if f" {column} " not in narrow.split(note)[0]]
    assert gone and note.strip().startswith("(" + ", ".join(gone) + ": left out at this width"), (gone, note)
    assert len(note) <= 60  # one line, cut (not folded to column 0) where the terminal is narrow
    assert "--json shows all)" in shown(build_of(APP), width=100) or "left out" not in shown(build_of(APP), width=100)
