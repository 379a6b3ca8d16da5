"""The camera figures from hand-made records: counts and rates per camera, the latency percentiles (numpy's
linear interpolation between ranks), and the CPU split, each against figures worked out by hand."""
import pytest

from utils.scenarios.cameras.figures import (
    CpuSeconds,
    StreamCpu,
    StreamSource,
    cpu_ms_per_frame,
    latency_ms,
    overlap_s,
    stream_row,
    totals,
)
from utils.scenarios.cameras.frames import DETECTED, DROPPED, NOT_DECODED, FrameRecord


def detected(stream: int, arrival: float, latency_s: float) -> FrameRecord:
    return FrameRecord(stream, 0, 0.0, arrival, arrival, True, DETECTED, arrival, arrival + latency_s)


def ended(stream: int, outcome: str) -> FrameRecord:
    return FrameRecord(stream, 0, 0.0, 1.0, 1.0, True, outcome)


def test_latency_percentiles_interpolate_between_ranks():
    # Ranks 0..3 of 100, 200, 300, 400 ms: p50 at 1.5 -> 250; p90 at 2.7 -> 370; p99 at 2.97 -> 397.
    records = [detected(0, 10.0 + i, latency) for i, latency in enumerate((0.4, 0.1, 0.3, 0.2))]
    records.append(ended(0, DROPPED))  # no latency: never detected
    assert latency_ms(records) == pytest.approx({"p50_ms": 250.0, "p90_ms": 370.0, "p99_ms": 397.0,
                                                 "max_ms": 400.0, "mean_ms": 250.0})


def test_no_frame_detected_has_no_latency():
    assert latency_ms([ended(0, DROPPED)]) == {"p50_ms": None, "p90_ms": None, "p99_ms": None, "max_ms": None,
                                               "mean_ms": None}


def test_the_forward_is_what_the_process_spent_beyond_the_parts_its_threads_saw():
    cpu = CpuSeconds(process=10.0, decode=2.0, preprocess=0.5, postprocess=0.7, output=0.3)
    assert cpu.forward == pytest.approx(6.5)
    # The clocks tick apart: a remainder below 0 is none.
    assert CpuSeconds(process=1.0, decode=0.8, preprocess=0.2, postprocess=0.1, output=0.0).forward == 0.0


def test_cpu_per_frame_is_decode_per_frame_decoded_and_the_rest_per_frame_detected():
    # 2 s decoding 100 frames: 20 ms; 0.5 s and 0.7 s over 50 frames detected: 10 and 14 ms; forward 130 ms.
    per_frame = cpu_ms_per_frame(StreamCpu(decode=2.0, preprocess=0.5, postprocess=0.7, frames=50), 0.130, 100)
    assert per_frame == pytest.approx({"decode": 20.0, "preprocess": 10.0, "forward": 130.0, "postprocess": 14.0,
                                       "cpu": 174.0})
    assert cpu_ms_per_frame(StreamCpu(decode=1.0), None, 0) == {"decode": None, "preprocess": None, "forward": None,
                                                                 "postprocess": None, "cpu": None}


def test_a_camera_row_counts_its_frames_rates_and_cpu():
    records = [detected(0, 1.0 + i, 0.1 * (i + 1)) for i in range(4)]
    records += [ended(0, DROPPED), ended(0, DROPPED), ended(0, NOT_DECODED)]
    source = StreamSource(arrived=8, decoded=7, corrupt_packets=1, connections=1, gaps=1, gap_s=0.5,
                          ended="gave up after 1 reconnect(s): no answer for data within 1 s")
    row = stream_row("cam0", "http://cam/", records, source, StreamCpu(0.07, 0.02, 0.04, 4), 0.05, 2.0)
    assert row["delivered"] == 7 and row["detected"] == 4 and row["dropped"] == 2 and row["not_decoded"] == 1
    assert row["drop_share"] == pytest.approx(2 / 7)
    assert row["fps_delivered"] == pytest.approx(3.5) and row["fps_detected"] == pytest.approx(2.0)
    assert row["latency_p50_ms"] == pytest.approx(250.0) and row["latency_max_ms"] == pytest.approx(400.0)
    assert row["decode_cpu_ms_per_frame"] == pytest.approx(10.0)  # 70 ms over 7 frames decoded
    assert row["preprocess_cpu_ms_per_frame"] == pytest.approx(5.0)  # 20 ms over 4 frames detected
    assert row["forward_cpu_ms_per_frame"] == pytest.approx(50.0)
    assert row["cpu_ms_per_frame"] == pytest.approx(10.0 + 5.0 + 50.0 + 10.0)
    assert row["gaps"] == 1 and row["ended"].startswith("gave up")


def test_the_totals_add_the_cameras_up():
    records = [detected(0, 1.0, 0.1), detected(1, 1.0, 0.3), ended(1, DROPPED)]
    sources = [StreamSource(arrived=2, decoded=2), StreamSource(arrived=3, decoded=2)]
    cpu = CpuSeconds(process=1.0, decode=0.2, preprocess=0.1, postprocess=0.1, output=0.0)
    total = totals(records, sources, cpu, 2, 4.0)
    assert (total["arrived"], total["decoded"], total["delivered"], total["detected"], total["dropped"]) == (
        5, 4, 3, 2, 1)
    assert total["fps_detected"] == pytest.approx(0.5) and total["latency_ms"]["p50"] == pytest.approx(200.0)
    # forward 1.0 - 0.2 - 0.1 - 0.1 = 0.6 s over the 2 frames of the timed batches: 300 ms each.
    assert total["cpu_ms_per_frame"] == pytest.approx({"decode": 50.0, "preprocess": 50.0, "forward": 300.0,
                                                       "postprocess": 50.0, "cpu": 450.0})
    assert total["cpu_s"]["forward"] == pytest.approx(0.6)


def test_overlap_with_the_window():
    assert overlap_s(1.0, 3.0, (2.0, 5.0)) == 1.0
    assert overlap_s(0.0, 1.0, (2.0, 5.0)) == 0.0
    assert overlap_s(3.0, 4.0, (2.0, 5.0)) == 1.0
