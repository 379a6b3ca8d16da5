"""report.html's "Below the layer" section: where each step's time went, the CPU's counters, the kernels."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from utils.measure.below_layer.kernels import int8_line
from utils.measure.below_layer.native_time import CATEGORIES, CATEGORY_TITLES
from utils.measure.below_layer.page_faults import page_fault_line
from utils.storage import layout
from utils.measure.below_layer.files import counters_line
from utils.storage.html_page import HtmlPage
from utils.record.sections import CpuCountersSection, KernelsSection, NativeTimeSection, measured

SECTION = ("below", "Below the layer")
COUNTER_FIGURES = (("images", "images"), ("system_ms", "system ms"), ("cpu_per_wall", "CPU / wall"),
                   ("voluntary_switches", "voluntary switches"),
                   ("involuntary_switches", "involuntary switches"), ("cpu_migrations", "migrations"),
                   ("minor_faults", "minor faults"), ("major_faults", "major faults"), ("ipc", "IPC"),
                   ("llc_misses", "LLC misses"))


def _native(page: HtmlPage, native: NativeTimeSection) -> None:
    if not measured(native):
        page.paragraph(f"Python against native time: {native['status']} ({native.get('reason')}).")
        return
    page.paragraph(f"Sampled by py-spy with native frames at {native['rate_hz']} Hz over the timed passes "
                   f"({native['samples']} samples, {native['errors']} errors). Where each step's time went:")
    page.raw("<ul>" + "".join(f"<li>{line}</li>" for line in native["lines"]) + "</ul>")
    rows = [[step, values["occurrences"], values["sampled_ms"]]
            + [values.get(f"{c}_share") for c in CATEGORIES] for step, values in native["steps"].items()]
    page.table(["step", "occurrences", "sampled ms"] + [CATEGORY_TITLES[c] for c in CATEGORIES], rows,
               text_columns=("step",))
    page.paragraph(f"GIL: {native['gil']}. Stacks for speedscope (speedscope.app, or `npx speedscope`): "
                   f"{layout.SAMPLES_SPEEDSCOPE}; the table: {layout.NATIVE_TIME}.")


def _counters(page: HtmlPage, counters: CpuCountersSection) -> None:
    page.paragraph(counters_line(counters).strip())
    if not measured(counters):
        return
    page.table(["timed pass", "wall ms", "CPU ms"] + [title for _, title in COUNTER_FIGURES],
               [[p["pass_index"], p["wall_ms"], p["cpu_ms"]] + [p.get(key) for key, _ in COUNTER_FIGURES]
                for p in counters["passes"]])
    faults = page_fault_line(counters.get("page_faults") or {})
    if faults:
        page.paragraph(faults[0].upper() + faults[1:] + ".")
    for name, why in counters.get("unavailable", {}).items():
        page.paragraph(f"{name}: unavailable, {why}.")
    page.paragraph(f"Per thread: {layout.CPU_COUNTERS}.")


def _kernels(page: HtmlPage, kernels: KernelsSection) -> None:
    if kernels.get("convolution_kernels"):
        shown = ", ".join(f"{name} ({count} layers)" for name, count in kernels["convolution_kernels"].items())
        page.paragraph(f"Convolution kernels ({kernels['source']}; {kernels.get('onednn', {}).get('isa', '')}): "
                       f"{shown}. Each layer's is in the kernel column of {layout.LAYER_TIMER}; the verbose "
                       f"output is {layout.ONEDNN_VERBOSE}.")
    else:
        page.paragraph(f"Kernels: {kernels.get('source') or kernels.get('reason')}.")
    if kernels.get("int8"):
        page.paragraph(int8_line(kernels["int8"]) + ".")


def below_section(page: HtmlPage, summary: Mapping[str, Any]) -> None:
    page.heading(SECTION[1], SECTION[0])
    parts = [key for key in ("native_time", "cpu_counters", "kernels", "itt") if summary.get(key)]
    if not parts:
        page.paragraph("Nothing below the layer was measured (see profiling.* in the config).")
        return
    if summary.get("native_time"):
        _native(page, summary["native_time"])
    if summary.get("cpu_counters"):
        _counters(page, summary["cpu_counters"])
    if summary.get("kernels"):
        _kernels(page, summary["kernels"])
    itt = summary.get("itt")
    if itt:
        page.paragraph(f"ITT: {itt['tasks']} tasks (steps and layers of the timed passes) via {itt['api']}; "
                       "VTune shows them with: vtune -collect hotspots -- python benchmark.py --config ...")
