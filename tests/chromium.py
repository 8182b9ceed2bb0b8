"""Chromium, headless and offline, on a page: what a probe script finds in it once laid out (its charts, header links,
text and errors), and its screenshots."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
WIDTH = 1400
NO_CHROMIUM = "needs Chromium (apt install chromium; .ci/run installs it)"

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
