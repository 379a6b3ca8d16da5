"""Plain helpers that more than one test module uses: the quick config and a run of benchmark.main into a folder,
hand-built traces, a tiny network, a pycocotools reference, and the run record checks of the stop and write-fault
tests. Fixtures live in conftest.py, paths in paths.py; a test module imports from here, never from another
test module."""
from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import torch
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
from torch import nn

from tests.paths import CONFIGS, SAMPLES
from utils.writers.detections import DETECTION_COLUMNS, SKIPPED_COLUMNS


# --- quick runs of the command line -----------------------------------------------------------------------------

def quick_args(img_size: int, *settings: str, config: str = "samples_tiny.yaml") -> list[str]:
    """benchmark.py's arguments for a quick run: `--config configs/<config>`, `--set preprocess.img_size=<img_size>`,
    then each of `settings` as one more `--set`. Each test module states its own size and settings."""
    args = ["--config", str(CONFIGS / config), "--set", f"preprocess.img_size={img_size}"]
    for setting in settings:
        args += ["--set", setting]
    return args


def run_benchmark(args: list[str], output_dir: Path, *overrides: str, run_id: str | None = None) -> tuple[int, Path]:
    """benchmark.main on `args` with `run.output_dir=<output_dir>` (and `run.id=<run_id>` when given), then each of
    `overrides` as one more `--set`: returns the exit status and the run's directory (output_dir/run_id, or
    output_dir without a run id)."""
    from benchmark import main

    args = list(args) + ["--set", f"run.output_dir={output_dir}"]
    if run_id is not None:
        args += ["--set", f"run.id={run_id}"]
    for override in overrides:
        args += ["--set", override]
    code = main(args)
    return code, output_dir / run_id if run_id is not None else output_dir


# --- traces and profiled networks (test_chrome_trace, test_runtime_trace, test_profiler_trace, test_layer_profile) --

def torch_like_trace() -> dict:
    """The shape torch's exporter writes: integer ids for the process, strings on a few events."""
    return {"baseTimeNanoseconds": 1_790_000_000_000_000_000, "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 40, "tid": 0, "ts": 100.0, "args": {"name": "python"}},
        {"ph": "M", "name": "thread_name", "pid": 40, "tid": 40, "ts": 100.0, "args": {"name": "thread 40 (python)"}},
        {"ph": "M", "name": "thread_name", "pid": 40, "tid": 40, "ts": 100.0, "args": {"name": "thread 40 (python)"}},
        {"ph": "X", "cat": "user_annotation", "name": "forward", "pid": 40, "tid": 40, "ts": 200.0, "dur": 50.0},
        {"ph": "X", "cat": "user_annotation", "name": "model.0.conv", "pid": 40, "tid": 40, "ts": 210.0, "dur": 20.0},
        {"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "pid": 40, "tid": 40, "ts": 211.0, "dur": 18.0},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 40, "tid": 41, "ts": 212.0, "dur": 1.0},
        {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler",
         "ts": 150.0, "dur": 200.0},
        {"ph": "M", "name": "process_sort_index", "pid": "Spans", "tid": 0, "ts": 150.0,
         "args": {"sort_index": 536870912}},
        {"ph": "i", "s": "g", "name": "Iteration Start", "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": 150.0},
        {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 350.0},
    ]}


def metadata(trace: dict, name: str) -> dict:
    return {(event["pid"], event["tid"]) if name == "thread_name" else event["pid"]: event["args"]["name"]
            for event in trace["traceEvents"] if event.get("ph") == "M" and event["name"] == name}


class Net(nn.Module):
    """A tiny network with named layers (backbone, backbone.0, backbone.1, head) for profiled passes."""

    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(4, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.head(self.backbone(x)))


# --- mAP reference (test_accuracy, test_scenarios) ---------------------------------------------------------------

def pycocotools_stats(truths, dets) -> np.ndarray:
    images = [{"id": i, "width": 1, "height": 1} for i in range(len(truths))]
    annotations, results = [], []
    for i, (t, d) in enumerate(zip(truths, dets)):
        crowd = getattr(t, "crowd", None)
        crowd = [False] * len(t.labels) if crowd is None else list(crowd)
        for (x1, y1, x2, y2), label, flag in zip(t.boxes.tolist(), t.labels.tolist(), crowd):
            annotations.append({"id": len(annotations) + 1, "image_id": i, "category_id": label,
                                "bbox": [x1, y1, x2 - x1, y2 - y1], "area": (x2 - x1) * (y2 - y1),
                                "iscrowd": int(flag)})
        for (x1, y1, x2, y2), score, label in zip(d.boxes.tolist(), d.scores.tolist(), d.labels.tolist()):
            results.append({"image_id": i, "category_id": label, "bbox": [x1, y1, x2 - x1, y2 - y1],
                            "score": score})
    ground = COCO()
    ground.dataset = {"images": images, "annotations": annotations,
                      "categories": [{"id": c} for c in sorted({a["category_id"] for a in annotations})]}
    with contextlib.redirect_stdout(io.StringIO()):
        ground.createIndex()
        evaluation = COCOeval(ground, ground.loadRes(results), "bbox")
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    return evaluation.stats


# --- the run record (test_run_record_stops, test_run_record_write_faults) ----------------------------------------

# yolov7-tiny at 160, unfused, no warm-up batch: the quickest run that still goes through every phase.
EVERY_PHASE = quick_args(160, "model.fuse=false", "benchmark.warmup=0")


def small_photos(folder: Path, count: int) -> Path:
    photo = cv2.resize(cv2.imread(str(SAMPLES / "dog.jpg")), (192, 144))
    for i in range(count):
        cv2.imwrite(str(folder / f"{i:03d}.jpg"), photo)
    return folder


def utc(text: str) -> dt.datetime:
    moment = dt.datetime.fromisoformat(text)
    assert moment.utcoffset() == dt.timedelta(0), text
    return moment


def read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


CSV_HEADERS = {"detections.csv": DETECTION_COLUMNS, "skipped.csv": SKIPPED_COLUMNS,
               "steps_timer.csv": ("step", "parent", "pass_kind", "pass_index", "batch", "images", "ms", "warmup",
                                   "start_s", "end_s", "cold_shape")}


def assert_nothing_half_written(run_dir: Path) -> None:
    """No temporary left behind; every CSV parses with its whole header, every JSON parses."""
    assert not [p for p in run_dir.rglob(".*") if p.name.endswith(".tmp")]
    for path in (p for p in run_dir.rglob("*.csv") if p.is_file()):
        table = pd.read_csv(path)
        assert len(table.columns) > 0, path
        if path.name in CSV_HEADERS:
            assert tuple(table.columns) == CSV_HEADERS[path.name], path
    for path in run_dir.rglob("*.json"):
        assert read_json(path) is not None, path


# --- the record's typed sections (test_sections, the recorders' tests, whole runs) --------------------------------

def section_shape_errors(section: dict, shape: type) -> list[str]:
    """What in a summary.json section its TypedDict in utils/record/sections.py does not declare: keys declared
    nowhere (a `*_mb*` key counts as declared with its `*_mib*` twin), a required key missing, and a status or
    verdict outside SectionStatus or Verdict."""
    from typing import get_args

    from utils.record.sections import SectionStatus, Verdict
    declared = shape.__required_keys__ | shape.__optional_keys__
    errors = [f"{shape.__name__} declares no key {key!r}" for key in section
              if key not in declared and key.replace("_mb", "_mib") not in declared]
    errors += [f"{shape.__name__} requires {key!r}" for key in sorted(shape.__required_keys__ - section.keys())]
    if "status" in declared and section.get("status") not in get_args(SectionStatus):
        errors.append(f"status {section.get('status')!r} is no SectionStatus")
    for key in ("verdict", "detections_verdict"):
        if key in declared and key in section and section[key] not in get_args(Verdict):
            errors.append(f"{key} {section[key]!r} is no Verdict")
    return errors
