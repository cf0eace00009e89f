"""What linkwrap saved: a link's time against the caller's default's, only where bench measured both."""
from linkwrap.evidence.measured import machine_key
from linkwrap.report import render, saved

HERE = machine_key(None)


def bench_row(linker, median, *, ratio=None, vs="bfd", label=None, variant="fresh", machine=HERE, fs="ext4",
              path=None):
    return {"project_dir": "/p", "output_key": "/p/app", "linker": linker, "variant": variant, "median_ms": median,
            "failed": None, "machine_key": machine, "fs_type": fs, "linker_path": path or f"/usr/bin/{linker}",
            "linker_label": label or f"{linker} 1.0", "ratio_vs": vs, "ratio_median": ratio}


def link(linker="mold", wall=100.0, **kw):
    base = {"cwd": "/p", "output_path": "/p/app", "linker": linker, "linker_path": f"/usr/bin/{linker}",
            "write_mode": "fresh", "wall_ms": wall, "fs_type": "ext4", "failed": False, "compiles": False,
            "first_wall_ms": None}
    return {**base, **kw}


def test_the_paired_ratio_gives_the_defaults_time_and_the_medians_do_without_it():
    paired = saved.index([bench_row("mold", 50.0, ratio=0.4), bench_row("bfd", 100.0)])
    est = saved.estimate(link(), paired)
    assert est["default"] == "bfd 1.0" and est["default_ms"] == 250.0 and not est["exact"]
    medians = saved.index([bench_row("mold", 50.0), bench_row("bfd", 100.0)])
    assert saved.estimate(link(), medians)["default_ms"] == 200.0


def test_nothing_is_claimed_where_the_default_was_not_measured_here():
    rows = [bench_row("mold", 50.0), bench_row("bfd", 100.0)]
    cases = [
        ([bench_row("mold", 50.0)], link()),                                        # the default never ran
        ([bench_row("mold", 50.0, vs=None), bench_row("bfd", 100.0)], link()),     # no default known
        ([bench_row("mold", 50.0, machine="another CPU x2"), bench_row("bfd", 100.0)], link()),
        (rows, link(fs_type="tmpfs")),                                              # another filesystem
        (rows, link(linker_path="/opt/mold/bin/mold")),                             # another binary
        (rows, link(output_path="/p/other")),                                       # another output
        (rows, link(linker="lld")),                                                 # its linker not measured
        (rows, link(compiles=True)),                                                # its time is a compile's too
    ]
    for bench, l in cases:
        assert saved.estimate(l, saved.index(bench)) is None, (bench, l)
    s = saved.saving([link()], saved.index([bench_row("mold", 50.0)]))
    assert s["measured_links"] == 0
    line = render.saved_line(s)
    assert "not measured yet" in line and "saved" not in line


def test_a_link_as_asked_is_the_defaults_own_time_less_a_failed_first_attempt():
    s = saved.saving([link("as asked", 80.0), link("as asked", 50.0, first_wall_ms=30.0)], {})
    assert (s["measured_links"], s["default_ms"], s["measured_ms"], s["exact"]) == (2, 130.0, 160.0, True)
    assert render.saved_line(s) == "Linked in 160 ms; the caller's own command would take 130 ms: 30 ms slower"


def test_the_lines_say_estimated_and_measured_and_what_was_left_out():
    measured = saved.index([bench_row("rust-lld", 1000.0, vs="rust-lld", label="rust-lld 19.1"),
                            bench_row("mold", 600.0, vs="rust-lld", ratio=0.6)])
    s = saved.saving([link(wall=1300.0), link("lld", 10.0)], measured)
    assert render.saved_line(s) == ("Linked in 1.31 s; on the 1 of 2 links measured, 1.30 s against ~2.17 s "
                                    "with rustc's default (rust-lld) (measured): saved ~867 ms; "
                                    "the other 1 not measured yet")
    s = saved.saving([link(wall=1300.0)], measured)
    assert render.saved_line(s) == ("Linked in 1.30 s; rustc's default (rust-lld) would take ~2.17 s "
                                    "(measured): saved ~867 ms")
    h = {**saved.saving([link(wall=1300.0), link("lld", 10.0)], measured), "builds": 2, "project_dir": "/p"}
    assert render.history_line(h) == ("This project, 2 builds (2 links): saved ~867 ms against rustc's default "
                                      "(rust-lld) (measured) on the 1 link measured; the other 1 not measured yet")
