"""A whole run with a measurement registered by the test (tests/support/fake_measurement.py): the harness, which
names no measurement, gives it the timed passes and every output a real one has."""
import json

import pandas as pd
import pytest

from benchmark import main
from tests.support import fake_measurement as fake
from tests.support.helpers import assert_png, quick_args


@pytest.mark.slow
def test_a_registered_measurement_is_measured_and_shown_like_the_real_ones(tmp_path, monkeypatch, capsys):
    fake.registered(monkeypatch)
    assert main(quick_args(160, "dataset.limit=4", "benchmark.repeats=2", "outputs.save_images=false", "profiling.kernels=false",
                           f"run.output_dir={tmp_path}", "run.id=fake")) == 0
    run_dir = tmp_path / "fake"
    summary = json.loads((run_dir / "summary.json").read_text())
    steps = pd.read_csv(run_dir / "steps_timer.csv")
    timed = steps[(steps["step"] == "pipeline") & (steps["pass_kind"] == "timed")]
    assert set(steps["pass_kind"]) > {"timed"}  # warm-up and the layer pass ran, and were not counted
    assert summary[fake.KEY] == {"status": "measured", "batches": len(timed)} and len(timed) == 4
    assert pd.read_csv(run_dir / fake.TABLE)["batch"].tolist() == list(range(len(timed)))
    assert "batches_seen.png" in summary["plots"]
    assert_png(run_dir / fake.PLOT)
    report = (run_dir / "report.html").read_text()
    assert 'id="batches"' in report and f"The fake measurement saw {len(timed)} batches." in report
    assert f"  batches seen: {len(timed)}" in capsys.readouterr().out.splitlines()
