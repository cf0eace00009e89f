"""`linkwrap report --html FILE`: one self-contained page; headless Chromium renders one bar per link."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from conftest import script, tool  # noqa: E402
from linkrecords import c_object, lw, summary_json  # noqa: E402

# Added to a copy of the page by the test only (the report itself has no script):
# counts the bars Chromium actually laid out with a non-zero size.
MEASURE = """<script>
window.addEventListener('load', () => {
  const sized = sel => [...document.querySelectorAll(sel)].filter(r => {
    const b = r.getBoundingClientRect(); return b.width > 0 && b.height > 0; }).length;
  const out = document.createElement('pre');
  out.id = 'measured';
  out.textContent = `link-bars=${sized('rect.link-bar')} build-bars=${sized('svg.per-build rect.bar')}`
    + ` linker-bars=${sized('svg.per-linker rect.bar')}`;
  document.body.appendChild(out);
});
</script>"""


def chromium_dom(page, tmp_path):
    done = subprocess.run([tool("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-background-networking", "--no-first-run",
                           f"--user-data-dir={tmp_path / 'chromium-profile'}", "--dump-dom", f"file://{page}"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def two_builds(tmp_path):
    c_object(tmp_path, "m")
    cc = script("linkwrap-cc")
    (tmp_path / "Makefile").write_text(
        "one: a b\na:\n\t{cc} m.o -o a\nb:\n\t{cc} m.o -o b\n"
        "two: c d e\nc:\n\t{cc} m.o -o c\nd:\n\t{cc} m.o -o d\ne:\n\t{cc} -fuse-ld=bfd m.o -o e\n".format(cc=cc))
    lw("run", "--quiet", "--", "make", "-s", "one", cwd=tmp_path)
    lw("run", "--quiet", "--", "make", "-s", "-j2", "two", cwd=tmp_path)


def test_the_page_renders_one_bar_per_link_in_chromium(tmp_path, lw_home):
    two_builds(tmp_path)
    data = summary_json("--all", cwd=tmp_path)
    links = data["totals"]["links"]
    assert links == 5 and len(data["builds"]) == 2
    out = lw("report", "--html", "report.html", cwd=tmp_path).stdout
    assert "2 builds, 5 links" in out
    page = (tmp_path / "report.html").read_text()
    # Self-contained: no script, no external resource of any kind.
    assert "<script" not in page and not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "@import" not in page and "url(http" not in page
    assert page.count('class="link-bar"') == links

    measured = tmp_path / "measured.html"
    measured.write_text(page.replace("</body>", MEASURE + "</body>"))
    dom = chromium_dom(measured, tmp_path)
    counts = dict(kv.split("=") for kv in re.search(r'<pre id="measured">([^<]*)</pre>', dom).group(1).split())
    n_linkers = len(data["by_linker"])
    assert counts == {"link-bars": str(links), "build-bars": "2", "linker-bars": str(n_linkers)}


def test_a_screenshot_is_not_blank(tmp_path, lw_home):
    two_builds(tmp_path)
    lw("report", "--html", "report.html", cwd=tmp_path)
    shot = tmp_path / "shot.png"
    done = subprocess.run([tool("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-background-networking", "--no-first-run",
                           f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
                           "--window-size=1200,900", f"file://{tmp_path / 'report.html'}"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and shot.stat().st_size > 10_000, done.stderr[-2000:]


def test_an_unwritable_target_is_a_one_line_error(tmp_path, lw_home):
    done = lw("report", "--html", str(tmp_path / "no" / "such" / "dir" / "r.html"), cwd=tmp_path, check=False)
    assert done.returncode == 1 and done.stderr.startswith("linkwrap: error: cannot write")
    assert "Traceback" not in done.stderr


def test_a_fall_back_shows_which_linker_failed_and_why(tmp_path, lw_home):
    (tmp_path / "f.c").write_text("int f(void){return 1;}\n")
    subprocess.run(["cc", "-fPIC", "-c", "f.c"], cwd=tmp_path, check=True)
    done = subprocess.run([script("linkwrap-cc"), "-shared", "f.o", "-o", "libf.so"], cwd=tmp_path,
                          env={**os.environ, "LINKWRAP_LINKER": "python"})
    assert done.returncode == 0
    page = lw("report", "--html", "-", cwd=tmp_path).stdout
    assert page.count('class="warn"') == 1 and "fell back <span class=dim>(python " in page
    assert "linkwrap-ld: not supported yet: -shared" in page


def test_a_full_device_or_disk_is_an_error_and_leaves_nothing_behind(tmp_path, lw_home):
    import mounts
    done = lw("report", "--html", "/dev/full", cwd=tmp_path, check=False)
    assert done.returncode == 1 and done.stderr == "linkwrap: error: cannot write /dev/full: No space left on device\n"
    assert os.path.exists("/dev/full") and not os.path.isfile("/dev/full")  # never replaced by a file
    with mounts.tmpfs_mount(tmp_path, "size=8k") as point:
        with open(os.path.join(point, "filler"), "wb") as f:
            try:
                f.write(b"\0" * (64 << 10))
            except OSError:
                pass
        done = lw("report", "--html", os.path.join(point, "r.html"), cwd=tmp_path, check=False)
        assert done.returncode == 1 and "No space left on device" in done.stderr
        assert sorted(os.listdir(point)) == ["filler"]


def test_a_wait_for_memory_is_marked_on_the_builds_timeline(tmp_path, lw_home):
    from linkrecords import spool_record
    spool_record(lw_home, output_path=str(tmp_path / "a"), crate_name="a", linker="bfd", build_key="k",
                 waited_ms=800.0, predicted_peak_kb=300 << 10, wait_note=None)
    spool_record(lw_home, output_path=str(tmp_path / "b"), crate_name="b", linker="bfd", build_key="k",
                 waited_ms=0.0, predicted_peak_kb=10 << 10)
    page = tmp_path / "r.html"
    lw("report", "--html", page)
    text = page.read_text()
    marks = re.findall(r'<rect class="memory-wait"[^>]*><title>([^<]*)</title>', text)
    assert marks == ["a waited 800 ms for memory (predicted 300.0 MiB)"]
