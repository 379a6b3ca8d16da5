"""A sweep point's row: the figures of its finished run directory, read back from its files, and a point's
rounds (`--rounds N`) combined into one row."""
from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Optional

import numpy as np

from pipelines.registry import facts_for
from pipelines.runtimes.registry import is_reference
from utils.config.schema import CAMERAS, SINGLE_STREAM
from utils.core.errors import UsageError
from utils.storage.finished_run import FinishedRun
from utils.record.statistics import pass_spread
from utils.record.steps import PIPELINE_STEP
from utils.checks.verdict import doubt
from utils.commands.sweep.answer import REFERENCE, SCENARIO_RANKING, PointFigures
from utils.commands.sweep.plan import Point
from utils.record.sections import MEASURED
from utils.scenarios.cameras import report as cameras_report

# A camera run's figures in sweep.csv (utils/scenarios/cameras/report.py names them).
CAMERA_FIGURES = ("cameras_fps_detected", "cameras_latency_p99_ms", "cameras_drop_share", "cameras_cpu_ms_per_frame",
                  "cameras_decode_cpu_ms_per_frame", "cameras_preprocess_cpu_ms_per_frame",
                  "cameras_forward_cpu_ms_per_frame", "cameras_postprocess_cpu_ms_per_frame")


def agreement_of(run: FinishedRun) -> str:
    """The run's verdict; the family's reference (torch fp32 eager, a file as exported at fp32 on the first runtime
    that reads it) is the reference itself; anything else unchecked says so."""
    verdict = run.get("agreement.verdict")
    if verdict:
        return verdict
    return REFERENCE if is_reference(run.summary.get("runtime") or {}, _reference_backend(run)) else "unchecked"


def _reference_backend(run: FinishedRun) -> Optional[str]:
    model = run.summary.get("model")
    try:
        return facts_for(model).reference_backend(model) if isinstance(model, str) else None
    except UsageError:  # a model this checkout no longer knows: the registry's reference
        return None


def _package_joules_per_image(run: FinishedRun):
    if run.get("energy.status") != MEASURED:
        return None
    per_domain = run.get("energy.joules_per_image") or {}
    packages = [joules for label, joules in per_domain.items() if label.startswith("package")]
    return sum(packages) if packages else None


def read_point(point: Point, run: FinishedRun) -> tuple[dict, PointFigures]:
    """The row of sweep.csv (figures only; the driver adds the point's status) and the answer's input."""
    timed = run.timed_steps()  # steps_timer.csv, read once for the samples and their passes
    pipeline = timed[timed["step"] == PIPELINE_STEP]
    samples = pipeline["ms_per_image"].tolist()
    if not samples:
        raise ValueError(f"{run.path} holds no timed batch")
    p50, p90 = (float(value) for value in np.percentile(samples, [50, 90]))
    pass_p50s = tuple(float(value) for value in pipeline.groupby("pass_index")["ms_per_image"].median())
    row = {
        "images_per_s": run.get("pipeline_latency.images_per_s"),
        "p50_ms_per_image": p50,
        "p90_ms_per_image": p90,
        "pass_p50_spread": pass_spread(pass_p50s),
        "forward_p50_ms_per_image": run.get("forward.p50_ms_per_image"),
        "peak_pss_mib": run.get("memory.peak_pss_mib"),
        "peak_self_rss_mib": run.get("memory.peak_self_rss_mib"),
        "package_j_per_image": _package_joules_per_image(run),
        "agreement": agreement_of(run),
        "random_weights": run.get("random_weights"),
        "map_50_95": run.get("accuracy.map_50_95"),
        "map_50": run.get("accuracy.map_50"),
        "map_drop": run.get("accuracy.drop.map_50_95"),
        "scenario": run.get("scenario.name", SINGLE_STREAM),
        "scenario_valid": run.get("scenario.result.valid"),
        "scenario_samples_per_s": run.get("scenario.result.samples_per_s"),
        "scenario_p99_ms": run.get("scenario.result.latency_ms.p99"),
        "doubt": doubt(run.summary.get("agreement")),
    }
    cameras = cameras_report.figures(run.summary.get("cameras"))
    row.update({name: cameras.get(name) for name in CAMERA_FIGURES})
    camera_run = row["scenario"] == CAMERAS
    figures = PointFigures(point.name, point.values, p50, row["images_per_s"], row["agreement"], tuple(samples),
                           map_50_95=row["map_50_95"], map_drop=row["map_drop"], scenario=row["scenario"],
                           scenario_valid=row["scenario_valid"], samples_per_s=row["scenario_samples_per_s"],
                           p99_ms=row["cameras_latency_p99_ms"] if camera_run else row["scenario_p99_ms"],
                           doubt=row["doubt"], pass_p50s=pass_p50s, frames_per_s=row["cameras_fps_detected"],
                           drop_share=row["cameras_drop_share"])
    return row, figures


# How the console shows each ranking figure of SCENARIO_RANKING (a PointFigures field).
_FIGURE_TEXT = {"samples_per_s": "{:.2f} samples/s", "p99_ms": "p99 {:.1f} ms", "frames_per_s": "{:.2f} frames/s"}


def _shown(value: Optional[float], text: str) -> str:
    return "n/a" if value is None else text.format(value)


def point_line(figures: PointFigures) -> str:
    """A completed point on the sweep's console. A LoadGen point leads with the figure its scenario is ranked by:
    with several streams its images/s is one stream's rate; a camera point with what its cameras were served."""
    shown = f"{figures.images_per_s:.2f} images/s"
    if figures.scenario == CAMERAS:
        shown = (f"cameras {_shown(figures.frames_per_s, _FIGURE_TEXT['frames_per_s'])} detected, latency "
                 f"{_shown(figures.p99_ms, _FIGURE_TEXT['p99_ms'])}, dropped {_shown(figures.drop_share, '{:.1%}')}")
    elif figures.scenario in SCENARIO_RANKING:
        field_name = SCENARIO_RANKING[figures.scenario][1]
        shown = f"{figures.scenario} {_shown(getattr(figures, field_name), _FIGURE_TEXT[field_name])} (LoadGen)"
    return f"{figures.p50_ms_per_image:.1f} ms/image p50, {shown}, detections {figures.agreement}"


def _median(values: list[Optional[float]]) -> Optional[float]:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


def combine_rounds(rows: list[dict], figures: list[PointFigures]) -> tuple[dict, PointFigures]:
    """One point's completed rounds as one row: timings are the median over rounds of each round's figure
    (p90 over all batches), the batches pooled for the margin's bootstrap; what does not depend on the
    machine's speed (agreement, mAP, memory) is the first round's. One round is itself."""
    if len(figures) == 1:
        return dict(rows[0], rounds=1), figures[0]
    samples = tuple(value for figure in figures for value in figure.samples)
    passes = tuple(value for figure in figures for value in figure.pass_p50s)
    p50s = tuple(figure.p50_ms_per_image for figure in figures)
    medians = {key: _median([row.get(key) for row in rows])
               for key in ("images_per_s", "forward_p50_ms_per_image", "scenario_samples_per_s", "scenario_p99_ms",
                           *CAMERA_FIGURES)}
    valid = [row["scenario_valid"] for row in rows]
    row = dict(rows[0], **medians, p50_ms_per_image=statistics.median(p50s),
               p90_ms_per_image=float(np.percentile(samples, 90)), pass_p50_spread=pass_spread(passes),
               scenario_valid=None if None in valid else all(valid), rounds=len(figures))
    p99_key = "cameras_latency_p99_ms" if figures[0].scenario == CAMERAS else "scenario_p99_ms"
    combined = replace(figures[0], p50_ms_per_image=row["p50_ms_per_image"], images_per_s=row["images_per_s"],
                       samples=samples, pass_p50s=passes, round_p50s=p50s, scenario_valid=row["scenario_valid"],
                       samples_per_s=row["scenario_samples_per_s"], p99_ms=row[p99_key],
                       frames_per_s=row["cameras_fps_detected"], drop_share=row["cameras_drop_share"])
    return row, combined
