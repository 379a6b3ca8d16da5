"""A frame's record as a row of cameras_frames.csv, its times on the run's clock."""
from utils.scenarios.cameras.frames import DETECTED, FrameRecord, RunClock, frame_row


def test_monotonic_seconds_go_onto_the_step_timers_clock():
    # perf_counter runs 5 s ahead of monotonic; the step timer started at perf 100 s.
    clock = RunClock(perf_minus_monotonic_ns=5_000_000_000, origin_ns=100_000_000_000)
    assert clock.seconds(96.0) == 1.0 and clock.seconds(None) is None
    assert clock.perf_ns(96.0) == 101_000_000_000


def test_a_detected_frame_row_carries_its_times_and_latency():
    clock = RunClock(0, 10_000_000_000)
    record = FrameRecord(1, 42, 2.8, 12.0, 12.01, True, DETECTED, 12.02, 12.25, None, 7, 2, 3)
    row = frame_row(record, ["cam0", "cam1"], clock)
    assert row == {"stream": "cam1", "frame": 42, "pts_s": "2.800000", "measured": True, "outcome": "detected",
                   "arrival_s": "2.000000", "decoded_s": "2.010000", "detect_start_s": "2.020000",
                   "detect_end_s": "2.250000", "dropped_s": "", "latency_ms": "250.000", "batch": 7,
                   "batch_frames": 2, "detections": 3}
