"""Python against native time from py-spy's timed stacks: segments, categories, the clock offset, the shares per
step, and the speedscope / trace forms, against hand-computed cases."""
import pytest

from utils.measure.below_layer.native_time import (CATEGORIES, Frame, Segment, categorize, clock_offset_us, fitted_offset_us,
                                      jit_ranges, step_shares, thread_segments, where_time_went, with_jit_frames)
from utils.record.steps import STEP_FRAME_PREFIX, PassKind, StepRecord
from tests.support.pyspy_events import CV, FUTEX, GC, LIBC, ORT, OV, PY, TORCH, nested_events


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


def test_segments_follow_the_stack():
    # run [0, 100]; torch inside it [20, 60]
    events = nested_events(7, [(0, 100, PY), (20, 60, TORCH)])
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


def test_a_mark_seen_in_pieces_and_a_mark_missed_still_give_the_offset():
    mark = Frame("detbench_sampler_clock_mark", "/app/sampler.py")
    # py-spy clock = perf clock + 1000 us. The first mark (10 s to 10.5 s, settling) is seen in two stretches, with
    # a sample between them that lacked its frame; the last mark (20 s to 20.05 s) fell between two samples.
    marks_ns = [(10_000_000_000, 10_500_000_000), (20_000_000_000, 20_050_000_000)]
    segments = [Segment(9_990_000, 10_001_050, (PY,)),
                Segment(10_001_050, 10_200_000, (PY, mark)), Segment(10_200_000, 10_300_000, (PY,)),
                Segment(10_300_000, 10_501_400, (PY, mark)), Segment(10_501_400, 20_060_000, (PY,))]
    assert clock_offset_us(segments, marks_ns, mark.name) == pytest.approx(1050.0)
    # Only the last mark seen: it lies at the end of the recording, so it is the last mark.
    late = [Segment(9_990_000, 20_001_020, (PY,)), Segment(20_001_020, 20_051_030, (PY, mark)),
            Segment(20_051_030, 20_060_000, (PY,))]
    assert clock_offset_us(late, marks_ns, mark.name) == pytest.approx(1020.0)


def _in_step(step, *frames):
    return (PY, Frame(STEP_FRAME_PREFIX + step, "/app/step_frames.py"), *frames)


def test_the_offset_fitted_to_the_step_frames_puts_each_sample_in_its_own_step():
    # py-spy's clock runs 1000 us ahead. Batches of load [0, 10) and forward [10, 90) us, every 100 us; samples at
    # 1005 (load), 1030 and 1180 (forward), 1202 (load), 1250, 1340 (forward) on py-spy's clock.
    records = []
    for start in range(0, 400, 100):
        records += [_record("load", start, start + 10), _record("forward", start + 10, start + 90)]
    segments = [Segment(1005, 1030, _in_step("load", CV)), Segment(1030, 1180, _in_step("forward", TORCH)),
                Segment(1180, 1202, _in_step("forward", TORCH, LIBC)), Segment(1202, 1250, _in_step("load")),
                Segment(1250, 1340, _in_step("forward", TORCH)), Segment(1340, 1400, _in_step("forward"))]
    # Each sample's windows, offset in [start - occurrence end, start - occurrence start], within [940, 1140]:
    # 1005 [995, 1005]; 1030 [940, 1020]; 1180 [940, 970] [990, 1070] [1090, 1140]; 1202 [992, 1002] [1092, 1102];
    # 1250 [960, 1040] [1060, 1140]; 1340 [950, 1030] [1050, 1130]. All six hold on [995, 1002] only.
    offset = fitted_offset_us(segments, records, around_us=1040, within_us=100, least=6)
    assert offset == pytest.approx(998.5)
    assert fitted_offset_us(segments, records, around_us=1040, within_us=100, least=7) is None
    # Searched only near 1100, the best is where four agree: [1092, 1102] with 1180, 1250, 1340 and 1202's second.
    assert fitted_offset_us(segments, records, around_us=1110, within_us=30, least=4) == pytest.approx(1097.0)
    # Warm-up records never count.
    warm = [StepRecord(r.step, r.parent, PassKind.WARMUP, 0, 0, 1, r.start_ns, r.end_ns) for r in records]
    assert fitted_offset_us(segments, warm, around_us=1040, within_us=100, least=1) is None


def test_of_equally_good_offsets_one_batch_apart_the_fit_keeps_the_marks_nearest():
    # Forwards [0, 40), [50, 90), ... [950, 990) us, all alike; one sample 6 us into each even one, py-spy 1000 us
    # ahead. All ten samples agree with offsets [966, 1006] (their own forward) and as well with [916, 956] (the
    # forward after theirs, which the last sample has too); [1016, 1056] misses the first sample's.
    records = [_record("forward", start, start + 40) for start in range(0, 1000, 50)]
    segments = [Segment(1006 + start, 1007 + start, _in_step("forward", TORCH)) for start in range(0, 1000, 100)]
    assert fitted_offset_us(segments, records, around_us=990, within_us=100, least=10) == pytest.approx(986.0)
    assert fitted_offset_us(segments, records, around_us=940, within_us=100, least=10) == pytest.approx(936.0)
    assert fitted_offset_us(segments, records, around_us=1045, within_us=100, least=10) == pytest.approx(986.0)


def test_runtime_generated_code_counts_for_the_runtime_not_for_the_python_that_called_it():
    maps = "\n".join([
        "7f0000000000-7f0000100000 r-xp 00000000 00:00 0 ",
        "7f0000200000-7f0000300000 r-xp 00000000 08:01 123 /venv/torch/lib/libtorch_cpu.so",
        "7f0000400000-7f0000500000 rw-p 00000000 00:00 0 ",
        "7f0000600000-7f0000700000 r-xp 00000000 00:00 0 [anon:jit]",
        "7ffff7fc1000-7ffff7fc3000 r-xp 00000000 00:00 0 [vdso]"])
    assert jit_ranges(maps) == [(0x7f0000000000, 0x7f0000100000), (0x7f0000600000, 0x7f0000700000)]
    inside, outside = Frame("0x7f0000000800", "?"), Frame("0x7f0000450000", "?")
    segments = [Segment(0, 1, (PY, inside)), Segment(1, 2, (PY, outside)), Segment(2, 3, (PY, TORCH, inside))]
    assert [s.category for s in segments] == ["python", "python", "torch_onednn"]
    ranges = jit_ranges(maps)
    assert [s.category for s in with_jit_frames(segments, ranges, "torch")] == [
        "torch_onednn", "python", "torch_onednn"]
    assert with_jit_frames(segments, ranges, "openvino")[0].category == "openvino"
    assert [s.category for s in with_jit_frames(segments, [], "torch")] == ["python", "python", "torch_onednn"]


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
