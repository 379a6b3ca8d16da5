"""Plain helpers that more than one test module uses: the quick config and a run of benchmark.main into a folder,
hand-built traces, a tiny network, a pycocotools reference, and the run record checks of the stop and write-fault
tests. Fixtures live in conftest.py, paths in paths.py; a test module imports from here, never from another
test module."""
from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import torch
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
from torch import nn

from tests.support.paths import CONFIGS, ROOT, SAMPLES
from utils.detections.writer import DETECTION_COLUMNS, SKIPPED_COLUMNS


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


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path) -> None:
    assert path.is_file() and path.stat().st_size > 1000
    assert path.read_bytes()[:8] == PNG_MAGIC


def read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


CSV_HEADERS = {"detections.csv": DETECTION_COLUMNS, "skipped.csv": SKIPPED_COLUMNS,
               "steps_timer.csv": ("step", "parent", "pass_kind", "pass_index", "batch", "images", "ms", "warmup",
                                   "start_s", "end_s", "cold_shape")}


def assert_nothing_half_written(run_dir: Path, killed: bool = False) -> None:
    """Every CSV parses with its whole header and ends with a whole row, every JSON parses; no temporary left
    behind. A run `killed` without warning (SIGKILL, the OOM killer) may leave the hidden temporary of the one
    file it was replacing (`.name.<pid>.tmp`): the file itself is then the one before, whole, or absent."""
    temporaries = [p for p in run_dir.rglob(".*") if p.name.endswith(".tmp")]
    assert len(temporaries) <= (1 if killed else 0), temporaries
    for path in (p for p in run_dir.rglob("*.csv") if p.is_file()):
        text = path.read_text()
        assert text.endswith("\n"), f"{path} ends in a row cut short"
        table = pd.read_csv(path)
        assert len(table.columns) > 0, path
        if path.name in CSV_HEADERS:
            assert tuple(table.columns) == CSV_HEADERS[path.name], path
    for path in run_dir.rglob("*.json"):
        if not path.name.startswith("."):
            assert read_json(path) is not None, path


# --- the command line in a process of its own (test_run_record_stops, test_fault_injection) --------------------

def process_start(pid: int):
    """(state, start time) of a live process, or None: a pid alone may be reused by the time it is checked."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], fields[19]


def still_alive(children: dict[int, str]) -> list[int]:
    alive = []
    for pid, started in children.items():
        now = process_start(pid)
        if now is not None and now[0] != "Z" and now[1] == started:
            alive.append(pid)
    return alive


WRAPPER = '''import importlib, signal, sys, time
sys.path.insert(0, {root!r})
# As at a terminal: Ctrl-C raises KeyboardInterrupt even where the suite runs as a background job, whose SIGINT the
# shell ignores (a new session does not undo an inherited ignore), and SIGHUP ends the run even where the suite
# runs under nohup; unless this run itself is started as under nohup, with SIGHUP ignored from the start.
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGHUP, signal.SIG_IGN if {nohup!r} else signal.SIG_DFL)
import benchmark

def wrap(module, dotted, before, after):
    owner_path, _, attribute = dotted.rpartition(".")
    owner = module
    for part in filter(None, owner_path.split(".")):
        owner = getattr(owner, part)
    original = getattr(owner, attribute)
    def wrapped(*args, **kwargs):
        before()
        result = original(*args, **kwargs)
        after()
        return result
    setattr(owner, attribute, wrapped)

def hold(module, dotted, seconds):
    def held():
        print(f"test: holding {{dotted}}", flush=True)
        time.sleep(seconds)
    wrap(module, dotted, held, lambda: None)

def tap(module, dotted):
    wrap(module, dotted, lambda: None, lambda: print(f"test: returned from {{dotted}}", flush=True))

for module, dotted, seconds in {holds!r}:
    hold(importlib.import_module(module), dotted, seconds)
for module, dotted in {taps!r}:
    tap(importlib.import_module(module), dotted)
print("test: main starts", flush=True)
sys.exit(benchmark.main(sys.argv[1:]))
'''


class Cli:
    """benchmark.main in a subprocess in a session of its own; stdout is read line by line as it comes, and the
    process's children are recorded while it runs. `holds`: (module, [Class.]function, seconds) to pause before
    each call, printing `test: holding <name>`; `taps`: (module, [Class.]function) to print
    `test: returned from <name>` after each call; `nohup`: start with SIGHUP ignored, as nohup does."""

    def __init__(self, tmp_path: Path, *overrides: str, holds=(), taps=(), nohup: bool = False,
                 base: tuple[str, ...] = tuple(EVERY_PHASE)):
        script = tmp_path / "run_benchmark.py"
        script.write_text(WRAPPER.format(root=str(ROOT), holds=list(holds), taps=list(taps), nohup=nohup))
        self.output_dir = tmp_path / "outputs"
        args = list(base) + ["--set", f"run.output_dir={self.output_dir}"]
        for override in overrides:
            args += ["--set", override]
        # A session of its own: a process group to stop whole, apart from the suite's.
        self.proc = subprocess.Popen([sys.executable, str(script), *args], cwd=ROOT, text=True,
                                     env=dict(os.environ, PYTHONUNBUFFERED="1"), start_new_session=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: list[str] = []
        self.err: list[str] = []
        self.children: dict[int, str] = {}
        self._console_gone = threading.Event()
        self._readers = [threading.Thread(target=self._read, args=(stream, sink), daemon=True)
                         for stream, sink in ((self.proc.stdout, self.lines), (self.proc.stderr, self.err))]
        for reader in self._readers:
            reader.start()

    def _read(self, stream, sink: list) -> None:
        descriptor, pending = stream.fileno(), b""
        while not self._console_gone.is_set():
            if not select.select([descriptor], [], [], 0.05)[0]:
                continue
            chunk = os.read(descriptor, 65536)
            if not chunk:
                break
            pending += chunk
            *whole, pending = pending.split(b"\n")
            sink.extend(line.decode(errors="replace") + "\n" for line in whole)
        if pending:
            sink.append(pending.decode(errors="replace"))
        stream.close()

    def close_console(self) -> None:
        """The reader goes away, as an orchestrator that dies or a `| head` that ends: both pipes are closed, so
        the run's next write to stdout or stderr meets EPIPE."""
        self._console_gone.set()
        for reader in self._readers:
            reader.join(timeout=10)

    def _record_children(self) -> None:
        for listing in Path(f"/proc/{self.proc.pid}/task").glob("*/children"):
            try:
                pids = [int(pid) for pid in listing.read_text().split()]
            except OSError:
                continue
            for pid in pids:
                started = process_start(pid)
                if started is not None:
                    self.children.setdefault(pid, started[1])

    def live_children(self) -> list[int]:
        self._record_children()
        return still_alive(self.children)

    def wait_until(self, condition, what: str, timeout: float = 90):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._record_children()
            value = condition()
            if value:
                return value
            assert self.proc.poll() is None, f"the run ended before {what}:\n{self.stdout}\n{self.stderr}"
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what}:\n{self.stdout}")

    def count(self, text: str) -> int:
        return sum(text in line for line in list(self.lines))

    def wait_for_line(self, text: str, times: int = 1) -> None:
        self.wait_until(lambda: self.count(text) >= times, repr(text) if times == 1 else f"{times} x {text!r}")

    def stop(self, number: int, group: bool = False) -> None:
        if group:
            os.killpg(self.proc.pid, number)
        else:
            self.proc.send_signal(number)

    def finish(self, timeout: float = 90) -> int:
        code = self.proc.wait(timeout=timeout)
        for reader in self._readers:
            reader.join(timeout=10)
        return code

    def kill(self) -> None:
        """The whole process group, at once (a run a failed test left going, with its workers)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self._console_gone.set()

    @property
    def stdout(self) -> str:
        return "".join(self.lines)

    @property
    def stderr(self) -> str:
        return "".join(self.err)


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
