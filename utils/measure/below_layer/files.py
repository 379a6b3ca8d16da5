"""The files, summary.json keys and console lines of what lies below the layer (utils.measure.below_layer.record)."""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Optional

from utils.measure.layers import run_trace
from utils.measure.below_layer.kernels import int8_line
from utils.measure.below_layer.page_faults import page_fault_line
from utils.record.run_record import RunRecord
from utils.storage import layout
from utils.storage.run_directory import RunDirectory
from utils.record.sections import CpuCountersSection, KernelsSection, NativeTimeSection, measured


def write_below_layer(run_dir: RunDirectory, record: RunRecord) -> None:
    below = record.below
    if below is None:
        return
    if below.speedscope is not None:
        run_dir.write_text(layout.SAMPLES_SPEEDSCOPE, json.dumps(below.speedscope))
    if below.native_shares is not None:
        run_dir.write_csv(layout.NATIVE_TIME, below.native_shares.rows, below.native_shares.columns)
    if below.counter_table is not None:
        run_dir.write_csv(layout.CPU_COUNTERS, below.counter_table.rows, below.counter_table.columns)
    if below.verbose_text is not None:
        run_dir.write_text(layout.ONEDNN_VERBOSE, below.verbose_text)
    if below.joins_trace:
        base = json.loads(record.profile.trace_json) if record.profile is not None else None
        trace = run_trace.below_trace(base, below.unix_minus_perf_ns, record.steps_origin_ns,
                                      run_trace.step_events(record.steps), below.sample_events,
                                      run_trace.counter_events(below.counter_batches), below.sample_threads)
        run_dir.write_text(layout.TRACE, json.dumps(trace))


def below_summary(record: RunRecord) -> dict[str, Any]:
    """summary.json keys: native_time, cpu_counters, kernels, itt (each where its part ran)."""
    below = record.below
    if below is None:
        return {}
    document: dict[str, Any] = {}
    if below.native_time is not None:
        document["native_time"] = dict(below.native_time, files=[layout.SAMPLES_SPEEDSCOPE, layout.NATIVE_TIME]
                                       if below.native_shares is not None else [])
    if below.cpu_counters is not None:
        document["cpu_counters"] = dict(below.cpu_counters, file=layout.CPU_COUNTERS)
    if below.kernels is not None:
        document["kernels"] = dict(below.kernels, **({"file": layout.ONEDNN_VERBOSE} if below.verbose_text else {}))
    if below.itt is not None:
        document["itt"] = below.itt
    if below.joins_trace:
        document["trace"] = layout.TRACE
    return document


def _fmt(value: Optional[float], spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def counters_line(counters: CpuCountersSection) -> str:
    if not measured(counters):
        return f"  CPU counters: unavailable ({counters.get('reason')})"
    passes = counters["passes"]
    total = {key: sum(p[key] or 0 for p in passes) for key in
             ("wall_ms", "cpu_ms", "voluntary_switches", "involuntary_switches", "cpu_migrations", "minor_faults",
              "major_faults")}
    line = (f"  CPU counters over {len(passes)} timed pass(es): CPU {total['cpu_ms'] / max(total['wall_ms'], 1e-9):.2f}x "
            f"wall; context switches {total['voluntary_switches']:.0f} voluntary / {total['involuntary_switches']:.0f} "
            f"involuntary; {total['cpu_migrations']:.0f} migrations; faults {total['minor_faults']:.0f} minor / "
            f"{total['major_faults']:.0f} major")
    if "hardware" in counters:
        line += f"; cycles, instructions, LLC misses {counters['hardware']}"
    else:
        ipc = [p["ipc"] for p in passes if p.get("ipc") is not None]
        line += f"; IPC {_fmt(ipc[0] if ipc else None, '.2f')}"
    return line


def below_console_lines(summary: Mapping[str, Any]) -> list[str]:
    lines = []
    native: Optional[NativeTimeSection] = summary.get("native_time")
    if native:
        if measured(native):
            lines.append(f"  where each step's time went (py-spy, {native['samples']} samples at "
                         f"{native['rate_hz']} Hz; {layout.NATIVE_TIME}):")
            lines.extend(f"    {line}" for line in native["lines"])
        else:
            lines.append(f"  native time: {native['status']} ({native.get('reason')})")
    counters: Optional[CpuCountersSection] = summary.get("cpu_counters")
    if counters:
        lines.append(counters_line(counters))
        faults = page_fault_line(counters.get("page_faults") or {})
        if faults:
            lines.append(f"  {faults}")
    kernels: Optional[KernelsSection] = summary.get("kernels")
    if kernels:
        if kernels.get("convolution_kernels"):
            shown = ", ".join(f"{name} x{count}" for name, count in kernels["convolution_kernels"].items())
            lines.append(f"  convolution kernels (oneDNN verbose, one extra batch): {shown}")
        elif not measured(kernels):
            lines.append(f"  kernels: {kernels.get('status')} ({kernels.get('reason') or kernels.get('source')})")
        if kernels.get("int8"):
            lines.append(f"  {int8_line(kernels['int8'])}")
    itt = summary.get("itt")
    if itt:
        lines.append(f"  ITT tasks: {itt['tasks']} emitted via {itt['api']}"
                     + ("" if itt["available"] else f" (not available: {itt['reason']})"))
    return lines
