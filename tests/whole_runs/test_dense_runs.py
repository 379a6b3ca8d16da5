"""Whole runs of the dense family (SSDlite at 160): decode timed apart in postprocessing, every layer hooked, and the
exported runtimes giving the reference's detections."""
import json
from pathlib import Path

import pandas as pd
import pytest

from benchmark import main
from tests.support.paths import ROOT, SAMPLES

pytestmark = pytest.mark.slow  # whole runs of SSDlite, two of them exported


def _run(tmp_path, run_id: str, *overrides: str) -> Path:
    images = tmp_path / "images"
    images.mkdir(exist_ok=True)
    for name in ("dog.jpg", "eagle.jpg", "kite.jpg"):
        (images / name).write_bytes((SAMPLES / name).read_bytes())
    args = ["--config", str(ROOT / "configs" / "samples_ssdlite.yaml"), "--set", f"dataset.path={images}",
            "--set", f"run.output_dir={tmp_path / 'out'}", "--set", f"run.id={run_id}",
            "--set", "preprocess.img_size=160", "--set", "benchmark.repeats=1", "--set", "outputs.plots=false",
            "--set", "benchmark.energy.enabled=false"]
    for override in overrides:
        args += ["--set", override]
    assert main(args) == 0
    return tmp_path / "out" / run_id


def test_a_run_times_decode_apart_and_hooks_every_layer(tmp_path):
    run = _run(tmp_path, "torch")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["family"] == "dense" and summary["img_size"] == 160
    steps = pd.read_csv(run / "steps_timer.csv")
    assert {"preprocess", "forward", "decode", "scale_boxes"} <= set(steps["step"])
    assert set(steps.loc[steps["step"] == "decode", "parent"]) == {"postprocess"}
    layers = pd.read_csv(run / "layer_timer.csv")
    assert "head.classification_head.module_list.0.1" in set(layers["path"])
    assert float(layers["macs"].sum()) > 0


@pytest.mark.parametrize("backend", ["onnxruntime", "openvino"])
def test_an_exported_runtime_gives_the_references_detections(tmp_path, backend):
    run = _run(tmp_path, backend, f"runtime.backend={backend}", "benchmark.layer_timing=false",
               f"runtime.cache_dir={tmp_path / 'cache'}")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["agreement"]["verdict"] == "equal", summary["agreement"]
    assert summary["agreement"]["at_configured_conf_thres"]["conf_thres"] == 0.5
