"""The committed pages in a real headless Chromium: each loads offline, every chart renders, no console error."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
PAGES = sorted((ROOT / "reports" / "h200").glob("*.html"))
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (apt install chromium; .ci/run installs it)")

# Appended to a copy of each page: after layout, measure every chart and record errors into the title,
# which --dump-dom prints. Scripts, fonts and images from the network are blocked by the flags below.
PROBE = """<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message || e.type)));
window.addEventListener('load', () => {
  const charts = [...document.querySelectorAll('.chart svg, canvas')].map(el => {
    const r = el.getBoundingClientRect();
    return {w: r.width, h: r.height, marks: el.querySelectorAll('path, rect, circle, text, line').length};
  });
  const remote = [...document.querySelectorAll('[src], link[href]')].map(e => e.getAttribute('src') ||
    e.getAttribute('href')).filter(u => /^(https?:)?\\/\\//.test(u));
  document.title = 'PROBE' + JSON.stringify({charts, remote, errors: window.__errors});
});
</script>"""


def browse(page: Path, tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """Chromium, headless and offline, on a file; its stdout and stderr (console lines) as text."""
    argv = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
            f"--user-data-dir={tmp_path / 'profile'}", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
            "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", *flags, page.as_uri()]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def test_the_committed_run_has_pages() -> None:
    assert {p.name for p in PAGES} >= {"index.html", "latency.html"}


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_loads_offline_and_every_chart_renders(page: Path, tmp_path: Path) -> None:
    probed = tmp_path / page.name
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    proc = browse(probed, tmp_path, "--dump-dom")
    title = re.search(r"<title>PROBE(.*?)</title>", proc.stdout, flags=re.S)
    assert title, f"the probe did not run in {page.name}: {proc.stderr[-1500:]}"
    found = json.loads(title.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert not found["errors"] and not found["remote"], found
    console = [ln for ln in proc.stderr.splitlines() if "CONSOLE" in ln and "PROBE" not in ln]
    assert not console, console
    expected = page.read_text().count('<div class="chart">')
    assert len(found["charts"]) >= expected
    for chart in found["charts"]:
        assert chart["w"] > 50 and chart["h"] > 50 and chart["marks"] > 5, chart


def test_screenshot_of_the_index(tmp_path: Path) -> None:
    shot = tmp_path / "index.png"
    browse(ROOT / "reports" / "h200" / "index.html", tmp_path, f"--screenshot={shot}", "--window-size=1400,1000")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a real rendering, not a blank page
