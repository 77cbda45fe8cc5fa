"""HTML pieces for ``tracereader report``: page, tables, the inline CSS and JS.

Everything the page needs is in the file: no request leaves it (no CDN, no
web font; pictures are ``data:`` URIs).
"""

from __future__ import annotations

import base64
import html
from dataclasses import replace
from typing import Any

import numpy as np

from ._names import shorten_kernel_name
from ._tables import Table, _fmt

__all__ = ["ms_columns", "page", "picture", "table", "unit"]

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;
max-width:1200px;padding:0 1em;color:#1b1b1b;background:#fff}
h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:13px}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}
th{background:#f2f2f2;cursor:pointer;user-select:none}tfoot td{font-weight:600}
th.asc::after{content:" \\25B2"}th.desc::after{content:" \\25BC"}
.verdict-CPU-bound{color:#a40000}.verdict-GPU-bound{color:#0a6b00}.verdict-changed{font-weight:600}
.note{color:#555}img{max-width:100%;border:1px solid #ddd}
.bar{display:flex;height:14px;width:320px;border:1px solid #aaa}
.bar span{display:block;height:100%}
li{margin:.3em 0}.wide{overflow-x:auto}code{background:#f4f4f4;padding:0 3px}
"""

# Sort a table by the clicked header; numbers by their data-v value.
JS = """
document.querySelectorAll("table.sortable th").forEach(function(th){
 th.addEventListener("click",function(){
  var t=th.closest("table"),b=t.tBodies[0],i=Array.prototype.indexOf.call(th.parentNode.children,th);
  var asc=!th.classList.contains("asc");
  t.querySelectorAll("th").forEach(function(h){h.classList.remove("asc","desc")});
  th.classList.add(asc?"asc":"desc");
  var rows=Array.prototype.slice.call(b.rows);
  rows.sort(function(x,y){
   var a=x.cells[i],c=y.cells[i],p=a.dataset.v,q=c.dataset.v,r;
   if(p!==undefined&&q!==undefined){r=parseFloat(p)-parseFloat(q)}
   else{r=a.textContent.localeCompare(c.textContent)}
   return asc?r:-r});
  rows.forEach(function(r){b.appendChild(r)});
 });
});
"""

COLORS = {"computation": "#4c72b0", "memcpy": "#dd8452", "memset": "#937860",
          "communication": "#8172b3", "idle": "#e8e8e8"}  # fmt: skip


def esc(text: Any) -> str:
    """``text`` escaped for HTML."""
    return html.escape(str(text), quote=True)


def table(t: Table, *, sortable: bool = True, note: str = "", footer_rows: int = 0) -> str:
    """``t`` as an HTML table (numbers right-aligned and sortable by value).

    The last ``footer_rows`` rows (a total) go in the table's foot, which
    sorting leaves in place.
    """
    head = "".join(f"<th>{esc(c)}</th>" for c in t.columns)
    body = []
    for r in t.rows:
        cells = []
        for c, v in zip(t.columns, r, strict=False):
            if isinstance(v, bool) or v is None or isinstance(v, str):
                text = "" if v is None else str(v)
                shown = shorten_kernel_name(text, t.name_width) if c in t.name_columns else text
                cls = f' class="verdict-{esc(text)}"' if c == "verdict" else ""
                tip = f' title="{esc(text)}"' if shown != text else ""
                cells.append(f"<td{cls}{tip}>{esc(shown)}</td>")
            else:
                cells.append(f'<td class="n" data-v="{float(v)!r}">{esc(_fmt(c, v))}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    cls = ' class="sortable"' if sortable else ""
    cap = f"<caption>{esc(t.title)}</caption>" if t.title else ""
    cut = len(body) - max(min(footer_rows, len(body)), 0)
    foot = f"<tfoot>{''.join(body[cut:])}</tfoot>" if cut < len(body) else ""
    out = (f'<div class="wide"><table{cls}>{cap}<thead><tr>{head}</tr></thead>'
           f"<tbody>{''.join(body[:cut])}</tbody>{foot}</table></div>")  # fmt: skip
    return out + (f'<p class="note">{esc(note)}</p>' if note else "")


def unit(values_us: list[float]) -> tuple[str, float]:
    """One unit for a table of times: ``("ms", 1e3)`` when the largest is 1 ms or more.

    Returns the unit's name and what to divide µs by.
    """
    return ("ms", 1e3) if max(values_us, default=0.0) >= 1e3 else ("us", 1.0)


def ms_columns(t: Table, decide_on: Table | None = None) -> Table:
    """``t`` with each ``*_us`` column whose median is 1 ms or more in ms (``*_ms``).

    Columns of small times keep µs, so each column's header names its unit.
    ``decide_on`` (rows of the same columns: a table's top rows) picks the
    columns instead of ``t``, so that a full table reads in its top's units.
    """
    cols, rows = list(t.columns), [list(r) for r in t.rows]
    pick = (decide_on or t).rows
    for k, c in enumerate(t.columns):
        vals = [abs(float(r[k])) for r in pick if isinstance(r[k], (int, float))
                and not isinstance(r[k], bool)]  # fmt: skip
        if not c.endswith("_us") or not vals or float(np.median(vals)) < 1e3:
            continue
        cols[k] = c[:-3] + "_ms"
        for r in rows:
            if isinstance(r[k], (int, float)) and not isinstance(r[k], bool):
                r[k] = r[k] / 1e3
    return replace(t, columns=cols, rows=rows)


def bar(parts: dict[str, float]) -> str:
    """A horizontal bar of ``parts`` (name -> µs), each as a share of their sum."""
    total = sum(parts.values())
    if total <= 0:
        return ""
    spans = "".join(
        f'<span style="width:{100 * v / total:.2f}%;background:{COLORS.get(k, "#999")}" '
        f'title="{esc(k)}: {v:,.1f} µs"></span>'
        for k, v in parts.items()
        if v > 0
    )
    return f'<div class="bar">{spans}</div>'


def picture(png: bytes, alt: str) -> str:
    """A PNG inlined as a ``data:`` URI."""
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def page(title: str, body: str) -> str:
    """The whole self-contained HTML document."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{esc(title)}</h1>{body}<script>{JS}</script></body></html>\n"
    )
