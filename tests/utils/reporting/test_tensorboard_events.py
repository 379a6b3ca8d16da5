"""What a run's TensorBoard events are made of (utils/reporting/tensorboard_events.py): hparams spelled as the YAML
spells them, each step's timed batches in running order, images downscaled keeping their aspect, summary.json as a
block the text tab shows as is."""
from pathlib import Path

import numpy as np

from utils.reporting.tensorboard_events import downscaled, hparam_values, step_series, summary_markdown


def test_step_series_takes_timed_batches_in_running_order():
    rows = [{"step": "forward", "pass_kind": "warmup", "ms": 9.0}, {"step": "forward", "pass_kind": "timed", "ms": 2.0},
            {"step": "load", "pass_kind": "timed", "ms": 1.0}, {"step": "forward", "pass_kind": "timed", "ms": 3.0}]
    assert step_series(rows) == {"forward": [2.0, 3.0], "load": [1.0]}


def test_downscaled_keeps_the_aspect_and_never_enlarges():
    assert downscaled(np.zeros((600, 960, 3), np.uint8), 480).shape == (300, 480, 3)
    assert downscaled(np.zeros((100, 50, 3), np.uint8), 480).shape == (100, 50, 3)


def test_hparams_spell_null_and_booleans_as_the_yaml_does():
    assert hparam_values({"a": None, "b": True, "c": 3, "d": "x"}) == {"a": "null", "b": "true", "c": 3, "d": "x"}


def test_summary_json_is_one_indented_block_for_the_text_tab():
    text = summary_markdown({"status": "complete", "run_dir": Path("outputs/r")})
    assert text.splitlines() == ["    {", '      "status": "complete",', '      "run_dir": "outputs/r"', "    }"]
