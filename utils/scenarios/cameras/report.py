"""How a camera run reads: its console lines, its headline, its section of report.html and the figures runs are
compared by (TensorBoard, MLflow, compare), each from summary.json `cameras` alone, so a finished run reads the
same way again."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional

from utils.record.sections import CamerasSection, measured
from utils.storage import layout
from utils.storage.html_page import HtmlPage

ANCHOR, TITLE = "cameras", "Cameras"
STREAM_TABLE = (("stream", "camera"), ("source", "source"), ("delivered", "delivered"), ("detected", "detected"),
                ("dropped", "dropped"), ("drop_share", "dropped share"), ("fps_detected", "fps detected"),
                ("latency_p50_ms", "latency p50 ms"), ("latency_p90_ms", "p90 ms"), ("latency_p99_ms", "p99 ms"),
                ("decode_cpu_ms_per_frame", "decode CPU ms/frame"),
                ("preprocess_cpu_ms_per_frame", "preprocess CPU ms/frame"),
                ("forward_cpu_ms_per_frame", "forward CPU ms/frame"),
                ("postprocess_cpu_ms_per_frame", "postprocess CPU ms/frame"), ("gaps", "gaps"), ("ended", "ended"))


def _fmt(value: Optional[float], spec: str = ".1f") -> str:
    return "n/a" if value is None else format(value, spec)


def _share(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _cpu(per_frame: Mapping[str, Any]) -> str:
    return ", ".join(f"{part} {_fmt(per_frame.get(key))}" for part, key in
                     (("decode", "decode_cpu_ms_per_frame"), ("preprocess", "preprocess_cpu_ms_per_frame"),
                      ("forward", "forward_cpu_ms_per_frame"), ("postprocess", "postprocess_cpu_ms_per_frame")))


def headline(section: CamerasSection) -> str:
    """The run's figure: what the detector kept up with, how late, and what it let go."""
    if not measured(section):
        return f"cameras: not measured ({section.get('reason')})"
    total, settings = section["total"], section["settings"]
    return (f"{settings['cameras']} camera(s): {_fmt(total['fps_detected'], '.2f')} frames/s detected, latency "
            f"p99 {_fmt(total['latency_ms']['p99'])} ms, {_share(total['drop_share'])} dropped")


def console_lines(section: CamerasSection) -> list[str]:
    settings = section.get("settings") or {}
    lines = [f"  cameras: {settings.get('cameras')} camera(s), {settings.get('detector')} detector, when busy "
             f"{settings.get('when_busy')}; window {_fmt(section.get('window_s'), '.2f')} s after a warm-up of "
             f"{_fmt(settings.get('warmup_s'), 'g')} s ({layout.CAMERAS}, {layout.CAMERA_FRAMES})"]
    if not measured(section):
        return lines + [f"    not measured: {section.get('reason')}"]
    for row in section["streams"]:
        lines.append(f"    {row['stream']}: {row['arrived']} arrived, {row['decoded']} decoded, {row['detected']} "
                     f"detected, {row['dropped']} dropped ({_share(row['drop_share'])}); "
                     f"{_fmt(row['fps_detected'], '.2f')} fps; latency p50 {_fmt(row['latency_p50_ms'])} p90 "
                     f"{_fmt(row['latency_p90_ms'])} p99 {_fmt(row['latency_p99_ms'])} ms; CPU ms/frame "
                     + _cpu(row) + (f"; {row['gaps']} gap(s), {_fmt(row['gap_s'], '.2f')} s" if row["gaps"] else ""))
    total = section["total"]
    lines.append(f"    all: {total['detected']} of {total['delivered']} frames detected "
                 f"({_fmt(total['fps_detected'], '.2f')} frames/s), CPU ms/frame "
                 + _cpu({f"{part}_cpu_ms_per_frame": value for part, value in total["cpu_ms_per_frame"].items()}))
    return lines


def figures(section: Optional[CamerasSection]) -> dict[str, Any]:
    """The numbers runs are compared by; absent where not measured."""
    if not section or not measured(section):
        return {}
    total = section["total"]
    per_frame = total["cpu_ms_per_frame"]
    return {"cameras_fps_detected": total["fps_detected"], "cameras_drop_share": total["drop_share"],
            **{f"cameras_latency_{key}_ms": total["latency_ms"][key] for key in ("p50", "p90", "p99")},
            **{f"cameras_{part}_cpu_ms_per_frame": per_frame[part]
               for part in ("decode", "preprocess", "forward", "postprocess")},
            "cameras_cpu_ms_per_frame": per_frame["cpu"]}


def headline_cells(section: CamerasSection) -> list[tuple[str, Any]]:
    if not measured(section):
        return [("cameras", "not measured")]
    total = section["total"]
    return [("cameras: frames/s detected", total["fps_detected"]),
            ("cameras: latency p99 ms", total["latency_ms"]["p99"]),
            ("cameras: dropped share", total["drop_share"]),
            ("cameras: CPU ms per frame", total["cpu_ms_per_frame"]["cpu"])]


def page_section(page: HtmlPage, section: CamerasSection, plots: Mapping[str, Path]) -> None:
    page.heading(TITLE, ANCHOR)
    if not measured(section):
        page.paragraph(f"Not measured: {section.get('reason') or section.get('status')}.")
        return
    page.headline(headline_cells(section))
    page.paragraph(section["definition"])
    page.table([header for _, header in STREAM_TABLE],
               [[row.get(key) for key, _ in STREAM_TABLE] for row in section["streams"]],
               text_columns=("camera", "source", "ended"))
    page.paragraph(section["cpu_definition"])
    if section.get("gaps"):
        page.paragraph("Gaps (seconds on the run's clock, as steps_timer.csv):")
        page.table(("camera", "start_s", "end_s", "reason", "resumed", "attempts"),
                   [[gap["stream"], gap["start_s"], gap["end_s"], gap["reason"], gap["resumed"], gap["attempts"]]
                    for gap in section["gaps"]], text_columns=("camera", "reason", "resumed"))
    if layout.CAMERAS_PLOT in plots:
        page.image(plots[layout.CAMERAS_PLOT], "latency and dropped frames per camera against time")
    page.paragraph(f"Per camera: {layout.CAMERAS}; every frame handed on: {layout.CAMERA_FRAMES}; one track per "
                   f"camera in {layout.TRACE}.")
