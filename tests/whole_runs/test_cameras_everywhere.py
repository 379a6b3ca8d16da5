"""Camera runs in everything else that reads runs (issue 60 item 5): a sweep over the number of cameras carries their
figures in sweep.csv and ranks them, MLflow logs each point's camera figures and TensorBoard each camera's latency,
compare shows frames/s, p99, drops and CPU per frame and gates on p99 and fps, and each run leaves an annotated clip
a person opens, drawn after its window."""
import json

import av
import pandas as pd
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from benchmark import main
from tests.support.clips import moving_shapes, write_clip
from tests.support.paths import CONFIGS
from utils.commands.sweep.figures import CAMERA_FIGURES

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """One and two cameras of a small clip, a sweep point each, logged to MLflow and TensorBoard."""
    folder = tmp_path_factory.mktemp("cameras_sweep")
    clip = write_clip(folder / "shapes.mp4", moving_shapes(160, 96, 30), fps=15)
    sets = [f"dataset.path={clip}", "preprocess.img_size=64", "dataset.batch_size=1", "runtime.threads=1",
            "cameras.duration_s=5", "cameras.warmup_s=0.5", "cameras.clip_frames=12", "outputs.plots=false",
            "outputs.report=false", "benchmark.memory.enabled=false", "outputs.tensorboard=true",
            f"outputs.mlflow.tracking_uri=sqlite:///{folder / 'mlflow.db'}", f"run.output_dir={folder}",
            "run.id=cams"]
    code = main(["--config", str(CONFIGS / "cameras.yaml"), *(part for item in sets for part in ("--set", item)),
                 "--sweep", "cameras.count=1,2"])
    return code, folder / "cams"


def test_the_sweep_carries_the_camera_figures_and_ranks_the_points_by_frames_per_second(sweep):
    code, folder = sweep
    assert code == 0
    table = pd.read_csv(folder / "sweep.csv")
    assert list(table["scenario"]) == ["cameras", "cameras"]
    assert table[list(CAMERA_FIGURES)].notna().all().all()
    assert (table["cameras_fps_detected"] > 0).all() and (table["cameras_latency_p99_ms"] > 0).all()
    answer = json.loads((folder / "sweep.json").read_text())["answer"]
    ranking = answer["by_scenario"]["cameras"]["ranking"]
    fps = [row["frames_per_s"] for row in ranking]
    assert fps == sorted(fps, reverse=True) and len(fps) == 2


def test_mlflow_logs_each_points_camera_figures(sweep):
    from mlflow.tracking import MlflowClient

    _, folder = sweep
    client = MlflowClient(tracking_uri=f"sqlite:///{folder.parent / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("detbench").experiment_id])
    children = [run for run in runs if run.data.tags.get("mlflow.parentRunId")]
    assert len(children) == 2
    for run in children:
        summary = json.loads((folder / run.info.run_name / "summary.json").read_text())
        assert run.data.metrics["cameras_fps_detected"] == pytest.approx(summary["cameras"]["total"]["fps_detected"])
        assert "cameras_latency_p99_ms" in run.data.metrics and "cameras_forward_cpu_ms_per_frame" in run.data.metrics


def test_tensorboard_holds_each_cameras_latency_from_arrival(sweep):
    _, folder = sweep
    run = folder / "cameras.count=2"
    events = EventAccumulator(str(run / "tensorboard"), size_guidance={"scalars": 0})
    events.Reload()
    frames = pd.read_csv(run / "cameras_frames.csv").query("measured and outcome == 'detected'")
    for stream in ("cam0", "cam1"):
        scalars = events.Scalars(f"camera_latency_ms/{stream}")
        expected = frames[frames["stream"] == stream].sort_values("arrival_s")["latency_ms"].tolist()
        assert [s.value for s in scalars] == pytest.approx(expected, rel=1e-5)
    assert "headline/cameras_drop_share" in events.Tags()["scalars"]


def test_each_run_leaves_an_annotated_clip_of_its_first_camera(sweep):
    _, folder = sweep
    run = folder / "cameras.count=1"
    clip = json.loads((run / "summary.json").read_text())["cameras"]["clip"]
    assert clip == {"path": "cameras.mp4", "frames": 12, "stream": "cam0", "encoded": True}
    with av.open(str(run / "cameras.mp4")) as container:
        decoded = list(container.decode(video=0))
    assert len(decoded) == 12 and decoded[0].width == 160
    stamps = [float(picture.pts * picture.time_base) for picture in decoded]
    assert stamps == sorted(stamps) and stamps[0] == 0.0


def test_compare_shows_the_camera_figures_and_the_gate_judges_p99_and_fps(sweep, tmp_path, capsys):
    _, folder = sweep
    one, two = folder / "cameras.count=1", folder / "cameras.count=2"
    code = main(["compare", str(one), str(two), "--out", str(tmp_path / "c1"), "--fail-above", "1000",
                 "--metric", "p99", "--metric", "fps"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Camera figures" in out and "cameras_fps_detected" in out and "cameras_drop_share" in out
    assert "cameras_decode_cpu_ms_per_frame" in out
    assert "gate p99: ok: latency p99 from arrival base" in out and "gate fps: ok: frames/s detected base" in out
    assert "95% interval of the change" in out  # both drawn from the windows' seconds
    code = main(["compare", str(one), str(two), "--out", str(tmp_path / "c3"), "--fail-above", "5",
                 "--metric", "throughput"])
    assert code == 2 and "gate on --metric fps" in capsys.readouterr().err
