"""How memory reads: its console line, its section of report.html with its headline figure, its TensorBoard
scalars and the figures runs are compared by."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from utils.measure.contract import Cell, ScalarWriter
from utils.measure.memory.files import MEMORY, MEMORY_PLOT
from utils.measure.memory.section import MemorySection
from utils.record.run_record import MeasurementResult
from utils.record.sections import measured
from utils.storage.html_page import HtmlPage, number_text


def _fmt(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def console_lines(memory: MemorySection) -> list[str]:
    if memory.get("peak_pss_mib") is not None:
        return [f"  memory: peak {_fmt(memory['peak_pss_mib'], '.0f')} MiB PSS of the process and its loader "
                f"workers (shared pages split between them); RSS of the process alone "
                f"{_fmt(memory.get('peak_self_rss_mib'), '.0f')} MiB, baseline {_fmt(memory.get('baseline_rss_mib'), '.0f')} MiB"]
    if "peak_rss_mib" in memory:
        return [f"  memory: baseline {_fmt(memory.get('baseline_rss_mib'), '.0f')} MiB, "
                f"peak {_fmt(memory.get('peak_self_rss_mib'), '.0f')} MiB RSS of the process "
                f"({_fmt(memory.get('peak_rss_mib'), '.0f')} MiB with loader workers, which share its pages)"]
    return []


def peak_pss_headline(memory: MemorySection) -> list[Cell]:
    peak_pss = memory.get("peak_pss_mib")
    return [] if peak_pss is None else [("peak PSS (MiB)", peak_pss)]


def render(page: HtmlPage, memory: MemorySection, plots: Mapping[str, Path]) -> None:
    if not measured(memory):
        page.paragraph(f"Not measured: {memory.get('status')}.")
        return
    page.headline([("peak PSS, process + loader workers (MiB)", memory.get("peak_pss_mib", "n/a")),
                   ("peak RSS, process alone (MiB)", memory.get("peak_self_rss_mib", "n/a")),
                   ("baseline RSS after loading (MiB)", memory.get("baseline_rss_mib", "n/a")),
                   ("kernel high-water mark (MiB)", memory.get("ru_maxrss_mib", "n/a"))])
    if memory.get("peak_pss_mib") is None:
        page.paragraph(f"PSS: {memory.get('pss_status', 'not read')}.")
    page.paragraph("PSS splits the pages the process shares with its loader workers between them; RSS of the "
                   "process alone leaves the workers out; RSS of the process and its workers summed "
                   f"({number_text(memory.get('peak_rss_mib'), ' MiB')}) counts shared pages twice.")
    if MEMORY_PLOT in plots:
        page.image(plots[MEMORY_PLOT], "resident memory during the run, with the steps below it")


def scalars(writer: ScalarWriter, result: MeasurementResult) -> None:
    """RSS (and PSS where it was read) against milliseconds since the run started."""
    samples = result.tables.get(MEMORY)
    if samples is None:
        return
    for row in samples.rows:
        at_ms = round(row["t_s"] * 1000)
        for column in ("rss_mib", "self_rss_mib", "pss_mib"):
            if row.get(column) is not None:
                writer.add_scalar(f"memory/{column}", row[column], at_ms)


def figures(memory: MemorySection) -> dict[str, Any]:
    return {key: memory.get(key) for key in ("peak_pss_mib", "peak_rss_mib", "peak_self_rss_mib")}
