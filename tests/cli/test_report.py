"""`linkwrap report --html FILE`: one self-contained page; headless Chromium renders one bar per link."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from conftest import script, tool  # noqa: E402
from linkrecords import c_object, lw, summary_json  # noqa: E402

# Added to a copy of the page by the test only (the report itself has no script):
# what Chromium laid out, with the colours it computed, and every resource it fetched.
MEASURE = """<script>
window.addEventListener('load', () => {
  const sized = r => { const b = r.getBoundingClientRect(); return b.width > 0 && b.height > 0; };
  const out = {
    links: [...document.querySelectorAll('rect.link-bar')].filter(sized).map(
      r => [r.dataset.linker, getComputedStyle(r).fill]),
    builds: [...document.querySelectorAll('svg.per-build rect.bar')].filter(sized).length,
    buildParts: [...document.querySelectorAll('svg.per-build rect.bar-part')].filter(sized).map(
      r => [r.dataset.linker, getComputedStyle(r).fill]),
    trends: Object.fromEntries([...document.querySelectorAll('tr.trend')].map(t => [t.dataset.output,
      [[...t.querySelectorAll('circle.wall-point')].filter(sized).length,
       [...t.querySelectorAll('circle.rss-point')].filter(sized).length]])),
    concurrency: [...document.querySelectorAll('svg.concurrency')].map(s => +s.dataset.max),
    own: document.querySelector('.own-time').textContent,
    context: document.querySelector('table.context').innerText,
    resources: performance.getEntriesByType('resource').map(r => r.name),
  };
  const pre = document.createElement('pre');
  pre.id = 'measured';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def chromium_dom(page, tmp_path, size=None):
    """size: "W,H" of the window, a laptop's screen; Chromium's headless default is smaller."""
    done = subprocess.run([tool("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
                           *([f"--window-size={size}"] if size else []),
                           "--disable-background-networking", "--no-first-run",
                           f"--user-data-dir={tmp_path / 'chromium-profile'}", "--dump-dom", f"file://{page}"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def rendered(page_text, tmp_path, name="measured.html"):
    """What headless Chromium laid out for this page."""
    import html as html_mod
    import json
    measured = tmp_path / name
    measured.write_text(page_text.replace("</body>", MEASURE + "</body>"))
    dom = chromium_dom(measured, tmp_path)
    return json.loads(html_mod.unescape(re.search(r'<pre id="measured">([^<]*)</pre>', dom).group(1)))


def rgb(hex_colour):
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


def two_builds(tmp_path):
    c_object(tmp_path, "m")
    cc = script("linkwrap-cc")
    (tmp_path / "Makefile").write_text(
        "one: a b\na:\n\t{cc} m.o -o a\nb:\n\t{cc} m.o -o b\n"
        "two: c d e\nc:\n\t{cc} m.o -o c\nd:\n\t{cc} m.o -o d\ne:\n\t{cc} -fuse-ld=bfd m.o -o e\n".format(cc=cc))
    lw("run", "--quiet", "--", "make", "-s", "one", cwd=tmp_path)
    lw("run", "--quiet", "--", "make", "-s", "-j2", "two", cwd=tmp_path)


def three_builds(tmp_path):
    """app and tool linked in each of three builds: tool with GNU ld as asked, app as linkwrap chooses;
    in the third, LINKWRAP_LINKER=bfd links both with GNU ld."""
    c_object(tmp_path, "m")
    cc = script("linkwrap-cc")
    (tmp_path / "Makefile").write_text(
        "all: app tool\napp:\n\t{cc} m.o -o app\ntool:\n\t{cc} -fuse-ld=bfd m.o -o tool\n".format(cc=cc))
    for i in range(3):
        env = {"LINKWRAP_LINKER": "bfd"} if i == 2 else {}
        lw("run", "--quiet", "--", "make", "-s", "-B", "-j2", "all", cwd=tmp_path, env=env)


def test_the_rendered_page_shows_a_trend_per_output_fixed_colours_and_fetches_nothing(tmp_path, lw_home):
    from linkwrap.report.html import LINKER_COLOURS
    three_builds(tmp_path)
    data = summary_json("--all", cwd=tmp_path)
    assert len(data["builds"]) == 3 and data["totals"]["links"] == 6
    out = lw("report", cwd=tmp_path).stdout
    # Like cargo --timings: a default place in the project, and the path said.
    target = tmp_path / "linkwrap-report.html"
    assert out == f"Link report saved to {target} (3 builds, 6 links)\n"
    page = target.read_text()
    # Self-contained: no script, no external resource of any kind.
    assert "<script" not in page and not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "@import" not in page and "url(http" not in page

    seen = rendered(page, tmp_path)
    assert seen["resources"] == []  # Chromium fetched nothing besides the page
    assert len(seen["links"]) == 6 and seen["builds"] == 3
    # Each output built three times has a trend of three link times and three peak RSS figures.
    assert seen["trends"] == {str(tmp_path / "app"): [3, 3], str(tmp_path / "tool"): [3, 3]}
    linkers = {name for name, _ in seen["links"]}
    assert "bfd" in linkers and len(linkers) >= 1
    for name, fill in seen["links"]:
        assert fill == rgb(LINKER_COLOURS[name]), (name, fill)
    assert seen["concurrency"] and all(1 <= m <= 2 for m in seen["concurrency"])
    # Each build's bar is its link time per linker, in the linkers' colours (not one colour for all).
    per_build = [{l["linker"] for l in b["links"]} for b in data["builds"]]
    assert len(seen["buildParts"]) == sum(len(names) for names in per_build)
    assert {n for n, _ in seen["buildParts"]} == set().union(*per_build)
    for name, fill in seen["buildParts"]:
        assert fill == rgb(LINKER_COLOURS[name]), (name, fill)
    from linkwrap.report.render import fmt_ms
    links = [l for b in data["builds"] for l in b["links"]]
    own = sum((l["startup_ms"] or 0) + (l["overhead_ms"] or 0) for l in links)
    assert seen["own"] == fmt_ms(own) and own > 0  # linkwrap's own time, start-up included
    assert f"{os.cpu_count()} CPUs" in seen["context"] and "bfd" in seen["context"]

    # The last build alone has only GNU ld: its colour does not move.
    last = data["builds"][-1]["id"]
    alone = rendered(lw("report", "--build", last, "--html", "-", cwd=tmp_path).stdout, tmp_path, "alone.html")
    assert {n for n, _ in alone["links"]} == {"bfd"}
    assert {f for _, f in alone["links"]} == {rgb(LINKER_COLOURS["bfd"])}
    assert alone["buildParts"] == [["bfd", rgb(LINKER_COLOURS["bfd"])]]


def test_open_hands_the_page_to_the_browser(tmp_path, lw_home):
    two_builds(tmp_path)
    browser = tmp_path / "browser"
    browser.write_text(f"#!/bin/sh\necho \"$1\" > {tmp_path / 'opened'}\n")
    browser.chmod(0o755)
    lw("report", "--open", cwd=tmp_path, env={"BROWSER": str(browser)})
    assert (tmp_path / "opened").read_text() == f"file://{tmp_path / 'linkwrap-report.html'}\n"


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
    done = subprocess.run([script("linkwrap-cc"), "-shared", "-Wl,-z,pack-relative-relocs", "f.o", "-o", "libf.so"],
                          cwd=tmp_path, env={**os.environ, "LINKWRAP_LINKER": "python"})
    assert done.returncode == 0
    page = lw("report", "--html", "-", cwd=tmp_path).stdout
    assert page.count('class="warn"') == 1 and "fell back <span class=dim>(python " in page
    assert "linkwrap-ld: not supported yet: -z pack-relative-relocs" in page


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


def test_config_error_links_are_counted_apart_and_not_plotted(tmp_path, lw_home):
    obj = c_object(tmp_path)
    (tmp_path / "linkwrap.toml").write_text("prefer = [\n")          # malformed: every link fails with one line
    done = subprocess.run([script("linkwrap-cc"), obj, "-o", "bad"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode != 0 and "linkwrap.toml" in done.stderr
    (tmp_path / "linkwrap.toml").unlink()
    done = subprocess.run([script("linkwrap-cc"), obj, "-o", "good"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    [b] = summary_json("--all", cwd=tmp_path)["builds"]
    assert len(b["links"]) == 2                                      # both recorded, in one build
    page = lw("report", "--html", "-", cwd=tmp_path).stdout
    bars = re.findall(r'<rect class="link-bar"[^>]*><title>([^<]*)</title>', page)
    assert len(bars) == 1 and bars[0].startswith("good "), bars     # the config error is no 0 ms bar
    assert re.findall(r'<tr class="trend" data-output="([^"]*)"', page) == [str(tmp_path / "good")]
    assert '<span class="config-errors">1 configuration error</span>: no linker ran, not in the time plots' in page
    assert "1 link, " in page and "1 configuration error (no linker ran)" in page
    assert "configuration error (no linker ran)</td>" in page       # still listed in the build's table


FIRST_SCREEN = """<script>
window.addEventListener('load', () => {
  const at = s => { const n = document.querySelector(s); if (!n) return null;
                    const b = n.getBoundingClientRect(); return [b.top, b.height, n.textContent]; };
  const pre = document.createElement('pre');
  pre.id = 'measured';
  pre.textContent = JSON.stringify({build: at('.saved-build'), history: at('.saved-history'),
                                    context: at('table.context'), screen: window.innerHeight});
  document.body.appendChild(pre);
});
</script>"""


def test_the_first_screen_leads_with_the_time_against_the_callers_default(tmp_path, lw_home):
    import html as html_mod
    import json
    c_object(tmp_path, "m", big=True)
    cc = script("linkwrap-cc")
    env = {"LINKWRAP_SAVE": "1", "LINKWRAP_LINKER": "mold"}
    lw("run", "--quiet", "--", cc, "m.o", "-o", "app", cwd=tmp_path, env=env)
    lw("bench", "--budget", "1", "--linker", "mold", "--linker", "bfd", "app", cwd=tmp_path, env=env)
    lw("run", "--quiet", "--", cc, "m.o", "-o", "app", cwd=tmp_path, env=env)
    page = lw("report", "--html", "-", cwd=tmp_path).stdout
    (tmp_path / "first.html").write_text(page.replace("</body>", FIRST_SCREEN + "</body>"))
    dom = chromium_dom(tmp_path / "first.html", tmp_path)
    seen = json.loads(html_mod.unescape(re.search(r'<pre id="measured">([^<]*)</pre>', dom).group(1)))
    # The same words as `linkwrap summary`, above the context, inside the first screen.
    text = lw("summary", cwd=tmp_path, env={"COLUMNS": "300"}).stdout.splitlines()
    top, height, said = seen["build"]
    assert said == "Build 2: " + text[2], (said, text)
    assert "(measured)" in said and "~" in said
    assert seen["history"][2] == text[3] and text[3].startswith("This project, 2 builds (2 links): ")
    assert height > 0 and top < seen["history"][0] < seen["context"][0] and seen["history"][0] < seen["screen"]


MANY_BUILDS = """<script>
window.addEventListener('load', () => {
  const bottom = s => { const n = document.querySelector(s); return n ? n.getBoundingClientRect().bottom : null; };
  const pre = document.createElement('pre');
  pre.id = 'measured';
  pre.textContent = JSON.stringify({
    totals: bottom('.totals'), legend: bottom('.legend'), trend: bottom('tr.trend'),
    context: document.querySelector('table.context').getBoundingClientRect().top,
    linkers: Object.fromEntries([...document.querySelectorAll('.legend span[data-linker]')].map(
      s => [s.dataset.linker, s.textContent])),
    bars: [...document.querySelectorAll('svg.per-build rect.bar')].length,
    sections: document.querySelectorAll('h2[id^="build-"], td[id^="build-"]').length,
    screen: window.innerHeight});
  document.body.appendChild(pre);
});
</script>"""


def test_many_builds_keep_the_answer_on_the_first_screen(tmp_path, lw_home):
    """18 builds (GNU ld as asked, then mold): the first screen, as Chromium lays it out, holds what
    linking cost, which linker linked how many, and each output's trend; the per-build chart shows the
    latest builds only, every build keeps its row below, and the machine's context comes after."""
    import html as html_mod
    import json
    c_object(tmp_path, "m")
    cc = script("linkwrap-cc")
    for i in range(18):
        lw("run", "--quiet", "--", cc, "m.o", "-o", "app", cwd=tmp_path,
           env={"LINKWRAP_LINKER": "bfd" if i < 12 else "mold"})
    page = lw("report", "--html", "-", cwd=tmp_path).stdout
    (tmp_path / "many.html").write_text(page.replace("</body>", MANY_BUILDS + "</body>"))
    dom = chromium_dom(tmp_path / "many.html", tmp_path, size="1280,800")
    seen = json.loads(html_mod.unescape(re.search(r'<pre id="measured">([^<]*)</pre>', dom).group(1)))
    assert 0 < seen["totals"] < seen["legend"] < seen["trend"] <= seen["screen"], seen
    assert seen["linkers"]["bfd"].endswith("12 links") and seen["linkers"]["mold"].endswith("6 links"), seen
    assert list(seen["linkers"]) == ["bfd", "mold"]  # the most links first
    assert seen["bars"] == 15 and seen["sections"] == 18, seen
    assert "The latest 15 of 18 builds" in page
    assert seen["context"] > seen["trend"]
