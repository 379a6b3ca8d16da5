"""A camera run's tracks in trace.json, from the per-frame table."""
from utils.scenarios.cameras.trace import PROCESS, camera_events, with_cameras


def _row(stream, outcome, batch="", **times):
    return {"stream": stream, "measured": "True", "outcome": outcome, "batch": batch, "batch_frames": 2,
            "frame": 3, "latency_ms": "250.0", **{key: str(value) for key, value in times.items()}}


def test_each_camera_gets_a_track_of_its_batches_drops_and_latency():
    rows = [_row("cam0", "detected", 1, arrival_s=1.0, detect_start_s=1.1, detect_end_s=1.25),
            _row("cam1", "detected", 1, arrival_s=1.0, detect_start_s=1.1, detect_end_s=1.25),
            _row("cam1", "dropped", arrival_s=1.05, dropped_s=1.12),
            dict(_row("cam0", "detected", 0, arrival_s=0.5, detect_start_s=0.6, detect_end_s=0.7), measured="False")]
    events = camera_events(rows, ["cam0", "cam1"])
    slices = [(event["tid"], event["ts"], event["dur"]) for event in events if event["ph"] == "X"]
    assert [(tid, round(ts), round(dur)) for tid, ts, dur in slices] == [(1, 1_100_000, 150_000),
                                                                        (2, 1_100_000, 150_000)]
    assert [(event["tid"], round(event["ts"])) for event in events if event["ph"] == "i"] == [(2, 1_120_000)]
    assert [event["name"] for event in events if event["ph"] == "C"] == ["cam0 latency_ms", "cam1 latency_ms"]
    trace = with_cameras(None, events, ["cam0", "cam1"], 0.0)
    names = {event["args"]["name"] for event in trace["traceEvents"] if event["ph"] == "M"}
    assert {PROCESS, "cam0", "cam1"} <= names
