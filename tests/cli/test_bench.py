"""`linkwrap bench`'s table: every figure whole at 80 columns."""
import re

from linkwrap.cli import bench


def row(label, linker, median, ratio=None, variant="fresh", failed=None):
    return {"label": label, "linker": linker, "variant": variant, "failed": failed, "median_ms": median,
            "ci_low_ms": median * 0.97, "ci_high_ms": median * 1.21, "min_ms": median * 0.9, "max_ms": median * 1.6,
            "peak_rss_kb": 412_000, "ratio": ratio, "ratio_ci_low": ratio and ratio * 0.98,
            "ratio_ci_high": ratio and ratio * 1.03}


def report():
    return {"output": "/work/project/target/debug/deps/some_long_crate_name-0123456789abcdef", "rounds": 15,
            "fs": "btrfs", "load_avg": 3.21, "default": "rust-lld",
            "load": {"others_cpus": 1.62, "limit_cpus": 1.0, "usable_cpus": 2, "busy": True},
            "rows": [row("rust-lld 16.0.2 (bundled with rustc 1.91.0)", "rust-lld", 126.43, 1.0),
                     row("mold 1.10.1", "mold", 26.41, 0.21), row("wild 0.8.0", "wild", 24.9, 0.2),
                     row("GNU ld 2.40", "bfd", 1312.5, 10.4), row("mold 1.10.1", "mold", 27.0, 0.22, "in-place")]}


def test_every_figure_is_whole_at_80_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    data = report()
    bench._render(data)
    out = capsys.readouterr().out
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 80
    # The title says how busy the rest of the machine was, and that this was too busy.
    title = " ".join(out.split("linker")[0].split())
    assert "others used 1.62 of 2 CPUs: taken busy (limit 1.00), measured again when idle" in title, title
    for r in data["rows"]:
        for figure in (f"{r['median_ms']:.1f} ms", f"{r['ci_low_ms']:.1f}-{r['ci_high_ms']:.1f}",
                       f"{r['ratio']:.2f} ({r['ratio_ci_low']:.2f}-{r['ratio_ci_high']:.2f})"):
            assert figure in out, figure
    # The long name folds rather than being cut.
    assert "".join(re.findall(r"rust-lld[^\n]*|\(bundled[^\n]*", out)).count("rust-lld") >= 1


def test_the_paired_sentences_wrap_indented_and_leave_out_the_default_against_itself(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    bench._render(report())
    out = capsys.readouterr().out
    sentences = out.split("round by round")[1].splitlines()[1:]
    assert all(line.startswith("  ") for line in sentences if line), out
    assert sum(line.startswith("  ") and not line.startswith("    ") for line in sentences) == 4
    assert "than rust-lld" in out and not re.search(r"^  rust-lld 16\.0\.2 .* ran ", out, re.M)


def test_a_peak_at_or_below_the_benchs_own_size_is_shown_as_a_bound(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    data = report()
    data["rows"][1].update(peak_rss_kb=40_000, spawner_rss_kb=45_000, peak_rss_bound=True)
    bench._render(data)
    out = capsys.readouterr().out
    assert "≤39 MiB" in out and "402 MiB" in out and "≤402" not in out
    assert "≤: the linker's peak RSS is at most that; the bench's own process (44 MiB)" in out
