"""Whole runs on each runtime: rect letterbox and a short last batch through the exported model, per-layer
rows from the runtime's own profiler, the agreement verdict, and what the runtime really used."""
import json

import pandas as pd
import pytest

from benchmark import main
from tests.support.helpers import quick_args

pytestmark = pytest.mark.slow  # whole runs on each runtime

# Three photos in batches of two on one thread, no report: a short last batch is all the checks below need.
QUICK = quick_args(160, "preprocess.rect=true", "dataset.limit=3", "dataset.batch_size=2", "benchmark.repeats=1",
                   "runtime.threads=1", "outputs.plots=false", "outputs.save_images=false", "outputs.report=false",
                   "benchmark.agreement.images=3")


@pytest.mark.parametrize("backend, precision, source", [
    ("onnxruntime", "fp32", "onnxruntime profiler"),
    ("openvino", "fp32", "openvino performance counters"),
])
def test_a_run_on_another_runtime(tmp_path, backend, precision, source):
    run_id = f"{backend}-{precision}"
    code = main(QUICK + ["--set", f"run.output_dir={tmp_path}", "--set", f"run.id={run_id}",
                         "--set", f"runtime.backend={backend}", "--set", f"runtime.precision={precision}",
                         "--set", f"runtime.cache_dir={tmp_path / 'cache'}"])
    assert code == 0
    run = tmp_path / run_id
    summary = json.loads((run / "summary.json").read_text())
    assert summary["runtime"]["backend"] == backend and summary["runtime"]["threads"] >= 1
    assert summary["runtime"]["preparation"]["first_inference_ms"] > 0
    # OpenVINO takes the pixels and converts them itself, as benchmark_app feeds it: the answers stay equal (below).
    assert summary["runtime"].get("input_precision") == ("u8" if backend == "openvino" else None)
    # three photos in batches of two: the last batch is short, and rect gives each batch its own shape
    steps = pd.read_csv(run / "steps_timer.csv")
    forward = steps[(steps["step"] == "forward") & (steps["pass_kind"] == "timed")]
    assert sorted(forward["images"]) == [1, 2]
    assert summary["images_processed"] == 3
    layers = pd.read_csv(run / "layer_timer.csv")
    assert set(layers["source"]) == {source} and layers["path"].str.startswith("model.").any()
    assert summary["layer_timing"]["source"] == source
    env = json.loads((run / "env.json").read_text())
    assert env["runtime"]["backend"] == backend
    # fp32 through another runtime gives the same answers as torch
    assert summary["agreement"]["verdict"] == "equal", summary["agreement"]
    assert summary["agreement"]["images"] == 3


def test_the_export_is_cached_between_runs(tmp_path):
    common = QUICK + ["--set", f"run.output_dir={tmp_path}", "--set", "runtime.backend=onnxruntime",
                      "--set", f"runtime.cache_dir={tmp_path / 'cache'}", "--set", "benchmark.layer_timing=false",
                      "--set", "benchmark.agreement.enabled=false"]
    assert main(common + ["--set", "run.id=first"]) == 0
    assert main(common + ["--set", "run.id=second"]) == 0
    first, second = (json.loads((tmp_path / name / "summary.json").read_text())["runtime"]["preparation"]
                     for name in ("first", "second"))
    assert first["cache_hit"] is False and second["cache_hit"] is True and second["export_s"] == 0
    assert "agreement" not in json.loads((tmp_path / "second" / "summary.json").read_text())
