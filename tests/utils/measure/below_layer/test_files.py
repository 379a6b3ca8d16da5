"""utils.measure.below_layer.files: the files, summary.json keys and console lines of what lies below the layer.

Tested on hand-made BelowLayer data: which files a run directory gets for which parts, the summary keys with
the files they point to, the CPU counters' console line computed from per-pass totals, and the console lines
of each part, measured or unavailable."""
import json

import pandas as pd
import pytest

from utils.measure.below_layer.record import BelowLayer
from utils.record.run_record import RunIdentity, RunRecord, Table
from utils.storage import layout
from utils.measure.below_layer.files import below_console_lines, below_summary, counters_line, write_below_layer
from utils.storage.run_directory import RunDirectory

PASS = {"wall_ms": 100.0, "cpu_ms": 150.0, "voluntary_switches": 10, "involuntary_switches": 2,
        "cpu_migrations": 1, "minor_faults": 300, "major_faults": 0, "ipc": 1.5}
MEASURED_COUNTERS = {"status": "measured", "passes": [PASS, dict(PASS, wall_ms=100.0, cpu_ms=50.0, ipc=None)]}


def record(below=None) -> RunRecord:
    run = RunRecord(RunIdentity(run_id="r", config_file="x.yaml", family="yolo", arch="yolov7-tiny",
                                weights="random (seed 0)", random_weights=True, seed=0, img_size=64, batch_size=1,
                                runtime={"backend": "torch"}, step_order=("pipeline",)))
    run.below = below
    return run


@pytest.fixture
def run_dir(tmp_path):
    directory = RunDirectory(tmp_path, "run")
    directory.create()
    return directory


def test_a_run_without_below_layer_parts_writes_and_says_nothing(run_dir):
    write_below_layer(run_dir, record())
    assert list(run_dir.path.iterdir()) == []
    assert below_summary(record()) == {}
    assert below_console_lines({}) == []


def test_each_part_writes_its_own_file(run_dir):
    below = BelowLayer(0, native_shares=Table([{"step": "forward", "occurrences": 2}], ("step", "occurrences")),
                       counter_table=Table([{"tid": 7}], ("tid",)), verbose_text="onednn_verbose,v1\n",
                       speedscope={"shared": {"frames": []}})
    write_below_layer(run_dir, record(below))
    assert sorted(p.name for p in run_dir.path.iterdir()) == sorted(
        [layout.SAMPLES_SPEEDSCOPE, layout.NATIVE_TIME, layout.CPU_COUNTERS, layout.ONEDNN_VERBOSE])
    assert pd.read_csv(run_dir.file(layout.NATIVE_TIME)).to_dict("records") == [{"step": "forward",
                                                                                "occurrences": 2}]
    assert run_dir.file(layout.ONEDNN_VERBOSE).read_text() == "onednn_verbose,v1\n"
    assert not run_dir.file(layout.TRACE).exists()  # counters alone leave trace.json to the profiler


def test_sampled_stacks_join_the_steps_in_trace_json(run_dir):
    sample = {"ph": "X", "name": "conv", "tid": 5, "ts": 2000.0, "dur": 10.0}
    below = BelowLayer(0, sample_events=[sample], sample_threads={5: "main thread"})
    run = record(below)
    run.steps_origin_ns = 1_000_000
    write_below_layer(run_dir, run)
    events = json.loads(run_dir.file(layout.TRACE).read_text())["traceEvents"]
    joined = [event for event in events if event.get("name") == "conv"]
    assert len(joined) == 1 and joined[0]["ts"] == pytest.approx(1000.0)  # on the run's clock, from its origin
    assert below_summary(run)["trace"] == layout.TRACE


def test_summary_names_the_files_of_the_parts_that_wrote_one():
    below = BelowLayer(0, native_time={"status": "unavailable", "reason": "no py-spy"},
                       cpu_counters={"status": "measured"}, kernels={"status": "partial"},
                       itt={"tasks": 4})
    summary = below_summary(record(below))
    assert summary == {"native_time": {"status": "unavailable", "reason": "no py-spy", "files": []},
                       "cpu_counters": {"status": "measured", "file": layout.CPU_COUNTERS},
                       "kernels": {"status": "partial"}, "itt": {"tasks": 4}}
    below.verbose_text, below.native_shares = "text", Table([], ("step",))
    summary = below_summary(record(below))
    assert summary["kernels"]["file"] == layout.ONEDNN_VERBOSE
    assert summary["native_time"]["files"] == [layout.SAMPLES_SPEEDSCOPE, layout.NATIVE_TIME]


def test_counters_line_sums_the_passes():
    assert counters_line(MEASURED_COUNTERS) == (
        "  CPU counters over 2 timed pass(es): CPU 1.00x wall; context switches 20 voluntary / 4 involuntary; "
        "2 migrations; faults 600 minor / 0 major; IPC 1.50")


def test_counters_line_of_hardware_counters_refused_says_why():
    line = counters_line(dict(MEASURED_COUNTERS, hardware="unavailable (perf_event_paranoid 3)"))
    assert line.endswith("; cycles, instructions, LLC misses unavailable (perf_event_paranoid 3)")
    assert counters_line({"status": "unavailable", "reason": "no perf events"}) == (
        "  CPU counters: unavailable (no perf events)")


def test_counters_line_without_ipc_says_not_available():
    passes = [dict(PASS, ipc=None)]
    assert counters_line({"status": "measured", "passes": passes}).endswith("; IPC n/a")


def test_console_lines_of_every_part():
    summary = {"native_time": {"status": "measured", "samples": 40, "rate_hz": 97, "lines": ["forward: 90% native"]},
               "cpu_counters": {"status": "unavailable", "reason": "no perf events"},
               "kernels": {"status": "measured", "convolution_kernels": {"brg_conv": 3, "jit:avx2": 1}},
               "itt": {"tasks": 5, "api": "torch.profiler.itt", "available": False, "reason": "USE_ITT off"}}
    assert below_console_lines(summary) == [
        f"  where each step's time went (py-spy, 40 samples at 97 Hz; {layout.NATIVE_TIME}):",
        "    forward: 90% native",
        "  CPU counters: unavailable (no perf events)",
        "  convolution kernels (oneDNN verbose, one extra batch): brg_conv x3, jit:avx2 x1",
        "  ITT tasks: 5 emitted via torch.profiler.itt (not available: USE_ITT off)"]


def test_console_lines_of_parts_that_could_not_measure_say_why():
    summary = {"native_time": {"status": "unavailable", "reason": "py-spy is not installed"},
               "kernels": {"status": "partial", "source": "ONNX Runtime's profile"}}
    assert below_console_lines(summary) == ["  native time: unavailable (py-spy is not installed)",
                                            "  kernels: partial (ONNX Runtime's profile)"]
