"""OUT/report.html: one self-contained page, checked as HTML and in a real headless browser.

The browser test needs Chromium's headless shell (Debian: `apt-get install chromium-headless-shell`, which
`./scripts/setup.sh --extras test` installs). Without it the test fails and says how to install it, unless
EDGESDK_SKIP_BROWSER_TESTS=1 is set. It keeps its screenshots in pytest's tmp directory (printed on failure).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from io import BytesIO
from pathlib import Path

import pytest

from conftest import REPO, model_path

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")
OPT_OUT = "EDGESDK_SKIP_BROWSER_TESTS"
WIDTH = 1280  # of the browser window: a laptop screen
# Injected into a copy of the page (the report itself has no script): once everything is loaded, what the
# browser made of it, as an attribute the dumped DOM carries.
PROBE = """<script>
window.addEventListener("load", () => {
  const figures = [...document.querySelectorAll("svg.chart")];
  document.documentElement.setAttribute("data-probe", JSON.stringify({
    images: document.images.length,
    figures: figures.length,
    shown: figures.filter(f => f.getBoundingClientRect().width > 300 && f.getBoundingClientRect().height > 100).length,
    tables: document.querySelectorAll("table").length,
    rows: document.querySelectorAll("tr").length,
    headings: [...document.querySelectorAll("h2")].map(h => h.textContent),
    height: document.documentElement.scrollHeight,
    width: document.documentElement.scrollWidth,
  }));
});
</script>"""


class PageParser(HTMLParser):
    """Tags and text of a page, and anything that would make it load something."""

    def __init__(self):
        super().__init__()
        self.images, self.figures, self.tables, self.scripts, self.external, self.text = [], 0, 0, 0, [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        self.figures += tag == "svg"
        self.tables += tag == "table"
        self.scripts += tag == "script"
        for key in ("src", "href"):
            value = attrs.get(key) or ""
            if value and not value.startswith("data:") and not value.startswith("#"):
                self.external.append(value)

    def handle_data(self, data):
        self.text.append(data)


def edgesdk(*args):
    proc = subprocess.run([sys.executable, "-m", "edgesdk", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=900)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return proc


def headless_browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get(OPT_OUT) == "1":
        pytest.skip(f"no headless browser, and {OPT_OUT}=1")
    pytest.fail("The report.html check needs a headless browser and found none of " + ", ".join(BROWSERS) + ". "
                "Install Chromium's headless shell: sudo apt-get install chromium-headless-shell (./scripts/setup.sh "
                f"--extras test does it), or set {OPT_OUT}=1 to skip this test.")


def browse(browser: str, *args) -> subprocess.CompletedProcess:
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
               "--disable-extensions", "--mute-audio", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180)


def probe_page(browser: str, page: Path, work: Path) -> dict:
    """Load a copy of `page` with PROBE added; return what the browser reported."""
    copy = work / f"probe-{page.parent.name}.html"
    copy.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    proc = browse(browser, "--virtual-time-budget=20000", f"--window-size={WIDTH},2000", "--dump-dom", copy.as_uri())
    start = proc.stdout.find('data-probe="')
    assert start >= 0, f"the browser did not run the page's load event: {proc.stderr[-2000:]}"
    raw = proc.stdout[start + len('data-probe="'):proc.stdout.index('"', start + len('data-probe="'))]
    return json.loads(raw.replace("&quot;", '"').replace("&amp;", "&"))


def screenshot(browser: str, page: Path, png: Path, height: int):
    from matplotlib.image import imread

    proc = browse(browser, f"--screenshot={png}", f"--window-size={WIDTH},{height}", page.as_uri())
    assert png.is_file(), proc.stderr[-2000:]
    return imread(BytesIO(png.read_bytes()))


def check_page(page: Path) -> PageParser:
    parsed = PageParser()
    parsed.feed(page.read_text())
    assert parsed.external == [], "report.html must be self-contained"
    assert parsed.scripts == 0
    assert parsed.images == []  # the figures are inline SVG
    return parsed


@pytest.fixture(scope="module")
def kws_pages(tmp_path_factory):
    """A build's report.html and the one `run --profile` writes (KWS on the NPU and the host core)."""
    work = tmp_path_factory.mktemp("html")
    edgesdk("build", model_path("kws"), "-o", work / "out", "-q")
    edgesdk("run", work / "out", "--random-input", "0", "--profile", "--output-dir", work / "run", "-q")
    return work, work / "out" / "report.html", work / "run" / "report.html"


def test_page_structure_and_escaping(tmp_path):
    """Without a browser: every section, the figures inline, a hostile tensor name shown as text."""
    from edgesdk.compiler import BuildOptions, build

    report = build(model_path("hello_world"), tmp_path / "out", BuildOptions(compile_firmware=False))
    page = tmp_path / "out" / report["report_html"]
    parsed = check_page(page)
    text = "".join(parsed.text)
    for heading in ("Partition", "Per layer", "Memory plan", "Buffers", "Memory pools", "Flash contents"):
        assert heading in text
    assert parsed.figures == 4 and parsed.tables >= 5  # layer bars, timeline, pools, flash
    assert "not linked" in text  # --no-firmware: no sections to show
    for op in report["ops"]:
        assert op["reason"] in text

    from edgesdk.report.html import render_html, timeline_svg

    report["ops"][0]["output"] = "<script>alert(1)</script>"
    report["memory"]["buffers"][0]["name"] = "<script>alert(2)</script>"  # also in the timeline's figure
    hostile = tmp_path / "hostile.html"
    hostile.write_text(render_html(report, timeline_svg(report)))
    parsed = check_page(hostile)
    text = "".join(parsed.text)
    assert "<script>alert(1)</script>" in text and "<script>alert(2)</script>" in text


@pytest.mark.slow
def test_report_renders_in_a_headless_browser(kws_pages):
    browser = headless_browser()
    work, build_page, profile_page = kws_pages
    report = json.loads((build_page.parent / "report.json").read_text())
    assert report["report_html"] == "report.html"
    for page, figures in ((build_page, 4), (profile_page, 4)):
        parsed = check_page(page)
        assert parsed.figures == figures
        seen = probe_page(browser, page, work)
        assert seen["figures"] == seen["shown"] == figures and seen["images"] == 0, seen  # every figure shows
        assert seen["tables"] >= 6 and seen["rows"] > 2 * len(report["ops"]), seen
        assert seen["headings"][:2] == ["Partition", "Per layer"], seen
        assert seen["width"] <= WIDTH, seen  # no table pushes the page sideways
        pixels = screenshot(browser, page, work / f"{page.parent.name}.png", min(seen["height"], 16000))
        ink = (pixels[..., :3].min(axis=-1) < 0.9).mean()  # share of pixels that are not (near) white
        assert pixels.shape[0] >= 2000 and 0.05 < ink < 0.9, (pixels.shape, ink)
    text = "".join(check_page(profile_page).text)
    assert "Measured on the built-in emulator" in text and "measured npu0 cycles" in text
