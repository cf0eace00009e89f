"""linkwrap-ld's own words (__main__.py): --help, --verbose, -t against GNU ld's, and the one-line
errors of options GNU ld refuses."""
import subprocess

from . import corpus


def _run(argv, cwd):
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd)


def _inputs(tmp_path):
    (tmp_path / "a.c").write_text("int b(void);\nint a(void) { return b() + 1; }\n")
    (tmp_path / "b.c").write_text("int b(void) { return 41; }\n")
    (tmp_path / "c.c").write_text("int c(void) { return 2; }\n")
    subprocess.run(["gcc", "-O1", "-fPIC", "-c", "a.c", "b.c", "c.c"], cwd=tmp_path, check=True)
    (tmp_path / "lib").mkdir()
    subprocess.run(["ar", "rcs", "lib/libb.a", "b.o"], cwd=tmp_path, check=True)
    subprocess.run(["gcc", "-shared", "c.o", "-o", "lib/libc2.so"], cwd=tmp_path, check=True)


def test_help_anywhere_prints_a_gnu_style_usage_and_links_nothing(tmp_path):
    r = _run([corpus.linkwrap_ld(), "-o", "x", "nothing.o", "--help"], tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("Usage: linkwrap-ld [options] file...\n")
    assert not (tmp_path / "x").exists()


def test_trace_prints_each_input_as_gnu_ld_does(tmp_path):
    # no group here: GNU ld prints a group's archives again each time it rescans the group
    _inputs(tmp_path)
    args = ["-shared", "-t", "a.o", "-Llib", "-lb", "-lc2", "lib/libb.a", "-o"]
    ref = _run(["ld", *args, "ref.so"], tmp_path)
    got = _run([corpus.linkwrap_ld(), *args, "lw.so"], tmp_path)
    assert ref.returncode == got.returncode == 0, got.stderr
    assert got.stdout == ref.stdout and got.stdout.splitlines() == ["a.o", "lib/libb.a", "lib/libc2.so", "lib/libb.a"]


def test_verbose_names_the_version_and_that_no_script_is_used(tmp_path):
    _inputs(tmp_path)
    r = _run([corpus.linkwrap_ld(), "--verbose", "-shared", "a.o", "b.o", "-o", "v.so"], tmp_path)
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and lines[0].startswith("linkwrap.ld ") and "no linker script" in lines[1]
    assert lines[2:] == ["a.o", "b.o"] and (tmp_path / "v.so").exists()
    alone = _run([corpus.linkwrap_ld(), "--verbose"], tmp_path)
    assert alone.returncode == 0 and alone.stdout.startswith("linkwrap.ld ")


def test_what_gnu_ld_refuses_is_one_line(tmp_path):
    _inputs(tmp_path)
    for flag in ("-f", "-F"):
        ref = _run(["ld", flag, "libx.so", "a.o", "b.o", "-o", "ref"], tmp_path)
        got = _run([corpus.linkwrap_ld(), flag, "libx.so", "a.o", "b.o", "-o", "lw"], tmp_path)
        assert ref.returncode == got.returncode == 1
        assert got.stderr == f"linkwrap-ld: {flag} may not be used without -shared\n"
        assert ref.stderr.rstrip().endswith(got.stderr.split(": ", 1)[1].rstrip())


def test_unique_is_named_and_takes_no_word_after_it(tmp_path):
    _inputs(tmp_path)
    r = _run([corpus.linkwrap_ld(), "--unique", "a.o", "b.o", "-o", "u"], tmp_path)
    assert (r.returncode, r.stderr) == (1, "linkwrap-ld: not supported yet: option --unique\n")
