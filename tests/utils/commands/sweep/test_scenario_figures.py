"""Scenario figures where runs are compared: the sweep's answer ranks each scenario by its own figure, and
compare, MLflow and TensorBoard's headline figures carry LoadGen's verdict."""
import json

import pandas as pd
import pytest

from benchmark import main
from tests.support.paths import ROOT
from utils.commands.sweep.answer import PointFigures, choose
from utils.reporting.run_figures import headline_figures, scenario_figures
from utils.reporting.run_report import headline_cells


def _point(name, scenario, p50=10.0, valid=None, per_s=None, p99=None, agreement="reference"):
    return PointFigures(name, {"k": name}, p50, None, agreement, (p50,) * 3, scenario=scenario, scenario_valid=valid,
                        samples_per_s=per_s, p99_ms=p99)


def test_each_scenario_is_ranked_by_its_own_figure_and_single_stream_keeps_its_answer():
    points = [_point("ss-slow", "single_stream", p50=20.0), _point("ss-fast", "single_stream", p50=10.0),
              _point("off-a", "offline", valid=False, per_s=30.0), _point("off-b", "offline", valid=True, per_s=25.0),
              _point("srv-fast-invalid", "server", valid=False, per_s=9.0),
              _point("srv-valid", "server", valid=True, per_s=6.0), _point("srv-slow", "server", valid=True, per_s=4.0),
              _point("ms-a", "multi_stream", valid=False, p99=80.0), _point("ms-b", "multi_stream", valid=False, p99=50.0)]
    answer = choose(points)
    assert answer["fastest_equal"]["point"] == "ss-fast"
    by = answer["by_scenario"]
    assert [row["point"] for row in by["offline"]["ranking"]] == ["off-a", "off-b"]
    assert [row["point"] for row in by["server"]["ranking"]] == ["srv-valid", "srv-slow"]
    assert by["server"]["left_out"] == ["srv-fast-invalid"]
    assert [row["point"] for row in by["multi_stream"]["ranking"]] == ["ms-b", "ms-a"]
    assert "ss-fast" in answer["statement"] and "server: best srv-valid" in answer["statement"]
    assert "INVALID" in by["offline"]["statement"]  # off-a leads on samples/s and says it is not valid


def test_a_sweep_of_only_loadgen_scenarios_answers_by_them():
    answer = choose([_point("srv", "server", valid=False, per_s=3.0)])
    assert answer["fastest_equal"] is None
    assert answer["statement"] == "server: no point has a figure to rank (no server point met its latency bound)."


SUMMARY = {"pipeline_latency": {"images_per_s": 5.0},
           "scenario": {"name": "server", "result": {
               "valid": False, "samples_per_s": 4.5, "latency_ms": {"p50": 10.0, "p90": 20.0, "p99": 30.0},
               "early_stopping": {"estimates_ms": {"p90": 22.0}}}}}


def test_scenario_figures_reach_the_headline_figures_of_mlflow_and_tensorboard():
    assert scenario_figures(SUMMARY) == {"scenario_valid": 0.0, "scenario_samples_per_s": 4.5,
                                         "scenario_latency_p50_ms": 10.0, "scenario_latency_p90_ms": 20.0,
                                         "scenario_latency_p99_ms": 30.0, "scenario_early_stopping_p90_ms": 22.0}
    figures = headline_figures(SUMMARY)
    assert figures["scenario_samples_per_s"] == 4.5 and figures["images_per_s"] == 5.0
    assert scenario_figures({"pipeline_latency": {}}) == {}


def test_the_report_headline_leads_with_loadgens_verdict():
    cells = headline_cells(SUMMARY)
    assert cells[:3] == [("server (LoadGen)", "INVALID"), ("server samples/s", 4.5), ("server latency p99 ms", 30.0)]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    outputs = tmp_path_factory.mktemp("scenario_sweep")
    code = main(["--config", str(ROOT / "configs" / "samples_tiny.yaml"), "--set", "preprocess.img_size=64",
                 "--set", f"dataset.path={ROOT / 'datasets' / 'samples'}", "--set", "dataset.limit=3",
                 "--set", "benchmark.layer_timing=false", "--set", "outputs.plots=false",
                 "--set", "outputs.save_images=false", "--set", "benchmark.loadgen.min_duration_s=0.3",
                 "--set", f"run.output_dir={outputs}", "--set", "run.id=scenarios",
                 "--sweep", "benchmark.scenario=single_stream,offline"])
    return code, outputs / "scenarios"


@pytest.mark.slow
def test_a_sweep_over_scenarios_ranks_offline_apart_and_compare_shows_its_figures(sweep, tmp_path, capsys):
    code, folder = sweep
    assert code == 0
    table = pd.read_csv(folder / "sweep.csv")
    assert sorted(table["scenario"]) == ["offline", "single_stream"]
    offline = table[table["scenario"] == "offline"].iloc[0]
    assert offline["scenario_samples_per_s"] > 0
    answer = json.loads((folder / "sweep.json").read_text())["answer"]
    assert answer["fastest_equal"]["values"]["benchmark.scenario"] == "single_stream"
    assert answer["by_scenario"]["offline"]["ranking"][0]["samples_per_s"] == pytest.approx(
        offline["scenario_samples_per_s"])
    runs = {row["scenario"]: folder / row["run_dir"] for _, row in table.iterrows()}
    capsys.readouterr()
    assert main(["compare", str(runs["single_stream"]), str(runs["offline"]), "--out", str(tmp_path)]) == 0
    assert "LoadGen scenario figures (scenario single_stream vs offline" in capsys.readouterr().out
    rows = pd.read_csv(tmp_path / "compare.csv").query("section == 'scenario'").set_index("name")
    assert float(rows.loc["scenario_samples_per_s", "b"]) == pytest.approx(offline["scenario_samples_per_s"])
    assert pd.isna(rows.loc["scenario_samples_per_s", "a"])
    assert "LoadGen scenario figures" in (tmp_path / "compare.html").read_text()
