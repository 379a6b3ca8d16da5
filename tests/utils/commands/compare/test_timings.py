"""Steps, layers and scenario figures of two runs, B against A (utils/commands/compare/timings.py): medians per image
with the ratio's interval where per-batch samples exist, a note where they do not, layers joined on their path
largest change first, and LoadGen's figures side by side."""
import json

import pytest

from utils.commands.compare.timings import NO_LAYER_SAMPLES, compare_samples, layer_rows, scenario_rows, step_rows
from utils.storage.finished_run import FinishedRun

STEPS = "step,parent,pass_kind,pass_index,batch,images,ms,warmup,start_s,end_s,cold_shape\n"


def run(folder, name, forward_ms, summary=None, layers=None):
    path = folder / name
    path.mkdir()
    (path / "summary.json").write_text(json.dumps({"status": "complete", **(summary or {})}))
    rows = [f"forward,pipeline,timed,0,{batch},2,{ms},False,0,0,False" for batch, ms in enumerate(forward_ms)]
    rows.append("forward,pipeline,warmup,0,0,2,999,True,0,0,False")  # never compared
    (path / "steps_timer.csv").write_text(STEPS + "\n".join(rows) + "\n")
    if layers is not None:
        (path / "layer_timer.csv").write_text("path,self_ms\n" + "".join(f"{p},{ms}\n" for p, ms in layers.items()))
    return FinishedRun(path)


def test_medians_and_their_ratio_with_an_interval_only_from_enough_batches():
    row = compare_samples("step", "forward", [10.0, 11.0, 12.0, 10.5], [20.0, 22.0, 24.0, 21.0])
    assert (row["a"], row["b"], row["difference"]) == (10.75, 21.5, 10.75)
    assert row["ci_low"] > 1 and row["significant"] is True and row["ratio"] == pytest.approx(2.0)
    few = compare_samples("step", "nms", [1.0, 2.0], [2.0, 4.0])
    assert few["ratio"] == 2.0 and few["ci_low"] is None and few["note"].startswith("no interval: fewer than 3")
    assert compare_samples("step", "decode", [], [1.0])["note"] == "only in B"


def test_steps_compare_per_image_over_the_timed_passes(tmp_path):
    a = run(tmp_path, "a", [20.0, 22.0, 24.0])  # per image: 10, 11, 12
    b = run(tmp_path, "b", [20.0, 22.0, 24.0])
    (forward,) = step_rows(a, b)
    assert (forward["name"], forward["a"], forward["b"], forward["n_a"]) == ("forward", 11.0, 11.0, 3)
    assert forward["significant"] is False


def test_layers_join_on_their_path_largest_change_first(tmp_path):
    a = run(tmp_path, "a", [1.0], {"layer_timing": {"images": 2}}, {"model.0": 4.0, "model.1": 2.0, "gone": 1.0})
    b = run(tmp_path, "b", [1.0], {"layer_timing": {"images": 2}}, {"model.0": 4.5, "model.1": 6.0, "new": 2.0})
    rows = layer_rows(a, b)
    assert [row["name"] for row in rows] == ["model.1", "model.0", "gone", "new"]
    assert (rows[0]["a"], rows[0]["b"], rows[0]["ratio"]) == (1.0, 3.0, 3.0) and rows[0]["note"] == NO_LAYER_SAMPLES
    assert rows[2]["note"] == "only in A" and rows[3]["note"] == "only in B"
    without = run(tmp_path, "c", [1.0])
    assert layer_rows(a, without) == [{"section": "layer", "name": "", "note": "no layer_timer.csv in c (layer "
                                                                            "timing off or skipped)"}]


def test_a_scenarios_figures_side_by_side(tmp_path):
    offline = {"scenario": {"name": "offline", "result": {"samples_per_s": 40.0, "valid": True}}}
    a = run(tmp_path, "a", [1.0], offline)
    b = run(tmp_path, "b", [1.0], {"scenario": {"name": "offline", "result": {"samples_per_s": 50.0, "valid": True}}})
    rows = {row["name"]: row for row in scenario_rows(a, b)}
    figure = next(row for name, row in rows.items() if "samples_per_s" in name)
    assert (figure["a"], figure["b"], figure["difference"]) == (40.0, 50.0, 10.0)
    assert figure["ratio"] == pytest.approx(1.25) and figure["note"] == "scenario offline vs offline"
