"""Per-step and per-layer comparisons of two runs, B against A: median ratios with bootstrap intervals where
per-batch samples exist, and the layers' self time joined on call path. Per image throughout, so runs at
different batch sizes stay comparable."""
from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd

from utils.config.schema import SINGLE_STREAM
from utils.storage.finished_run import FinishedRun
from utils.record.bootstrap import MIN_SAMPLES, median_ratio_interval
from utils.storage import layout
from utils.reporting.run_figures import scenario_figures

COLUMNS = ("section", "name", "a", "b", "difference", "ratio", "ci_low", "ci_high", "significant", "n_a", "n_b",
           "note")
NO_LAYER_SAMPLES = ("no interval: the layer files hold totals of one instrumented pass, not per-batch samples")


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return b / a if a and b is not None else None


def compare_samples(section: str, name: str, a: list[float], b: list[float], confidence: float = 0.95) -> dict:
    """One row: medians of A and B, B/A with its interval and whether the interval excludes 1."""
    median_a = float(np.median(a)) if a else None
    median_b = float(np.median(b)) if b else None
    interval = median_ratio_interval(a, b, confidence)
    row = {"section": section, "name": name, "a": median_a, "b": median_b,
           "difference": median_b - median_a if a and b else None, "ratio": _ratio(median_a, median_b),
           "ci_low": None, "ci_high": None, "significant": None, "n_a": len(a), "n_b": len(b), "note": ""}
    if interval is None:
        row["note"] = (f"no interval: fewer than {MIN_SAMPLES} timed batches on a side" if a and b
                       else "only in " + ("A" if a else "B"))
    else:
        row.update(ratio=interval.ratio, ci_low=interval.low, ci_high=interval.high,
                   significant=interval.significant)
    return row


def step_rows(a: FinishedRun, b: FinishedRun) -> list[dict]:
    """Every step of the timed passes, in A's order then B's own, from steps_timer.csv's per-batch samples."""
    steps_a, steps_b = a.timed_steps(), b.timed_steps()
    names = list(dict.fromkeys([*steps_a["step"], *steps_b["step"]]))
    return [compare_samples("step", name, steps_a.loc[steps_a["step"] == name, "ms_per_image"].tolist(),
                            steps_b.loc[steps_b["step"] == name, "ms_per_image"].tolist()) for name in names]


def _per_image(run: FinishedRun, table: pd.DataFrame) -> pd.Series:
    images = run.get("layer_timing.images") or 0
    return table["self_ms"] / images if images else pd.Series(np.nan, index=table.index)


def _joined_rows(section: str, a: FinishedRun, b: FinishedRun, name: str, key: str) -> list[dict]:
    table_a, table_b = a.table(name), b.table(name)
    if table_a is None or table_b is None:
        missing = " and ".join(run.name for run, table in ((a, table_a), (b, table_b)) if table is None)
        return [{"section": section, "name": "", "note": f"no {name} in {missing} (layer timing off or skipped)"}]
    left = pd.DataFrame({key: table_a[key], "a": _per_image(a, table_a)})
    right = pd.DataFrame({key: table_b[key], "b": _per_image(b, table_b)})
    joined = left.merge(right, on=key, how="outer")
    joined = joined[(joined["a"].fillna(0) > 0) | (joined["b"].fillna(0) > 0)]
    joined["difference"] = joined["b"] - joined["a"]
    joined = joined.reindex(joined["difference"].abs().sort_values(ascending=False, na_position="last").index)
    rows = []
    for record in joined.to_dict("records"):
        value_a, value_b = (None if pd.isna(record[side]) else float(record[side]) for side in ("a", "b"))
        rows.append({"section": section, "name": record[key], "a": value_a, "b": value_b,
                     "difference": value_b - value_a if value_a is not None and value_b is not None else None,
                     "ratio": _ratio(value_a, value_b), "significant": None,
                     "note": NO_LAYER_SAMPLES if value_a is not None and value_b is not None
                     else "only in " + ("A" if value_a is not None else "B")})
    return rows


def layer_type_rows(a: FinishedRun, b: FinishedRun) -> list[dict]:
    """Self time per layer type and image, largest change first."""
    return _joined_rows("layer_type", a, b, layout.LAYER_TYPES, "type")


def layer_rows(a: FinishedRun, b: FinishedRun) -> list[dict]:
    """Self time per call path and image, joined on the path, largest change first."""
    return _joined_rows("layer", a, b, layout.LAYER_TIMER, "path")


CAMERA_PREFIX = "cameras_"


def scenario_title(rows: list[dict]) -> tuple[str, str]:
    """The section's title and what its figures are: a camera run's, or a LoadGen scenario's."""
    if any(str(row["name"]).startswith(CAMERA_PREFIX) for row in rows):
        return ("Camera figures", "the camera window's figures from summary.json cameras.total (frames/s detected, "
                "latency from arrival, the share dropped, CPU ms per frame), one value a side; the gate gives p99 and "
                "fps an interval (--fail-above PCT --metric p99 or fps)")
    return "LoadGen scenario figures", "LoadGen's figures from summary.json, one value a side (no interval); " \
                                       "scenario_valid is 1 for a VALID result"


def scenario_rows(a: FinishedRun, b: FinishedRun) -> list[dict]:
    """A LoadGen scenario's or a camera run's figures of both runs, from summary.json (one value a side: no
    interval)."""
    figures_a, figures_b = scenario_figures(a.summary), scenario_figures(b.summary)
    names = list(dict.fromkeys([*figures_a, *figures_b]))
    note = f"scenario {a.get('scenario.name', SINGLE_STREAM)} vs {b.get('scenario.name', SINGLE_STREAM)}"
    return [{"section": "scenario", "name": name, "a": figures_a.get(name), "b": figures_b.get(name),
             "difference": (figures_b[name] - figures_a[name]) if name in figures_a and name in figures_b else None,
             "ratio": _ratio(figures_a.get(name), figures_b.get(name)), "note": note} for name in names]
