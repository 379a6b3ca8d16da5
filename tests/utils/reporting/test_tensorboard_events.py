"""A camera run's latency series for TensorBoard, from cameras_frames.csv's rows."""
from utils.reporting.tensorboard_events import camera_series


def row(stream, arrival, latency, measured=True):
    return {"stream": stream, "measured": measured, "arrival_s": f"{arrival:.6f}", "latency_ms": latency}


def test_each_cameras_measured_frames_detected_in_arrival_order():
    rows = [row("cam1", 2.5, "30.0"), row("cam0", 2.0, "10.0"), row("cam0", 1.0, "99.0", measured=False),
            row("cam0", 2.2, ""), row("cam0", 3.0, "12.5")]
    assert camera_series(rows) == {"cam0": [(0.0, 10.0), (1.0, 12.5)], "cam1": [(0.5, 30.0)]}
    assert camera_series([row("cam0", 1.0, "", measured=True)]) == {}
