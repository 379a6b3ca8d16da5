"""Self-contained HTML pages: styles inline, images embedded as data URIs, nothing fetched from a network, so a
report opens offline and survives being mailed or copied as one file. Every report (run, sweep, compare) is
built from these pieces so that they look alike.
"""
from __future__ import annotations

import base64
import html
import math
from pathlib import Path
from typing import Any, Iterable, Sequence

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1100px;padding:16px 24px;
color:#1d2330;background:#fff}
h1{font-size:1.5em;margin:.4em 0}h2{font-size:1.15em;margin:1.4em 0 .5em;border-bottom:1px solid #dde2ea;padding-bottom:.2em}
table{border-collapse:collapse;font-size:.88em;margin:.4em 0}
th,td{padding:3px 9px;border-bottom:1px solid #e6e9ef;text-align:right;white-space:nowrap}
th{background:#f3f5f8;position:sticky;top:0}td.text,th.text{text-align:left}
.banner{background:#b00020;color:#fff;padding:8px 12px;font-weight:600;border-radius:4px;margin:.6em 0}
.warning{background:#fff4e5;border-left:4px solid #e8a33d;padding:6px 10px;margin:.3em 0}
.headline{display:flex;flex-wrap:wrap;gap:12px;margin:.6em 0}
.figure{border:1px solid #dde2ea;border-radius:6px;padding:8px 14px;min-width:130px}
.figure .value{font-size:1.35em;font-weight:600}.figure .label{font-size:.8em;color:#5b6577}
img{max-width:100%;height:auto}code,pre{background:#f3f5f8;padding:1px 4px;border-radius:3px}
"""


def escape(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def format_cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return str(value)


def png_data_uri(path: Path | str) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")


class HtmlPage:
    """Sections appended in reading order; `render()` gives the whole document as one string."""

    def __init__(self, title: str, script: str = ""):
        self.title = title
        self.script = script
        self._parts: list[str] = [f"<h1>{escape(title)}</h1>"]

    def heading(self, text: str, anchor: str | None = None) -> "HtmlPage":
        anchor_attribute = f' id="{escape(anchor)}"' if anchor else ""
        self._parts.append(f"<h2{anchor_attribute}>{escape(text)}</h2>")
        return self

    def paragraph(self, text: str) -> "HtmlPage":
        self._parts.append(f"<p>{escape(text)}</p>")
        return self

    def banner(self, text: str) -> "HtmlPage":
        self._parts.append(f'<div class="banner">{escape(text)}</div>')
        return self

    def warnings(self, texts: Iterable[str]) -> "HtmlPage":
        self._parts.extend(f'<div class="warning">{escape(text)}</div>' for text in texts)
        return self

    def headline(self, figures: Sequence[tuple[str, Any]]) -> "HtmlPage":
        cells = "".join(f'<div class="figure"><div class="value">{escape(format_cell(value))}</div>'
                        f'<div class="label">{escape(label)}</div></div>' for label, value in figures)
        self._parts.append(f'<div class="headline">{cells}</div>')
        return self

    def table(self, columns: Sequence[str], rows: Iterable[Sequence[Any]], text_columns: Iterable[str] = (),
              row_titles: Iterable[str] | None = None) -> "HtmlPage":
        """Numbers right-aligned, `text_columns` left-aligned; `row_titles` become hover text per row."""
        text = set(text_columns)
        head = "".join(f'<th class="{"text" if name in text else ""}">{escape(name)}</th>' for name in columns)
        titles = iter(row_titles) if row_titles is not None else None
        body = []
        for row in rows:
            title = f' title="{escape(next(titles))}"' if titles is not None else ""
            cells = "".join(f'<td class="{"text" if name in text else ""}">{escape(format_cell(value))}</td>'
                            for name, value in zip(columns, row))
            body.append(f"<tr{title}>{cells}</tr>")
        self._parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")
        return self

    def image(self, path: Path | str, alt: str) -> "HtmlPage":
        self._parts.append(f'<p><img src="{png_data_uri(path)}" alt="{escape(alt)}"></p>')
        return self

    def preformatted(self, text: str) -> "HtmlPage":
        self._parts.append(f"<pre>{escape(text)}</pre>")
        return self

    def raw(self, markup: str) -> "HtmlPage":
        """Markup built by the caller from escaped pieces (e.g. an inline SVG chart)."""
        self._parts.append(markup)
        return self

    def render(self) -> str:
        script = f"<script>{self.script}</script>" if self.script else ""
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
                f"<title>{escape(self.title)}</title><style>{STYLE}</style></head>"
                f"<body>{''.join(self._parts)}{script}</body></html>\n")
