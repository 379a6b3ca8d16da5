"""trace.json of real profiled runs (yolov7-tiny at 128, one image) on torch and on ONNX Runtime: integer ids
and named tracks, steps and layers nested, ONNX Runtime's node events inside the forward step, and the file
loaded by a real speedscope in a real headless Chromium (skipped, with the reason, where either is missing)."""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from benchmark import main
from tests.support.helpers import quick_args
from utils.measure.layers.chrome_trace import complete_events, lies_within, span
from utils.measure.layers.profiler import profile_pipeline, step_range
from utils.measure.layers.runtime_trace import trace_for_viewers

QUICK = quick_args(128, "dataset.limit=1", "dataset.batch_size=1", "benchmark.warmup=0", "benchmark.repeats=1",
                   "benchmark.layer_timing=false", "benchmark.profiler=true", "benchmark.agreement.enabled=false",
                   "benchmark.memory.enabled=false", "benchmark.energy.enabled=false", "outputs.plots=false",
                   "outputs.save_images=false")


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    outputs = tmp_path_factory.mktemp("outputs")
    result = {}
    for backend in ("torch", "onnxruntime"):
        assert main(QUICK + ["--set", f"run.output_dir={outputs}", "--set", f"run.id={backend}",
                             "--set", f"runtime.backend={backend}",
                             "--set", f"runtime.cache_dir={outputs / 'cache'}"]) == 0
        run = outputs / backend
        result[backend] = (json.loads((run / "trace.json").read_text()),
                           json.loads((run / "summary.json").read_text()))
    return result


def track_names(trace: dict, kind: str) -> dict:
    return {(event["pid"], event["tid"]) if kind == "thread_name" else event["pid"]: event["args"]["name"]
            for event in trace["traceEvents"] if event.get("ph") == "M" and event.get("name") == kind}


def only(events: list[dict], name: str) -> dict:
    matches = [event for event in events if event["name"] == name]
    assert len(matches) == 1, name
    return matches[0]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["torch", "onnxruntime"])
def test_every_event_has_integer_ids_and_every_track_a_name(traces, backend):
    trace, summary = traces[backend]
    events = trace["traceEvents"]
    assert all(isinstance(event["pid"], int) and isinstance(event["tid"], int) for event in events)
    processes, threads = track_names(trace, "process_name"), track_names(trace, "thread_name")
    assert {event["pid"] for event in events} <= set(processes)
    assert {(event["pid"], event["tid"]) for event in events if event["ph"] == "X"} <= set(threads)
    main_pid = only(complete_events(trace), "forward")["pid"]
    assert processes[main_pid] == f"detbench yolov7-tiny {backend} fp32"
    assert threads[(main_pid, only(complete_events(trace), "forward")["tid"])] == "main thread"
    assert not [warning for warning in summary["warnings"] if "trace.json" in warning]


@pytest.mark.slow
def test_steps_and_layers_nest_under_readable_names(traces):
    events = complete_events(traces["torch"][0])
    for step in ("pipeline", "load", "preprocess", "forward", "postprocess", "nms", "scale_boxes"):
        assert lies_within(only(events, step), [only(events, "pipeline")]), step
    forward = only(events, "forward")
    for layer in ("Model", "model.0.conv", "model.77", "model.77.m.0"):
        assert lies_within(only(events, layer), [forward]), layer
    assert lies_within(only(events, "Postprocessing/NonMaxSuppression"), [only(events, "nms")])


@pytest.mark.slow
def test_onnxruntime_node_events_lie_inside_the_forward_step(traces):
    trace = traces["onnxruntime"][0]
    events = complete_events(trace)
    forward = only(events, "forward")
    processes = track_names(trace, "process_name")
    runtime_pid = next(pid for pid, name in processes.items() if name.startswith("onnxruntime "))
    assert runtime_pid != forward["pid"]
    runtime = [event for event in events if event["pid"] == runtime_pid]
    nodes = [event for event in runtime if event["cat"] == "Node"]
    assert len(nodes) > 50 and only(runtime, "model_run")
    assert all(lies_within(event, [forward]) for event in runtime)
    # on their one thread, any two events are disjoint or nested, as every viewer needs
    for index, first in enumerate(runtime):
        for second in runtime[index + 1:]:
            (a_start, a_end), (b_start, b_end) = span(first), span(second)
            disjoint = a_end <= b_start or b_end <= a_start
            nested = a_start <= b_start and b_end <= a_end or b_start <= a_start and a_end <= b_end
            assert disjoint or nested, (first["name"], second["name"])
    assert {"model.0/Conv", "model.77/Sigmoid"} <= {node["name"] for node in nodes}
    assert all(node["args"]["onnx_node"] for node in nodes)
    # ONNX Runtime ran its nodes on the main thread, shown under a tid of its own (one tid in two processes
    # would read as a reused thread)
    (runtime_tid,) = {event["tid"] for event in runtime}
    assert track_names(trace, "thread_name")[(runtime_pid, runtime_tid)] == "main thread"
    assert runtime_tid not in {event["tid"] for event in trace["traceEvents"] if event["pid"] != runtime_pid}


def test_nothing_of_a_real_torch_trace_is_lost():
    import torch

    def run_once() -> None:
        with step_range("forward"):
            torch.nn.functional.relu(torch.ones(2, 2))

    raw = json.loads(profile_pipeline(run_once, None).trace_json)
    assert any(isinstance(event.get("pid"), str) for event in raw["traceEvents"])  # what torch writes
    trace = json.loads(trace_for_viewers(json.dumps(raw), "detbench test", os.getpid(), 0)[0])
    assert len(complete_events(trace)) == len(complete_events(raw))
    assert sorted(event["name"] for event in complete_events(trace)) == sorted(
        event["name"] for event in complete_events(raw))


def speedscope_page() -> Path | None:
    npm = shutil.which("npm")
    if npm is None:
        return None
    root = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, timeout=30).stdout.strip()
    page = Path(root) / "speedscope" / "dist" / "release" / "index.html"
    return page if page.is_file() else None


def open_in_speedscope(trace: dict, scratch: Path) -> tuple[str, str]:
    """speedscope's own way to open a local file (what its CLI writes), in headless Chromium: the page text
    and the browser console."""
    browser, page = shutil.which("chromium"), speedscope_page()
    if browser is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    if page is None:
        pytest.skip("speedscope is not installed (npm install -g speedscope)")
    script = scratch / "profile.js"
    encoded = base64.b64encode(json.dumps(trace).encode()).decode()
    script.write_text(f"speedscope.loadFileFromBase64('trace.json', {json.dumps(encoded)})")
    done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                           "--v=0", "--virtual-time-budget=10000", "--dump-dom",
                           f"{page.as_uri()}#localProfilePath={script}"],
                          capture_output=True, text=True, timeout=120)
    console = "\n".join(line for line in done.stderr.splitlines() if "CONSOLE" in line)
    return done.stdout, console


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["torch", "onnxruntime"])
def test_speedscope_loads_the_trace(traces, backend, tmp_path):
    text, console = open_in_speedscope(traces[backend][0], tmp_path)
    assert "Importing as Trace Event Format profile" in console
    assert "Failed to load" not in console and "Something went wrong" not in text
    assert "was still open" not in console and "Tried to end" not in console  # every range nests
    assert f"detbench yolov7-tiny {backend} fp32" in text and "main thread" in text
    if backend == "onnxruntime":
        assert "onnxruntime 1." in text


@pytest.mark.slow
def test_speedscope_rejects_torchs_export_as_is(tmp_path):
    """The control: the same check fails on the trace torch writes, so the passes above mean something."""
    raw = json.loads(profile_pipeline(lambda: None, None).trace_json)
    text, console = open_in_speedscope(raw, tmp_path)
    assert "Could not find events for key" in console and "Something went wrong" in text
