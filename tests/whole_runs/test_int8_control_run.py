"""Accuracy-aware int8 in whole runs of the shapes config: a deliberately broken int8 (every layer quantized,
its decode too) is repaired or called out with the operations to blame, never passed as within the budget on
its own; the run says what was done in summary.json, on the console and in report.html; and a second run takes
the choice from the cache."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.helpers import quick_args, run_benchmark
from utils.checks.int8.repair_statement import warnings as int8_warnings

pytestmark = pytest.mark.slow  # whole int8 runs of the shapes config, with the search

BROKEN = quick_args(160, "dataset.limit=16", "runtime.calibration.images=8", "runtime.calibration.keep_float=[]",
                    "runtime.backend=onnxruntime", "runtime.precision=int8", "benchmark.layer_timing=false",
                    "benchmark.warmup=1", "benchmark.repeats=1", "outputs.save_images=false", "outputs.plots=false",
                    "runtime.calibration.control_evaluations=8", config="shapes.yaml")


def test_a_broken_int8_is_repaired_or_called_out_and_the_choice_is_cached(tmp_path, capsys):
    cache = f"runtime.cache_dir={tmp_path / 'cache'}"
    code, run_dir = run_benchmark(BROKEN, tmp_path, cache, run_id="first")
    assert code == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    entry = summary["runtime"]["preparation"]["accuracy_control"]
    assert entry["judged_on"].startswith("8 calibration images")
    assert entry["figure"] == "mAP@0.5:0.95 drop against the labels"
    # the decode's Concat of pixel boxes and 0-1 scores quantized costs more than the budget
    assert entry["drop_before"] > entry["target"] and entry["steps"]
    verdict = summary["agreement"]["verdict"]
    if verdict == "within_budget":
        assert entry["reverted"] and entry["drop_after"] <= entry["target"]
    else:
        # Called out: how much plain int8 loses depends on the CPU's int8 instructions (a collapse on AVX-512
        # VNNI, a slip on AVX2), so the warnings are those the entry calls for, beside the verdict's own.
        assert any(warning.startswith(f"detections are {verdict.upper()}") for warning in summary["warnings"])
        assert set(int8_warnings(entry)) <= set(summary["warnings"])
    assert entry["outcome"] in ("within_budget", "not_faster", "nothing_left")
    if entry["reverted"]:
        assert entry["drop_after"] < entry["drop_before"]
        assert Path(entry["deployed_file"]).is_file() and ".repaired-" in entry["deployed_file"]
    printed = capsys.readouterr().out
    assert "int8 accuracy control (mAP@0.5:0.95 drop against the labels" in printed
    assert "int8 accuracy control" in (run_dir / "report.html").read_text()

    code, again = run_benchmark(BROKEN, tmp_path, cache, run_id="second")
    cached = json.loads((again / "summary.json").read_text())["runtime"]["preparation"]["accuracy_control"]
    assert code == 0 and cached["cache_hit"] is True
    assert cached["reverted"] == entry["reverted"] and cached["deployed_file"] == entry["deployed_file"]
