"""plots/cameras.png from a hand-made cameras_frames.csv."""
import pandas as pd

from utils.scenarios.cameras.plots import plot_cameras


def test_the_cameras_plot_draws_measured_frames_and_nothing_without_them(tmp_path):
    rows = [{"stream": f"cam{camera}", "frame": index, "measured": index > 0, "arrival_s": 1.0 + index / 15,
             "outcome": "dropped" if index % 3 == 0 else "detected", "detect_end_s": 1.2 + index / 15,
             "dropped_s": 1.1 + index / 15, "latency_ms": 200.0} for camera in range(2) for index in range(30)]
    assert plot_cameras(pd.DataFrame(rows), tmp_path / "cameras.png").stat().st_size > 1000
    warm_up_only = pd.DataFrame(rows).assign(measured=False)
    assert plot_cameras(warm_up_only, tmp_path / "none.png") is None and not (tmp_path / "none.png").exists()
