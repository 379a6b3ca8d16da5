"""A sweep point's row: the figures of its finished run directory, read back from its files, and a point's
rounds (`--rounds N`) combined into one row."""
from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Optional

import numpy as np

from pipelines.registry import facts_for
from pipelines.runtimes.registry import is_reference
from utils.config.schema import SINGLE_STREAM
from utils.storage.finished_run import FinishedRun
from utils.record.statistics import pass_spread
from utils.record.steps import PIPELINE_STEP
from utils.checks.verdict import doubt
from utils.commands.sweep.answer import REFERENCE, SCENARIO_RANKING, PointFigures
from utils.commands.sweep.plan import Point
from utils.record.sections import MEASURED


def agreement_of(run: FinishedRun) -> str:
    """The run's verdict; the family's reference is itself (torch fp32 eager, or for a file the runtime that reads
    it as exported, at fp32: no check runs there); anything else unchecked says so."""
    verdict = run.get("agreement.verdict")
    if verdict:
        return verdict
    model = run.summary.get("model")
    backend = facts_for(model).reference_backend(model) if model else None
    return REFERENCE if is_reference(run.summary.get("runtime") or {}, backend) else "unchecked"


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
    figures = PointFigures(point.name, point.values, p50, row["images_per_s"], row["agreement"], tuple(samples),
                           map_50_95=row["map_50_95"], map_drop=row["map_drop"], scenario=row["scenario"],
                           scenario_valid=row["scenario_valid"], samples_per_s=row["scenario_samples_per_s"],
                           p99_ms=row["scenario_p99_ms"], doubt=row["doubt"], pass_p50s=pass_p50s)
    return row, figures


# How the console shows each ranking figure of SCENARIO_RANKING (a PointFigures field).
_FIGURE_TEXT = {"samples_per_s": "{:.2f} samples/s", "p99_ms": "p99 {:.1f} ms"}


def point_line(figures: PointFigures) -> str:
    """A completed point on the sweep's console. A LoadGen point leads with the figure its scenario is ranked by:
    with several streams its images/s is one stream's rate."""
    shown = f"{figures.images_per_s:.2f} images/s"
    if figures.scenario in SCENARIO_RANKING:
        field_name = SCENARIO_RANKING[figures.scenario][1]
        value = getattr(figures, field_name)
        shown = f"{figures.scenario} {'n/a' if value is None else _FIGURE_TEXT[field_name].format(value)} (LoadGen)"
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
    medians = {key: _median([row[key] for row in rows])
               for key in ("images_per_s", "forward_p50_ms_per_image", "scenario_samples_per_s", "scenario_p99_ms")}
    valid = [row["scenario_valid"] for row in rows]
    row = dict(rows[0], **medians, p50_ms_per_image=statistics.median(p50s),
               p90_ms_per_image=float(np.percentile(samples, 90)), pass_p50_spread=pass_spread(passes),
               scenario_valid=None if None in valid else all(valid), rounds=len(figures))
    combined = replace(figures[0], p50_ms_per_image=row["p50_ms_per_image"], images_per_s=row["images_per_s"],
                       samples=samples, pass_p50s=passes, round_p50s=p50s, scenario_valid=row["scenario_valid"],
                       samples_per_s=row["scenario_samples_per_s"], p99_ms=row["scenario_p99_ms"])
    return row, combined
