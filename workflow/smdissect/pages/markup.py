"""The HTML of every page: tables, folds, sections with a table of contents, the header and the document around
them (inline stylesheet and script, nothing fetched when the page opens), and numbers as a person writes them."""

from __future__ import annotations

import html
import math
import numbers
import re

import pandas as pd

from ..core.tables import point_text

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}
h1{margin-bottom:.2em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3} td.num{text-align:right;font-variant-numeric:tabular-nums}
table.prov th{font-weight:normal;color:#555}
.skipped{border:2px solid #c90;background:#fff6e0;padding:.5em 1em;margin:1em 0}
.skipped h2{margin-top:0;border:none} .empty{color:#777;font-style:italic}
td.v-agree{background:#d7f2d7} td.v-disagree{background:#f7d0d0;font-weight:bold}
td.v-not-applicable{background:#e6e6e6;color:#555}
span.s-verified,span.s-consistent,span.s-unverified,span.s-contradicted{padding:0 .4em;border-radius:3px;font-size:12px}
span.s-verified{background:#d7f2d7} span.s-consistent{background:#dbe9f7} span.s-unverified{background:#eee;color:#444}
span.s-contradicted{background:#f7d0d0;font-weight:bold}
code{font-size:12px}
header.nav{font-size:13px;border-bottom:1px solid #ccc;padding-bottom:.4em;margin-bottom:.6em}
header.nav a{margin-right:.6em} header.nav b{margin-right:.6em}
nav.toc{font-size:13px;background:#f7f7f7;padding:.3em .8em;display:inline-block}
nav.toc ol{margin:.2em 0;padding-left:1.4em;columns:2 24em;column-gap:2em}
p.lede{color:#444;max-width:1000px}
details{margin:.4em 0} summary{cursor:pointer;color:#0645ad} div.chart{display:inline-block;vertical-align:top;
max-width:100%;margin:0 1em .5em 0} td{overflow-wrap:anywhere} td span[class^=s-]{white-space:nowrap}
table.sortable th{cursor:pointer} input.filter{font-size:12px;margin:.3em 0;width:22em}
.glance{display:grid;grid-template-columns:minmax(0,2fr) minmax(0,3fr);gap:0 2em;align-items:start}
.glance h2,#trust h2{margin:.3em 0 .2em;font-size:1.25em} table.sheet th,#peaks td{white-space:nowrap}
span.why{color:#666;font-size:12px} p.tolerance{font-size:13px;margin:.3em 0} #trust td{padding:1px 6px}
"""

# Click a header of a sortable table to sort by it; type into a filter box to keep the rows that contain the text.
SCRIPT = """<script>
document.addEventListener('click',e=>{const th=e.target.closest('table.sortable th');if(!th)return;
const t=th.closest('table'),i=[...th.parentNode.children].indexOf(th),b=t.tBodies[0],d=th.dataset.dir==='a'?'d':'a';
th.dataset.dir=d;const key=r=>{const s=(r.children[i]||{}).textContent||'';const n=parseFloat(s);
return /^[-+]?[0-9.]/.test(s.trim())&&!isNaN(n)?n:s.toLowerCase()};
[...b.rows].sort((x,y)=>{const p=key(x),q=key(y),c=typeof p===typeof q?(p<q?-1:p>q?1:0):(typeof p==='number'?-1:1);
return d==='a'?c:-c}).forEach(r=>b.appendChild(r))});
document.addEventListener('input',e=>{if(!e.target.matches('input.filter'))return;
const q=e.target.value.toLowerCase();for(const r of e.target.nextElementSibling.tBodies[0].rows)
r.hidden=q!==''&&!r.textContent.toLowerCase().includes(q)});
</script>"""
SORTABLE_ROWS = 12  # tables longer than this sort by a click on a header
FILTER_ROWS = 30  # and longer than this get a filter box, and are folded
JSON_POINT = re.compile(r"\{\"[^{}]*\}")
EXPONENT = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?[eE][-+]?\d+(?![\w.])")  # 1.5e+07 in a text: written out
ROWS_FOLD = re.compile(r'<details class="rows"><summary>[^<]*</summary>(.*?)</details><!--rows-->', re.S)


def plain(text: str) -> str:
    """A text with every number in scientific notation written out (1.5e+07 -> 15000000)."""
    return EXPONENT.sub(lambda m: _trimmed(_positional(float(m.group(0)), 4)), text)


def cell_text(value: object) -> str:
    """A cell as text: blanks for missing, integers whole, other floats to 4 significant digits (never an
    exponent)."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    if isinstance(value, numbers.Integral):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e12 else _trimmed(_positional(value, 4))
    return "" if value == "{}" else plain(JSON_POINT.sub(lambda m: point_text(m.group(0)), str(value)))


def _cell(column: str, value: object, raw: bool = False) -> str:
    """One <td>: numbers right-aligned, verdicts colored; `raw` cells are already HTML."""
    if raw:
        return f"<td>{value}</td>"
    text = html.escape(cell_text(value))
    if column == "verdict" and text:
        return f'<td class="v-{text}">{text}</td>'
    num = isinstance(value, numbers.Number) and not isinstance(value, bool)
    return f'<td class="num">{text}</td>' if num else f"<td>{text}</td>"


def table(df: pd.DataFrame, raw: tuple[str, ...] = ()) -> str:
    """A DataFrame as an HTML table, escaped except in the `raw` columns; long ones sortable and filterable."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    cols = [(str(c), c in raw) for c in df.columns]
    rows = ("".join(_cell(c, v, h) for (c, h), v in zip(cols, r, strict=True)) for r in df.itertuples(index=False))
    body = "".join(f"<tr>{r}</tr>" for r in rows)
    sortable = ' class="sortable"' if len(df) > SORTABLE_ROWS else ""
    drawn = f"<table{sortable}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    if len(df) <= FILTER_ROWS:
        return drawn
    box = '<input class="filter" type="search" placeholder="filter rows">'
    return f'<details class="rows"><summary>{len(df):,} rows</summary>{box}{drawn}</details><!--rows-->'


def table_of(df: pd.DataFrame) -> str:
    """A table, or why there is none."""
    return table(df) if len(df) else empty("no rows")


def deftable(pairs: dict[str, str]) -> str:
    """Key/value pairs as a small two-column table."""
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in pairs.items())
    return f'<table class="prov">{rows}</table>'


def fold(summary: str, body: str) -> str:
    """Evidence a reader opens on demand: `body` under a one-line `summary` (HTML); a long table's own fold inside
    it is opened (one click, not two)."""
    opened = ROWS_FOLD.sub(r"\1", body)
    return f"<details><summary>{summary}</summary>{opened}</details>"


def empty(text: str) -> str:
    """Why a section shows nothing."""
    return f'<p class="empty">{html.escape(plain(text))}</p>'


def anchor(title: str) -> str:
    """A section's id: its title in lower case, words joined by '-'."""
    return re.sub(r"[^a-z0-9]+", "-", html.unescape(title).lower()).strip("-")


def _section(title: str, body: str) -> str:
    """A titled section of a page, with an id the table of contents links."""
    return f'<section id="{anchor(title)}"><h2>{html.escape(title)}</h2>{body}</section>'


def _toc(titles: list[str]) -> str:
    """A table of contents linking each section of a page."""
    items = "".join(f'<li><a href="#{anchor(t)}">{html.escape(t)}</a></li>' for t in titles)
    return f'<nav class="toc"><b>Contents</b><ol>{items}</ol></nav>'


def sections(parts: list[tuple[str, str]]) -> str:
    """A table of contents, then each (title, body) as a section (empty bodies left out)."""
    shown = [(t, b) for t, b in parts if b]
    return _toc([t for t, _ in shown]) + "".join(_section(t, b) for t, b in shown)


def navigation(categories: list[str], current: str, prefix: str = "", gpus: str = "", paper: bool = True) -> str:
    """The header of every page: the index, the roofline, every category and the paper comparison (beside the
    other GPU's; `paper` False where the run made none: no GPU), the current one in bold; with `gpus` (its href),
    the page over every GPU of the run."""
    pages = ("index", "roofline", *categories, *(["compare-paper"] if paper else []))
    links = [(f"{prefix}{p}.html", p) for p in pages] + ([(gpus, "gpus")] if gpus else [])
    items = "".join(
        f"<b>{html.escape(name)}</b>"
        if name == current
        else f'<a href="{html.escape(href, quote=True)}">{html.escape(name)}</a>'
        for href, name in links
    )
    return f'<header class="nav">smdissect: {items}</header>'


def document(title: str, body: str, nav: str = "") -> str:
    """A full HTML document with the inline stylesheet and script; non-ASCII as character references."""
    doc = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{CSS}</style></head><body>{nav}{body}{SCRIPT}</body></html>\n"
    )
    return doc.encode("ascii", "xmlcharrefreplace").decode("ascii")


def number(value: float, digits: int = 4, resolution: float = math.nan) -> str:
    """A figure as a person writes it: `digits` significant figures (4.000, 23.00, 0.5000, 0.0001546), whole numbers
    beyond them (43167), never an exponent; to the decimal of its `resolution` where it has one (a host timer's
    0.01 us: 0.40)."""
    if value is None or pd.isna(value):
        return ""
    if resolution and not math.isnan(resolution):
        return f"{value:.{max(0, -math.floor(math.log10(resolution)))}f}"
    return _positional(value, digits)


def _positional(value: float, digits: int) -> str:
    """`value` to `digits` significant figures in positional notation, whole beyond them."""
    if abs(value) >= 10**digits - 0.5:
        return f"{value:.0f}"
    places = digits - 1 - (math.floor(math.log10(abs(value))) if value else 0)
    return f"{value:.{max(0, places)}f}"


def _trimmed(text: str) -> str:
    """A positional number without trailing zeros after its point (4.500 -> 4.5, 2.000 -> 2)."""
    return text.rstrip("0").rstrip(".") if "." in text else text


def share(spread: float, value: float) -> str:
    """A spread as a percentage of its value ('' where either is missing)."""
    if spread is None or value is None or pd.isna(spread) or pd.isna(value) or not value:
        return ""
    pct = 100 * spread / abs(value)
    if pct == 0:
        return "0%"
    return "<0.01%" if pct < 0.01 else f"{pct:.2g}%" if pct < 10 else f"{pct:.0f}%"


def badge(status: str) -> str:
    """A figure's status as a coloured badge."""
    return f'<span class="s-{html.escape(status)}">{html.escape(status)}</span>'
