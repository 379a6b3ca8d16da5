"""What a run is compared by in TensorBoard and MLflow: its config flattened to dotted keys and the headline
figures of its summary, as plain dicts of scalars. Pure functions of summary.json and config.yaml
contents, so a finished run directory gives the same figures as the run that wrote it.
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Union

from utils.measure.contract import section_in
from utils.measure.registry import measurements
from utils.scenarios.cameras import report as cameras_report


Scalar = Union[str, int, float, bool, None]


def flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Scalar]:
    """{"a": {"b": 1}, "c": [1, 2]} -> {"a.b": 1, "c": "[1, 2]"}: nested keys dotted, lists as JSON text."""
    flat: dict[str, Scalar] = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, (list, tuple)):
            flat[name] = json.dumps(list(value))
        else:
            flat[name] = value
    return flat


def weights_kind(summary: Mapping[str, Any]) -> str:
    return "random" if summary.get("random_weights") else "checkpoint"


def headline_figures(summary: Mapping[str, Any]) -> dict[str, float]:
    """The numbers a reader compares runs by; a figure the run did not measure is absent, never zero."""
    latency, forward = summary.get("pipeline_latency") or {}, summary.get("forward") or {}
    layers, agreement = summary.get("layer_timing") or {}, summary.get("agreement") or {}
    accuracy = summary.get("accuracy") or {}
    figures = {
        "images_per_s": latency.get("images_per_s"),
        "ms_per_image": latency.get("ms_per_image"),
        "p50_ms_per_image": latency.get("p50_ms_per_image"),
        "p90_ms_per_image": latency.get("p90_ms_per_image"),
        "forward_p50_ms_per_image": forward.get("p50_ms_per_image"),
        "forward_p50_ms_per_batch": forward.get("p50_ms_per_batch"),
        "gflops_per_image": layers.get("gflops_per_image"),
        "hook_overhead_ratio": layers.get("hook_overhead_ratio"),
        "images_timed": summary.get("images_timed"),
        "wall_s": summary.get("wall_s"),
    }
    for measurement in measurements():
        figures.update(measurement.figures(section_in(summary, measurement)))
    if agreement:
        strict = agreement.get("strict") or {}
        figures["agreement_strict_recall"] = strict.get("recall")
        figures["agreement_strict_precision"] = strict.get("precision")
        figures["agreement_raw_max_abs"] = (agreement.get("raw_output") or {}).get("max_abs")
    if accuracy:
        shown = accuracy.get("at_conf_thres") or {}
        figures.update({"map_50_95": accuracy.get("map_50_95"), "map_50": accuracy.get("map_50"),
                        "map_75": accuracy.get("map_75"), "ar_100": accuracy.get("ar_100"),
                        "precision_at_conf_thres": shown.get("precision"), "recall_at_conf_thres": shown.get("recall"),
                        "map_drop": (accuracy.get("drop") or {}).get("map_50_95"),
                        "reference_map_50_95": (accuracy.get("reference") or {}).get("map_50_95")})
    figures.update(scenario_figures(summary))
    return {name: float(value) for name, value in figures.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool)}


def scenario_figures(summary: Mapping[str, Any]) -> dict[str, float]:
    """A scenario's figures (none for single_stream): a LoadGen scenario's valid as 1 or 0, samples/s, LoadGen's
    latency percentiles and its early-stopping estimates, in ms; a camera run's frames/s detected, latency from
    arrival, the share dropped and the CPU ms per frame."""
    scenario = summary.get("scenario") or {}
    result = scenario.get("result") or {}
    cameras = cameras_report.figures(summary.get("cameras"))
    if cameras:
        return {name: float(value) for name, value in cameras.items()
                if isinstance(value, (int, float)) and not isinstance(value, bool)}
    if not result:
        return {}
    latency = result.get("latency_ms") or {}
    figures: dict[str, Any] = {
        "scenario_valid": None if result.get("valid") is None else float(bool(result["valid"])),
        "scenario_samples_per_s": result.get("samples_per_s"),
        **{f"scenario_latency_{name}_ms": latency.get(name) for name in ("p50", "p90", "p99")},
        **{f"scenario_early_stopping_{name}_ms": value
           for name, value in ((result.get("early_stopping") or {}).get("estimates_ms") or {}).items()},
    }
    return {name: float(value) for name, value in figures.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool)}
