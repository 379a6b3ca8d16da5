"""The accuracy of two runs side by side: the accuracy pass's figures and each class's AP, B against A."""
from __future__ import annotations

from typing import Optional

import pandas as pd

from utils.storage.finished_run import FinishedRun
from utils.storage import layout

FIGURES = ("map_50_95", "map_50", "map_75", "ar_100", "at_conf_thres.precision", "at_conf_thres.recall",
           "drop.map_50_95")


def _difference(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return b - a if a is not None and b is not None else None


def _classes(run: FinishedRun) -> dict[str, float]:
    path = run.path / layout.ACCURACY
    if not path.is_file():
        return {}
    table = pd.read_csv(path)
    return {f"AP@0.5:0.95 class {row.class_id} ({row.class_name})": float(row.ap_50_95)
            for row in table.itertuples()}


def accuracy_rows(a: FinishedRun, b: FinishedRun) -> list[dict]:
    """Rows of compare.csv's `accuracy` section; none when neither run had an accuracy pass. Differences only:
    mAP is one figure per run, with no per-batch samples to build an interval from."""
    if a.get("accuracy") is None and b.get("accuracy") is None:
        return []
    rows = []
    note = "" if a.get("accuracy.ground_truth.source") == b.get("accuracy.ground_truth.source") else \
        "scored against different ground truth"
    for figure in FIGURES:
        first, second = a.get(f"accuracy.{figure}"), b.get(f"accuracy.{figure}")
        if first is None and second is None:
            continue
        rows.append({"section": "accuracy", "name": figure, "a": first, "b": second,
                     "difference": _difference(first, second), "note": note})
    classes_a, classes_b = _classes(a), _classes(b)
    for name in sorted(classes_a.keys() | classes_b.keys()):
        first, second = classes_a.get(name), classes_b.get(name)
        rows.append({"section": "accuracy", "name": name, "a": first, "b": second,
                     "difference": _difference(first, second), "note": note})
    return rows
