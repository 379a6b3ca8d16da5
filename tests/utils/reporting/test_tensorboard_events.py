"""What a run's TensorBoard events are made of (utils/reporting/tensorboard_events.py): hparams spelled as the YAML
spells them, each step's timed batches in running order, a camera run's latency series from cameras_frames.csv's
rows, images downscaled keeping their aspect, summary.json as a block the text tab shows as is."""
from pathlib import Path

import numpy as np

from utils.reporting.tensorboard_events import (camera_series, downscaled, hparam_values, step_series,
                                                summary_markdown)


def test_step_series_takes_timed_batches_in_running_order():
    rows = [{"step": "forward", "pass_kind": "warmup", "ms": 9.0}, {"step": "forward", "pass_kind": "timed", "ms": 2.0},
            {"step": "load", "pass_kind": "timed", "ms": 1.0}, {"step": "forward", "pass_kind": "timed", "ms": 3.0}]
    assert step_series(rows) == {"forward": [2.0, 3.0], "load": [1.0]}


def row(stream, arrival, latency, measured=True):
    return {"stream": stream, "measured": measured, "arrival_s": f"{arrival:.6f}", "latency_ms": latency}


def test_each_cameras_measured_frames_detected_in_arrival_order():
    rows = [row("cam1", 2.5, "30.0"), row("cam0", 2.0, "10.0"), row("cam0", 1.0, "99.0", measured=False),
            row("cam0", 2.2, ""), row("cam0", 3.0, "12.5")]
    assert camera_series(rows) == {"cam0": [(0.0, 10.0), (1.0, 12.5)], "cam1": [(0.5, 30.0)]}
    assert camera_series([row("cam0", 1.0, "", measured=True)]) == {}


def test_downscaled_keeps_the_aspect_and_never_enlarges():
    assert downscaled(np.zeros((600, 960, 3), np.uint8), 480).shape == (300, 480, 3)
    assert downscaled(np.zeros((100, 50, 3), np.uint8), 480).shape == (100, 50, 3)


def test_hparams_spell_null_and_booleans_as_the_yaml_does():
    assert hparam_values({"a": None, "b": True, "c": 3, "d": "x"}) == {"a": "null", "b": "true", "c": 3, "d": "x"}


def test_summary_json_is_one_indented_block_for_the_text_tab():
    text = summary_markdown({"status": "complete", "run_dir": Path("outputs/r")})
    assert text.splitlines() == ["    {", '      "status": "complete",', '      "run_dir": "outputs/r"', "    }"]
