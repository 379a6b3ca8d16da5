"""Self-contained HTML pages: styles inline, images embedded as data URIs, nothing fetched from a network, so a
report opens offline and survives being mailed or copied as one file. Every report (run, sweep, compare) is
built from these pieces so that they look alike.
"""
from __future__ import annotations

import base64
import html
import math
from dataclasses import dataclass
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
.figure .value{font-size:1.35em;font-weight:600}.figure.good .value{color:#1a7f37}
.figure.warn .value{color:#b35900}.figure.bad .value{color:#b00020}.figure .label{font-size:.8em;color:#5b6577}
img{max-width:100%;height:auto}code,pre{background:#f3f5f8;padding:1px 4px;border-radius:3px}
pre{white-space:pre-wrap;font-size:.82em}.muted{color:#5b6577;font-size:.9em}
nav a{margin-right:12px;color:#2457a6;text-decoration:none}nav{margin:.4em 0 .8em}
svg.bars{width:100%;height:auto;font-size:12px}svg.bars .row{fill:transparent}
svg.bars g:hover .row{fill:#eef2f8}svg.bars text{fill:#1d2330}svg.bars .value{fill:#5b6577}
.legend span{display:inline-block;margin-right:12px;font-size:.82em}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
details{margin:.4em 0}.scroll{overflow-x:auto}summary{cursor:pointer;color:#2457a6}
"""
CHART_WIDTH, LABEL_WIDTH, VALUE_WIDTH, ROW_HEIGHT = 1000, 330, 170, 22


def escape(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def format_cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return str(value)


def number_text(value: Any, unit: str = "") -> str:
    """A summary figure as a page shows it: 4 significant digits (format_cell) and its unit, or n/a."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{format_cell(float(value))}{unit}"


def png_data_uri(path: Path | str) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    value_text: str
    tooltip: str  # shown on hover, one fact per line
    color: str = "#4c78a8"


def bar_chart_svg(bars: Sequence[Bar]) -> str:
    """Horizontal bars as inline SVG; each row's <title> is its hover text, so no script is needed."""
    top = max((bar.value for bar in bars), default=0.0)
    scale = (CHART_WIDTH - LABEL_WIDTH - VALUE_WIDTH) / top if top > 0 else 0.0
    rows = []
    for i, bar in enumerate(bars):
        y = i * ROW_HEIGHT
        width = max(bar.value * scale, 1.0) if bar.value > 0 else 0.0
        rows.append(
            f'<g><title>{escape(bar.tooltip)}</title>'
            f'<rect class="row" x="0" y="{y}" width="{CHART_WIDTH}" height="{ROW_HEIGHT}"/>'
            f'<text x="{LABEL_WIDTH - 8}" y="{y + 15}" text-anchor="end">{escape(bar.label)}</text>'
            f'<rect x="{LABEL_WIDTH}" y="{y + 4}" width="{width:.1f}" height="{ROW_HEIGHT - 8}" '
            f'fill="{escape(bar.color)}"/>'
            f'<text class="value" x="{LABEL_WIDTH + width + 6:.1f}" y="{y + 15}">{escape(bar.value_text)}</text></g>')
    height = max(len(bars), 1) * ROW_HEIGHT
    return (f'<svg class="bars" viewBox="0 0 {CHART_WIDTH} {height}" role="img">{"".join(rows)}</svg>')


def _exact(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f' data-value="{value!r}" title="{value!r}"'
    return ""


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

    def headline(self, figures: Sequence[tuple[str, Any]], tones: dict[str, str] | None = None) -> "HtmlPage":
        """A number keeps its full precision in `data-value` (hover shows it; checks compare it). `tones` maps a
        label to `good`, `warn` or `bad`, which colours its figure."""
        tones = tones or {}
        cells = "".join(f'<div class="figure {escape(tones.get(label, ""))}"{_exact(value)}>'
                        f'<div class="value">{escape(format_cell(value))}</div>'
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
        self._parts.append(f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
                           f"<tbody>{''.join(body)}</tbody></table></div>")
        return self

    def image(self, path: Path | str, alt: str) -> "HtmlPage":
        self._parts.append(f'<p><img src="{png_data_uri(path)}" alt="{escape(alt)}"></p>')
        return self

    def bar_chart(self, bars: Sequence[Bar], legend: dict[str, str] | None = None) -> "HtmlPage":
        """`legend` maps a name to its bar colour."""
        if legend:
            keys = "".join(f'<span><i style="background:{escape(color)}"></i>{escape(name)}</span>'
                           for name, color in legend.items())
            self._parts.append(f'<div class="legend">{keys}</div>')
        self._parts.append(bar_chart_svg(bars))
        return self

    def details(self, summary: str, text: str) -> "HtmlPage":
        """Long text folded away until clicked."""
        self._parts.append(f"<details><summary>{escape(summary)}</summary><pre>{escape(text)}</pre></details>")
        return self

    def links(self, anchors: Sequence[tuple[str, str]]) -> "HtmlPage":
        """In-page navigation: (anchor, text) pairs."""
        items = "".join(f'<a href="#{escape(anchor)}">{escape(text)}</a>' for anchor, text in anchors)
        self._parts.append(f"<nav>{items}</nav>")
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
