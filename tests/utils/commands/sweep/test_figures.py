"""A point's figures over its rounds (utils/commands/sweep/figures.py), combined into one row by hand; and the
verdict a run without a check of its own may claim."""
import json

import pytest

from utils.commands.sweep.answer import PointFigures
from utils.commands.sweep.figures import agreement_of, combine_rounds
from utils.storage.finished_run import FinishedRun


def _row(p50, images_per_s):
    return {"images_per_s": images_per_s, "p50_ms_per_image": p50, "p90_ms_per_image": p50, "pass_p50_spread": 1.0,
            "forward_p50_ms_per_image": p50 - 1, "agreement": "reference", "scenario_samples_per_s": None,
            "scenario_p99_ms": None, "scenario_valid": None, "peak_pss_mib": 100.0}


def test_rounds_combine_into_one_row_by_hand():
    first = PointFigures("p", {}, 10.0, 100.0, "reference", (9.0, 10.0, 11.0), pass_p50s=(10.0, 10.5))
    second = PointFigures("p", {}, 14.0, 70.0, "reference", (13.0, 14.0, 15.0), pass_p50s=(14.0, 13.0))
    third = PointFigures("p", {}, 12.0, 80.0, "reference", (12.0, 12.0, 12.0), pass_p50s=(12.0, 12.0))
    row, combined = combine_rounds([_row(10.0, 100.0), _row(14.0, 70.0), _row(12.0, 80.0)],
                                   [first, second, third])
    assert row["rounds"] == 3 and row["p50_ms_per_image"] == 12.0 and row["images_per_s"] == 80.0
    assert row["forward_p50_ms_per_image"] == 11.0 and row["peak_pss_mib"] == 100.0
    assert row["pass_p50_spread"] == pytest.approx(14.0 / 10.0)
    assert combined.round_p50s == (10.0, 14.0, 12.0) and len(combined.samples) == 9
    assert row["p90_ms_per_image"] == pytest.approx(14.2)  # numpy's linear percentile of the 9 pooled batches
    assert combine_rounds([_row(10.0, 100.0)], [first]) == (dict(_row(10.0, 100.0), rounds=1), first)


@pytest.mark.parametrize("model, backend, expected", [
    ("yolov7-tiny", "torch", "reference"),
    ("yolov7-tiny", "onnxruntime", "unchecked"),
    # A file's reference is the file on the runtime whose own format it is, at fp32: no check runs there.
    ("x.onnx", "onnxruntime", "reference"),
    ("x.onnx", "openvino", "unchecked"),
    ("x.tflite", "litert", "reference"),
    ("x.tflite", "openvino", "unchecked"),
])
def test_a_run_on_its_familys_reference_is_the_reference(tmp_path, model, backend, expected):
    (tmp_path / "summary.json").write_text(json.dumps(
        {"model": model, "runtime": {"backend": backend, "precision": "fp32"}, "agreement": None}))
    assert agreement_of(FinishedRun(tmp_path)) == expected
