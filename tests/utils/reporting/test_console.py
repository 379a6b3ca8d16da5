"""What the console shows at the end of a run (utils/reporting/console.py): the summary's lines from summary.json,
ending in the headline; LoadGen's verdict and figure where a scenario ran; the accuracy line with its drop."""
from utils.record.run_record import RunIdentity, RunRecord, Status
from utils.reporting.console import accuracy_line, format_summary, headline, scenario_line
from utils.reporting.summary import summary_document


def identity() -> RunIdentity:
    return RunIdentity(run_id="r1", config_file="x.yaml", family="yolo", arch="yolov7-tiny",
                       weights="random (seed 0)", random_weights=True, seed=0, img_size=160, batch_size=2,
                       runtime={"backend": "torch", "precision": "fp32", "threads": 2},
                       step_order=("pipeline", "load", "forward"))


LATENCY = {"images_per_s": 24.82, "ms_per_image": 40.29, "p50_ms_per_image": 39.0, "mean_images_per_batch": 2.0}
SUMMARY = {"model": "yolov7-tiny", "runtime": {"backend": "torch", "precision": "fp32"}, "threads": 2,
           "pipeline_latency": LATENCY}
SCENARIO = {"name": "offline", "driver": "mlperf_loadgen", "logs": {"summary": "loadgen/mlperf_log_summary.txt"},
            "result": {"valid": False, "reason": "min duration not met", "samples_per_s": 31.5,
                       "latency_ms": {"p50": 60.0, "p90": 70.25, "p99": 80.0}}}


def test_the_headline_is_images_per_second_or_the_scenarios_own_figure():
    assert headline(SUMMARY) == ("yolov7-tiny on torch fp32, 2 thread(s): 24.82 images/s, 40.3 ms/image "
                                 "(p50 39.0 ms/image, 2 images per batch)")
    streams = {**SUMMARY, "scenario": SCENARIO, "pipeline_latency": {**LATENCY, "streams": 2}}
    assert "offline 31.50 samples/s (LoadGen); each of 2 streams 40.3 ms/image" in headline(streams)
    multi = {**SUMMARY, "scenario": {**SCENARIO, "name": "multi_stream"}}
    assert "multi_stream p99 query latency 80.0 ms (LoadGen); 40.3 ms/image" in headline(multi)


def test_loadgens_verdict_in_one_line():
    line = scenario_line(SCENARIO)
    assert line == ("  scenario offline under mlperf_loadgen: INVALID (min duration not met); 31.50 samples/s, "
                    "latency p50 60.0 ms p90 70.2 ms p99 80.0 ms (LoadGen's own files: "
                    "loadgen/mlperf_log_summary.txt)")
    assert "VALID;" in scenario_line({**SCENARIO, "result": {**SCENARIO["result"], "valid": True}})
    assert ": no result; n/a samples/s" in scenario_line({**SCENARIO, "result": None})


def test_the_accuracy_line_against_labels_or_the_reference_with_its_interval():
    labelled = {"images": 48, "ground_truth": {"format": "yolo"}, "map_50_95": 0.61234, "map_50": 0.9}
    assert accuracy_line(labelled) == "accuracy (48 images vs labels): mAP@0.5:0.95 0.6123, mAP@0.5 0.9000"
    against = {"images": 6, "ground_truth": {}, "map_50_95": 0.5, "map_50": 0.7, "reference": {"map_50_95": 0.52},
               "drop": {"map_50_95": 0.02, "interval": {"confidence": 0.95, "low": -0.01, "high": 0.05}}}
    assert accuracy_line(against).endswith("; reference 0.5200, drop +0.0200 (95% interval over images -0.0100 to "
                                           "+0.0500)")
    skipped = {"images": 0, "ground_truth": {"format": "coco"}, "not_scored": "no labelled image"}
    assert accuracy_line(skipped) == "accuracy (0 images vs labels): NOT SCORED: no labelled image"


def test_a_run_stopped_early_says_so_warns_and_ends_in_its_headline(tmp_path):
    record = RunRecord(identity())
    record.finish(Status.INTERRUPTED, "SIGINT")
    summary = summary_document(record)
    summary["warnings"] = ["runtime.threads 9 is more than the 2 CPU(s)"]
    lines = format_summary(summary, tmp_path).splitlines()
    assert lines[0] == "detbench run r1: interrupted (SIGINT)"
    assert lines[1] == "  model yolov7-tiny (unfused), weights: random (seed 0)"
    assert "WARNING: runtime.threads 9 is more than the 2 CPU(s)" in lines and f"outputs: {tmp_path}" in lines
    assert lines[-2] == "RANDOM WEIGHTS: timings are real, boxes are not" and lines[-1] == headline(summary)
