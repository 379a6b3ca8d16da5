"""TensorBoard events and MLflow tracking of a real tiny run, read back with TensorBoard's EventAccumulator and
MLflow's own client from a real sqlite store."""
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import plugin_data_pb2

from benchmark import main
from tests.support.paths import ROOT
from utils.config.schema import load_config
from utils.core.errors import ExitStatus
from utils.assembly.composition import Benchmark, Outcome
from utils.core.interruption import RunStops
from utils.tracking.mlflow_step import log_to_mlflow
from utils.tracking.mlflow_runs import TrackingError, log_run_directory, sweep_run
from utils.storage.run_directory import RunDirectory

pytestmark = pytest.mark.slow  # a whole run logged to TensorBoard and MLflow

CONFIG = ROOT / "configs" / "samples_tiny.yaml"
TINY = ["--config", str(CONFIG), "--set", f"dataset.path={ROOT / 'datasets' / 'samples'}",
        "--set", "preprocess.img_size=128", "--set", "dataset.limit=3", "--set", "benchmark.repeats=1",
        "--set", "benchmark.layer_timing=false", "--set", "benchmark.profiler=true", "--set", "outputs.plots=false",
        "--set", "outputs.tensorboard=true"]


@pytest.fixture(scope="module")
def tracked(tmp_path_factory):
    """One run with TensorBoard on, logged by the benchmark itself to a sqlite store."""
    base = tmp_path_factory.mktemp("tracked")
    uri = f"sqlite:///{base / 'store' / 'mlflow.db'}"
    code = main(TINY + ["--set", f"run.output_dir={base / 'outputs'}", "--set", "run.id=trk",
                        "--set", f"outputs.mlflow.tracking_uri={uri}", "--set", "outputs.mlflow.experiment=tests"])
    from mlflow.tracking import MlflowClient

    return code, base / "outputs" / "trk", uri, MlflowClient(tracking_uri=uri)


def _events(run_dir: Path) -> EventAccumulator:
    events = EventAccumulator(str(run_dir / "tensorboard"), size_guidance={"scalars": 0, "images": 0, "tensors": 0})
    events.Reload()
    return events


def test_tensorboard_holds_steps_memory_images_text_and_hparams(tracked):
    code, run_dir, _, _ = tracked
    assert code == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["tensorboard"] == "tensorboard"
    events = _events(run_dir)
    timed = pd.read_csv(run_dir / "steps_timer.csv").query("pass_kind == 'timed'")
    for step in ("forward", "pipeline", "preprocess"):
        expected = timed[timed["step"] == step]["ms"].tolist()
        scalars = events.Scalars(f"step_ms/{step}")
        assert [s.step for s in scalars] == list(range(len(expected))) and len(expected) == 2  # 3 images, batch 2
        assert [s.value for s in scalars] == pytest.approx(expected, rel=1e-6)
    rss = events.Scalars("memory/rss_mib")
    assert len(rss) == len(pd.read_csv(run_dir / "memory.csv")) and all(s.value > 0 for s in rss)
    headline = events.Scalars("headline/images_per_s")
    assert headline[0].value == pytest.approx(summary["pipeline_latency"]["images_per_s"], rel=1e-6)
    assert "headline/p90_ms_per_image" in events.Tags()["scalars"]

    images = events.Tags()["images"]
    assert len(images) == 3 and "images/dog.jpg" in images
    assert max(events.Images("images/dog.jpg")[0].width, events.Images("images/dog.jpg")[0].height) == 480

    text = events.Tensors("summary/text_summary")[0].tensor_proto.string_val[0].decode()
    assert '"run_id": "trk"' in text and '"random_weights": true' in text

    start = plugin_data_pb2.HParamsPluginData.FromString(
        events.SummaryMetadata("_hparams_/session_start_info").plugin_data.content).session_start_info
    assert start.hparams["model.arch"].string_value == "yolov7-tiny"
    assert start.hparams["preprocess.img_size"].number_value == 128
    assert start.hparams["model.weights"].string_value == "null"
    assert start.hparams["benchmark.profiler"].string_value == "true"
    experiment = plugin_data_pb2.HParamsPluginData.FromString(
        events.SummaryMetadata("_hparams_/experiment").plugin_data.content).experiment
    assert "headline/images_per_s" in [metric.name.tag for metric in experiment.metric_infos]


def test_profiled_trace_is_where_the_profiler_plugin_looks(tracked):
    _, run_dir, _, _ = tracked
    copies = list((run_dir / "tensorboard").glob("*.pt.trace.json"))
    assert [c.name for c in copies] == ["profiled_batch.pt.trace.json"]
    assert copies[0].read_bytes() == (run_dir / "trace.json").read_bytes()
    assert not list(run_dir.glob(".tensorboard*"))  # the staging folder was renamed into place


def test_run_logged_with_params_metrics_tags_and_artifacts(tracked):
    _, run_dir, _, client = tracked
    summary = json.loads((run_dir / "summary.json").read_text())
    experiment = client.get_experiment_by_name("tests")
    [run] = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED" and run.info.run_name == "trk"
    params, metrics, tags = run.data.params, run.data.metrics, run.data.tags
    assert params["model.arch"] == "yolov7-tiny" and params["dataset.batch_size"] == "2"
    assert params["model.weights"] == "null" and params["outputs.mlflow.experiment"] == "tests"
    assert metrics["images_per_s"] == pytest.approx(summary["pipeline_latency"]["images_per_s"])
    assert metrics["forward_p50_ms_per_image"] == pytest.approx(summary["forward"]["p50_ms_per_image"])
    assert metrics["peak_rss_mib"] == pytest.approx(summary["memory"]["peak_rss_mib"])
    assert not any(name.startswith("joules") for name in metrics)  # no RAPL here: absent, never zero
    assert tags["arch"] == "yolov7-tiny" and tags["runtime_backend"] == "torch" and tags["precision"] == "fp32"
    assert tags["weights_kind"] == "random" and tags["detbench_run_id"] == "trk" and tags["cpu_model"]
    artifacts = {artifact.path for artifact in client.list_artifacts(run.info.run_id)}
    assert {"summary.json", "config.yaml", "steps_timer.csv", "tensorboard", "images"} <= artifacts
    assert Path(experiment.artifact_location.removeprefix("file://")).parent == Path(tracked[2][len("sqlite:///"):]).parent


def test_sweep_points_are_children_of_the_sweep_run(tracked, tmp_path):
    _, run_dir, uri, client = tracked
    second = tmp_path / "trk2"
    shutil.copytree(run_dir, second)
    summary = json.loads((second / "summary.json").read_text())
    (second / "summary.json").write_text(json.dumps(dict(summary, run_id="trk2")))
    with sweep_run(uri, "sweep-a", experiment="sweeps", params={"sweep": {"dataset.batch_size": [1, 2]}}) as parent:
        children = {log_run_directory(point, uri, "sweeps", parent_run_id=parent) for point in (run_dir, second)}
    experiment = client.get_experiment_by_name("sweeps")
    found = client.search_runs([experiment.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent}'")
    assert {run.info.run_id for run in found} == children and len(children) == 2
    assert {run.info.run_name for run in found} == {"trk", "trk2"}
    parent_run = client.get_run(parent)
    assert parent_run.info.status == "FINISHED" and parent_run.data.params["sweep.dataset.batch_size"] == "[1, 2]"


def test_the_logging_step_says_where_the_run_went_and_asks_for_no_exit_status(tracked):
    _, run_dir, uri, client = tracked
    config = load_config(CONFIG, [f"outputs.mlflow.tracking_uri={uri}", "outputs.mlflow.experiment=again"])
    settings = config.outputs.mlflow
    said = []
    with RunStops(said.append).handled() as stops:
        assert log_to_mlflow(run_dir, settings, stops, said.append) is None
    assert said[0] == f"Logging the run to MLflow at {uri} (experiment again)..."
    run_id = said[-1].removeprefix("MLflow: logged as run ").split()[0]
    assert client.get_run(run_id).info.status == "FINISHED"


def test_unreachable_store_leaves_the_run_and_says_why(tracked, tmp_path, monkeypatch):
    _, run_dir, _, _ = tracked
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    with pytest.raises(TrackingError, match=r"MLflow at http://127\.0\.0\.1:9"):
        log_run_directory(run_dir, "http://127.0.0.1:9", "tests")  # the discard port: nothing listens
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    bad_uri = f"sqlite:///{blocker}/store/mlflow.db"
    config = load_config(CONFIG, [f"outputs.mlflow.tracking_uri={bad_uri}", f"run.output_dir={run_dir.parent}",
                                  "run.id=trk"])
    said = []
    benchmark = Benchmark(config, str(CONFIG), console=said.append)
    benchmark.run_dir = RunDirectory(run_dir.parent, "trk")
    before = sorted(path.name for path in run_dir.iterdir())
    outcome = Outcome({"status": "complete"}, ExitStatus.OK, "")
    with RunStops(said.append).handled() as stops:
        benchmark._track(stops, outcome)
    assert outcome.exit_status == ExitStatus.OK
    assert any("MLflow logging failed" in line and bad_uri in line and "log_run_directory(" in line for line in said)
    assert sorted(path.name for path in run_dir.iterdir()) == before
