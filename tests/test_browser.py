"""Every committed page in a real headless Chromium, offline: it loads without a console error, every chart renders
with a title, a description and a legend of at most six series, the header links the index, every category, the
roofline, the paper comparison and the run's GPU page, the page fits 1400 px wide and 12,000 px tall with every fold
closed, the findings fit on a screen, and no raw JSON parameter, machine path or exponent reaches the text."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
REPORTS = ROOT / "reports"
LISTED = ["git", "ls-files", "--cached", "--others", "--exclude-standard", "reports"]
# committed or ready to commit: a run's own pages, not a local run's (reports/* is ignored)
COMMITTED = subprocess.run(LISTED, capture_output=True, text=True, cwd=ROOT).stdout.split()
PAGES = sorted(ROOT / p for p in COMMITTED if p.endswith(".html") and "/.probe-" not in p)
CATEGORIES = sorted(p.parent.name for p in (ROOT / "kernels").glob("*/cases.yaml"))
MAX_BYTES = 1_500_000
MAX_LEGEND = 6  # series one legend may name
MAX_HEIGHT = 12_000  # px, every fold closed
SCIENTIFIC = re.compile(r"\b\d+(\.\d+)?[eE][+-]?\d+\b")  # 1.5e+07: a number no person writes
FINDINGS_PX = 1600  # the findings (or the index's headline table) fit in about two screens at 1400 px wide
WIDTH = 1400
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (apt install chromium; .ci/run installs it)")

# Appended to a copy of each page: after layout, measure every chart and the findings, collect the header's links,
# the text and any error, and write them into the title, which --dump-dom prints. The flags below block the network.
PROBE = """<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message || e.type)));
window.addEventListener('load', () => {
  const charts = [...document.querySelectorAll('.chart svg, canvas')].map(el => {
    const r = el.getBoundingClientRect();
    const legends = [...el.querySelectorAll('g.role-legend')].map(g => ({
      symbols: g.querySelectorAll('.role-legend-symbol path').length,
      labels: [...g.querySelectorAll('.role-legend-label text')].map(t => t.textContent)}));
    const alt = t => (el.querySelector(`:scope > ${t}`) || {}).textContent || '';
    return {w: r.width, h: r.height, marks: el.querySelectorAll('path, rect, circle, text, line').length, legends,
      title: alt('title'), desc: alt('desc')};
  });
  const bottom = id => { const e = document.getElementById(id); return e ? e.getBoundingClientRect().bottom : -1; };
  const screen = {device: bottom('device'), peaks: bottom('peaks'), trust: bottom('trust')};
  const remote = [...document.querySelectorAll('[src], link[href]')].map(e => e.getAttribute('src') ||
    e.getAttribute('href')).filter(u => /^(https?:)?\\/\\//.test(u));
  const nav = [...document.querySelectorAll('header.nav a, header.nav b')].map(a =>
    ({name: a.textContent, href: a.getAttribute('href')}));
  const first = document.querySelector('section#findings, section#headline-figures');
  const findings = first ? first.getBoundingClientRect().height : -1;
  const text = document.body.textContent;
  const page = {w: document.documentElement.scrollWidth, h: document.documentElement.scrollHeight,
    view: document.documentElement.clientWidth, open: document.querySelectorAll('details[open]').length};
  document.title = 'PROBE' + JSON.stringify({charts, remote, nav, findings, screen, text, page,
    errors: window.__errors});
});
</script>"""


def browse(page: Path, tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """Chromium, headless and offline, on a file; its stdout and stderr (console lines) as text."""
    argv = [
        CHROMIUM,
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--proxy-server=127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=5000",
        f"--window-size={WIDTH},1000",
        *flags,
        page.as_uri(),
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def probe(page: Path, tmp_path: Path) -> tuple[dict, str]:
    """What the probe found in `page` (a copy beside the original, so relative links resolve), and Chromium's
    stderr."""
    probed = page.with_name(f".probe-{page.name}")
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    try:
        proc = browse(probed, tmp_path, "--dump-dom")
    finally:
        probed.unlink()
    title = re.search(r"<title>PROBE(.*?)</title>", proc.stdout, flags=re.S)
    assert title, f"the probe did not run in {page.name}: {proc.stderr[-1500:]}"
    return json.loads(
        title.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    ), proc.stderr


def test_the_committed_runs_have_pages() -> None:
    assert {"h200/index.html", "h200/latency.html", "h200x2/gpus.html"} <= {str(p.relative_to(REPORTS)) for p in PAGES}


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPORTS)) for p in PAGES])
def test_page_reads_in_a_browser(page: Path, tmp_path: Path) -> None:
    assert page.stat().st_size < MAX_BYTES, f"{page.name}: {page.stat().st_size:,} bytes (at most {MAX_BYTES:,})"
    found, stderr = probe(page, tmp_path)
    assert not found["errors"] and not found["remote"], found["errors"] + found["remote"]
    console = [ln for ln in stderr.splitlines() if "CONSOLE" in ln and "PROBE" not in ln]
    assert not console, console
    # the header: the index, every category of this run, the roofline, the paper comparison and the run's GPU page
    # where they exist, each link resolving to a page
    names = {n["name"] for n in found["nav"]}
    links = [(page.parent / n["href"]).resolve() for n in found["nav"] if n["href"]]
    assert "index" in names and all(link.exists() for link in links), found["nav"]
    run = next((link.parent for link in links if link.name == "index.html"), page.parent)
    pages = [*CATEGORIES, "roofline", "compare-paper"]
    assert {p for p in pages if (run / f"{p}.html").exists()} <= names, found["nav"]
    gpus = [g for g in (run.parent / "gpus.html", run.parent.parent / "gpus.html") if g.exists()]
    assert not gpus or gpus[0] in links or page == gpus[0], found["nav"]
    # the page: 1400 px wide without a horizontal scroll, at most MAX_HEIGHT tall with every fold closed
    size = found["page"]
    assert size["w"] <= size["view"] and size["h"] <= MAX_HEIGHT and not size["open"], size
    # charts: drawn, titled and described, legends of at most MAX_LEGEND series, none cut short ("... N entries")
    assert len(found["charts"]) >= page.read_text().count('<div class="chart">')
    for chart in found["charts"]:
        assert chart["w"] > 50 and chart["h"] > 50 and chart["marks"] > 5, chart
        assert chart["title"] and chart["desc"], {k: chart[k] for k in ("title", "desc", "w", "h")}
        for legend in chart["legends"]:
            assert legend["symbols"] <= MAX_LEGEND, legend
            assert not any("entries" in label for label in legend["labels"]), legend
    # findings first and short; text as a person writes it
    reference_pages = ("gpus.html", "compare-paper.html", "roofline.html", "gpgpusim-diff.html")  # no findings
    if page.name not in reference_pages and "compare" not in page.parts:
        assert 0 < found["findings"] < FINDINGS_PX, f"findings section {found['findings']} px tall"
    assert not re.search(r'\{"[a-z_0-9]+":', found["text"]), re.search(r'.{60}\{"[a-z_0-9]+":.{40}', found["text"])
    assert not re.search(r"(?<![\w.])/(work|tmp|home|root|usr)/", found["text"])
    assert not SCIENTIFIC.search(found["text"]), [m.group(0) for m in SCIENTIFIC.finditer(found["text"])][:5]


FIRST_SCREEN_PX = 1000  # the index's device sheet, peaks and trust summary: one screen at 1400 px wide


def test_index_opens_on_the_device_its_peaks_and_the_trust_summary(tmp_path: Path) -> None:
    found, _ = probe(REPORTS / "h200" / "index.html", tmp_path)
    assert all(0 < bottom <= FIRST_SCREEN_PX for bottom in found["screen"].values()), found["screen"]
    for words in ("SMs", "boost clock", "L2 cache", "power limit", "CUDA toolkit", "FP16 tensor", "TFLOPS", "TOPS",
                  "DRAM", "latency (ns)", "what it means"):  # fmt: skip
        assert words in found["text"], words


def test_roofline_page_draws_a_described_chart(tmp_path: Path) -> None:
    page = REPORTS / "h200" / "roofline.html"
    assert page in PAGES and (page.parent / "roofline.json").exists()
    found, _ = probe(page, tmp_path)
    assert len(found["charts"]) == 1 and not found["errors"], found["errors"]
    chart = found["charts"][0]
    assert chart["title"].startswith("Roofline of the NVIDIA H200") and "measured" in chart["desc"], chart
    assert "roofline" in {n["name"] for n in found["nav"]}


SCREENSHOTS = sorted((REPORTS / "h200" / "screenshots").glob("*.png"))


def test_screenshots_are_committed_beside_the_run() -> None:
    assert {p.stem for p in SCREENSHOTS} >= {"index", "memory", "pipelines", "roofline"}
    for shot in SCREENSHOTS:
        data = shot.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and 20_000 < len(data) < 400_000, (shot.name, len(data))


def test_screenshot_of_the_index_renders(tmp_path: Path) -> None:
    shot = tmp_path / "index.png"
    browse(REPORTS / "h200" / "index.html", tmp_path, f"--screenshot={shot}")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a real rendering, not a blank page
