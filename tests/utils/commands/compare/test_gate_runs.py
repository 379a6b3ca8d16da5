"""utils.commands.compare.gate_runs: the regression gate's figures read out of two finished runs (latency, throughput,
map_drop, peak_memory), and the checks that the two runs may be gated at all.

Tested on tiny hand-written run directories (summary.json and steps_timer.csv only): figures computed by hand
from their batches and summary values, and a GateError naming the run, the missing figure and the fix for each
kind of run the gate cannot judge."""
import json

import pytest

from utils.commands.compare.gate_runs import GateError, check_comparable, contention_notes, gate_figures
from utils.storage.finished_run import FinishedRun
from utils.storage import layout

HEADER = "step,parent,pass_kind,pass_index,batch,images,ms,warmup,start_s,end_s,cold_shape\n"


def write_run(folder, summary=None, pipeline_ms=(10.0, 10.0, 10.0), images=2) -> FinishedRun:
    """A run directory: summary.json (model yolov7-tiny unless given) and one timed pipeline row per batch."""
    folder.mkdir()
    (folder / layout.SUMMARY).write_text(json.dumps({"model": "yolov7-tiny", **(summary or {})}))
    rows = [f"pipeline,run,timed,0,{batch},{images},{ms},False,0,0,False\n" for batch, ms in enumerate(pipeline_ms)]
    (folder / layout.STEPS_TIMER).write_text(HEADER + "".join(rows))
    return FinishedRun(folder)


def test_latency_is_the_median_ms_per_image(tmp_path):
    base = write_run(tmp_path / "a", pipeline_ms=(10.0, 12.0, 14.0))
    new = write_run(tmp_path / "b", pipeline_ms=(20.0, 24.0, 28.0))
    [figure] = gate_figures(base, new, ("latency",))
    assert (figure.base, figure.new, figure.change) == (6.0, 12.0, 100.0)


def test_throughput_of_single_stream_runs_is_images_over_time(tmp_path):
    base = write_run(tmp_path / "a", pipeline_ms=(10.0, 10.0, 20.0))
    new = write_run(tmp_path / "b", pipeline_ms=(20.0, 20.0, 40.0))
    [figure] = gate_figures(base, new, ("throughput",))
    assert figure.base == pytest.approx(150.0)  # 6 images in 40 ms
    assert figure.new == pytest.approx(75.0)
    assert figure.change == pytest.approx(50.0)


def test_throughput_under_loadgen_is_its_one_rate(tmp_path):
    scenario = {"name": "offline", "result": {"samples_per_s": 40.0}}
    base = write_run(tmp_path / "a", {"scenario": scenario})
    new = write_run(tmp_path / "b", {"scenario": dict(scenario, result={"samples_per_s": 30.0})})
    [figure] = gate_figures(base, new, ("throughput",))
    assert (figure.name, figure.base, figure.new, figure.change) == ("offline samples/s", 40.0, 30.0, 25.0)
    assert figure.interval is None


def test_a_loadgen_run_without_its_rate_cannot_be_gated_on_throughput(tmp_path):
    base = write_run(tmp_path / "a", {"scenario": {"name": "server", "result": {"samples_per_s": 40.0}}})
    new = write_run(tmp_path / "b", {"scenario": {"name": "server", "result": {}}})
    with pytest.raises(GateError, match=r"--metric throughput: run b \(.*\) has no LoadGen samples/s .*gate on a "
                                        "metric both runs measured"):
        gate_figures(base, new, ("throughput",))


def test_peak_memory_prefers_pss_and_falls_back_to_rss(tmp_path):
    base = write_run(tmp_path / "a", {"memory": {"peak_pss_mib": 100.0, "peak_rss_mib": 120.0}})
    new = write_run(tmp_path / "b", {"memory": {"peak_rss_mib": 150.0}})
    [figure] = gate_figures(base, new, ("peak_memory",))
    assert (figure.name, figure.base, figure.new, figure.change) == ("peak memory (peak_rss_mib)", 120.0, 150.0, 25.0)


def test_peak_memory_of_a_run_without_sampling_names_the_setting(tmp_path):
    base = write_run(tmp_path / "a", {"memory": {"peak_rss_mib": 120.0}})
    new = write_run(tmp_path / "b")
    with pytest.raises(GateError, match="run b .*memory sampling was off: benchmark.memory.enabled"):
        gate_figures(base, new, ("peak_memory",))


def accuracy(map_50_95, source="labels/", low=None, high=None, reference="torch fp32"):
    found = {"map_50_95": map_50_95, "ground_truth": {"source": source}, "reference": {"name": reference}}
    if low is not None:
        found["drop"] = {"interval": {"low": low, "high": high}}
    return {"accuracy": found}


def test_map_drop_is_in_points_with_the_intervals_combined_at_their_widest(tmp_path):
    base = write_run(tmp_path / "a", accuracy(0.50, low=0.00, high=0.01))
    new = write_run(tmp_path / "b", accuracy(0.45, low=0.04, high=0.06))
    [figure] = gate_figures(base, new, ("map_drop",))
    assert figure.change == pytest.approx(5.0)
    assert (figure.interval.low, figure.interval.high) == pytest.approx((3.0, 6.0))


def test_map_drop_against_different_references_has_no_interval(tmp_path):
    base = write_run(tmp_path / "a", accuracy(0.50, low=0.00, high=0.01))
    new = write_run(tmp_path / "b", accuracy(0.45, low=0.04, high=0.06, reference="other"))
    [figure] = gate_figures(base, new, ("map_drop",))
    assert figure.interval is None


def test_map_drop_needs_both_runs_scored_on_the_same_labels(tmp_path):
    base = write_run(tmp_path / "a", accuracy(0.50))
    with pytest.raises(GateError, match=r"run c .*no mAP \(no accuracy pass: give dataset.labels"):
        gate_figures(base, write_run(tmp_path / "c"), ("map_drop",))
    with pytest.raises(GateError, match=r"different ground truth \(labels/ vs coco.json\)"):
        gate_figures(base, write_run(tmp_path / "b", accuracy(0.45, source="coco.json")), ("map_drop",))


def test_a_run_without_timed_batches_cannot_be_gated_on_latency(tmp_path):
    base = write_run(tmp_path / "a")
    new = write_run(tmp_path / "b", pipeline_ms=())
    with pytest.raises(GateError, match="run b .*has no timed batches in its steps_timer.csv"):
        gate_figures(base, new, ("latency",))


@pytest.mark.parametrize("summary, what", [({"model": "yolov7"}, "model"), ({"scenario": {"name": "offline"}},
                                                                              "scenario")])
def test_runs_of_another_model_or_scenario_are_refused_naming_both(tmp_path, summary, what):
    base, new = write_run(tmp_path / "a"), write_run(tmp_path / "b", summary)
    with pytest.raises(GateError, match=f"the runs differ in {what} .*pass a baseline run of"):
        check_comparable(base, new)


def test_contention_notes_name_each_run_other_processes_slowed(tmp_path):
    quiet = write_run(tmp_path / "a", {"contention": {"other_processes_cpu_share": 0.05}})
    busy = write_run(tmp_path / "b", {"contention": {"other_processes_cpu_share": 0.25}})
    assert contention_notes(quiet, quiet) == []
    [note] = contention_notes(quiet, busy)
    assert note.startswith("note: other processes used 25% of the cores during the timed passes of b:")
