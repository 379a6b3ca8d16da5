"""Python against native time from py-spy's timed stacks: segments, categories, the clock offset, the shares per
step, and the speedscope / trace forms, against hand-computed cases."""
import pytest

from utils.record.native_time import (CATEGORIES, Frame, Segment, categorize, clock_offset_us, step_shares,
                                      thread_segments, where_time_went)
from utils.record.sampled_stacks import complete_events, speedscope_document
from utils.record.steps import PassKind, StepRecord

PY = Frame("run", "/app/pipeline.py")
TORCH = Frame("at::native::conv", "/venv/torch/lib/libtorch_cpu.so")
LIBC = Frame("0x7f00", "/usr/lib/x86_64-linux-gnu/libc.so.6")
CV = Frame("cv::resize", "/venv/cv2/libopencv_imgproc.so")
OV = Frame("ov::infer", "/venv/openvino/libs/libopenvino_intel_cpu_plugin.so")
ORT = Frame("onnxruntime::Run", "/venv/onnxruntime/capi/onnxruntime_pybind11_state.so")
FUTEX = Frame("__futex_abstimed_wait_common", "/usr/lib/x86_64-linux-gnu/libc.so.6")
GC = Frame("gc_collect_main", "/usr/lib/libpython3.11.so.1.0")


@pytest.mark.parametrize("stack, category", [
    ((PY,), "python"),
    ((PY, TORCH), "torch_onednn"),
    ((PY, TORCH, LIBC), "torch_onednn"),  # memcpy inside torch is torch's time
    ((PY, CV), "other_native"),  # OpenCV called from Python is native, not Python
    ((PY, CV, LIBC), "other_native"),
    ((PY, OV, LIBC), "openvino"),
    ((PY, ORT), "onnxruntime"),
    ((PY, TORCH, FUTEX), "waiting"),  # a wait decides, whoever waits
    ((PY, Frame("Condition.wait", "/usr/lib/python3.11/threading.py")), "waiting"),
    ((PY, GC), "python"),  # the interpreter's own library
    ((LIBC,), "other_native"),
    ((), "waiting"),
])
def test_categories(stack, category):
    assert categorize(stack) == category


def _events(tid, spans):
    """B/E events for (start, end, frame) spans that nest."""
    events = []
    for start, end, frame in spans:
        events.append({"ph": "B", "ts": start, "tid": tid, "name": frame.name, "args": {"filename": frame.filename}})
        events.append({"ph": "E", "ts": end, "tid": tid, "name": frame.name, "args": {"filename": frame.filename}})
    return sorted(events, key=lambda e: (e["ts"], e["ph"] == "B"))


def test_segments_follow_the_stack():
    # run [0, 100]; torch inside it [20, 60]
    events = _events(7, [(0, 100, PY), (20, 60, TORCH)])
    segments = thread_segments(events)[7]
    assert [(s.start_us, s.end_us, s.category) for s in segments] == [
        (0, 20, "python"), (20, 60, "torch_onednn"), (60, 100, "python")]


def test_clock_offset_is_the_tightest_upper_bound():
    mark = Frame("detbench_sampler_clock_mark", "/app/sampler.py")
    # py-spy clock = perf clock + 1000 us; it saw the first mark 3 us late at its start and 7 us late at its end,
    # the second 2 us late at its start and 1 us late at its end
    marks_ns = [(10_000_000, 10_050_000), (20_000_000, 20_050_000)]
    segments = [Segment(11_003, 11_057, (PY, mark)), Segment(11_057, 21_002, (PY,)),
                Segment(21_002, 21_051, (PY, mark))]
    assert clock_offset_us(segments, marks_ns, mark.name) == pytest.approx(1001.0)
    assert clock_offset_us([Segment(0, 5, (PY,))], marks_ns, mark.name) is None


def _record(step, start_us, end_us, kind=PassKind.TIMED, parent=None):
    return StepRecord(step, parent, kind, 0, 0, 1, int(start_us * 1000), int(end_us * 1000))


def test_step_shares_by_time_overlap():
    offset = 500.0  # py-spy's clock runs 500 us ahead
    segments = [Segment(500, 530, (PY,)), Segment(530, 590, (PY, TORCH)), Segment(590, 600, (PY, TORCH, FUTEX)),
                Segment(600, 700, (PY, CV))]
    records = [_record("forward", 10, 100), _record("preprocess", 100, 200),
               _record("forward", 0, 100, kind=PassKind.WARMUP)]  # warm-up is never attributed
    rows = {row["step"]: row for row in step_shares(records, segments, offset, ["preprocess", "forward"])}
    forward = rows["forward"]
    # forward [10, 100] on perf clock = [510, 600] on py-spy's: the Python stack was first seen before it began
    # (at 500, in another step), so only what was first seen inside it counts: torch 60, waiting 10
    assert forward["occurrences"] == 1 and forward["sampled_ms"] == pytest.approx(0.070)
    assert forward["python_share"] == 0.0
    assert forward["torch_onednn_share"] == pytest.approx(60 / 70)
    assert forward["waiting_share"] == pytest.approx(10 / 70)
    assert rows["preprocess"]["other_native_share"] == pytest.approx(1.0)
    assert sum(forward[f"{c}_share"] for c in CATEGORIES) == pytest.approx(1.0)
    assert [row["step"] for row in step_shares(records, segments, offset, ["preprocess", "forward"])] == [
        "preprocess", "forward"]
    assert where_time_went(forward) == "forward: 86% native torch/oneDNN, 14% waiting"
    # within the clock offset's tolerance, a stack first seen just before the step began counts for it
    tolerant = {row["step"]: row for row in step_shares(records, segments, offset, [], tolerance_us=15)}
    assert tolerant["forward"]["python_share"] == pytest.approx(20 / 90)


def test_speedscope_and_trace_events_are_on_the_step_clock():
    events = _events(7, [(1500, 1600, PY), (1520, 1560, TORCH)]) + _events(9, [(1500, 1550, FUTEX)])
    document = speedscope_document(events, offset_us=500.0, origin_ns=1_000_000 - 1_000_000, main_thread=7,
                                   name="run")
    main = document["profiles"][0]
    assert main["name"].startswith("main thread") and main["unit"] == "microseconds"
    assert (main["startValue"], main["endValue"]) == (1000.0, 1100.0)
    depth = 0
    for event in main["events"]:  # every frame opened is closed, innermost first
        depth += 1 if event["type"] == "O" else -1
        assert depth >= 0
    assert depth == 0
    frames = document["shared"]["frames"]
    assert {frame["name"] for frame in frames} == {PY.name, TORCH.name, FUTEX.name}
    x_events = complete_events(events, 500.0)
    torch_event = next(e for e in x_events if e["name"] == TORCH.name)
    assert (torch_event["ts"], torch_event["dur"]) == (1020.0, 40.0)


def test_shares_of_exponentially_sampled_steps_come_out_near_the_truth():
    """A timeline of 30 ms Python then 70 ms torch, 300 times, sampled as py-spy does (exponential intervals at
    20 Hz, a stack stamped only when it changes): most 30 ms steps see no sample at all, yet counting each stack
    in the step where it was first seen gives each step its own stack; spreading stacks over every step they
    overlap would give the short step its neighbour's."""
    import random
    rng = random.Random(0)
    rate, period, python_us = 20.0, 100_000.0, 30_000.0
    records, events, stack, t = [], [], None, 0.0
    for index in range(300):
        start = index * period
        records.append(_record("python_step", start, start + python_us))
        records.append(_record("torch_step", start + python_us, start + period))
    while t < 300 * period:
        t += rng.expovariate(rate) * 1e6
        step_frame = Frame("python_stage" if (t % period) < python_us else "torch_stage", "/app/stages.py")
        current = (PY, step_frame) if step_frame.name == "python_stage" else (PY, step_frame, TORCH)
        if current != stack:
            for frame in reversed(stack or ()):
                if frame is not PY:
                    events.append({"ph": "E", "ts": t, "tid": 1, "name": frame.name,
                                   "args": {"filename": frame.filename}})
            if stack is None:
                events.append({"ph": "B", "ts": t, "tid": 1, "name": PY.name, "args": {"filename": PY.filename}})
            for frame in current[1:]:
                events.append({"ph": "B", "ts": t, "tid": 1, "name": frame.name, "args": {"filename": frame.filename}})
            stack = current
    segments = thread_segments(events)[1]
    rows = {r["step"]: r for r in step_shares(records, segments, 0.0, [])}
    assert rows["python_step"]["python_share"] == pytest.approx(1.0)
    assert rows["torch_step"]["torch_onednn_share"] == pytest.approx(1.0)
    assert rows["python_step"]["sampled_ms"] < rows["python_step"]["step_ms"]

