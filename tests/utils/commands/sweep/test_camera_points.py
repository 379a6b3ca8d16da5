"""Camera runs as sweep points: ranked by frames/s detected apart from single_stream (never called LoadGen's or
INVALID), their console line, and a file's reference runtime read as the reference itself."""
import json

from utils.commands.sweep.answer import PointFigures, choose
from utils.commands.sweep.figures import agreement_of, point_line
from utils.storage.finished_run import FinishedRun


def camera_point(name, fps, p99=80.0, drop=0.0):
    return PointFigures(name, {"cameras.count": name}, 30.0, 33.0, "reference", (30.0,) * 3, scenario="cameras",
                        p99_ms=p99, frames_per_s=fps, drop_share=drop)


def test_camera_points_are_ranked_by_frames_per_second_detected():
    answer = choose([camera_point("1", 15.0), camera_point("4", 41.5, p99=230.0, drop=0.3)])
    ranking = answer["by_scenario"]["cameras"]
    assert [row["point"] for row in ranking["ranking"]] == ["4", "1"]
    assert "cameras: best 4" in answer["statement"] and "INVALID" not in answer["statement"]


def test_a_camera_points_line_says_what_its_cameras_were_served():
    line = point_line(camera_point("2", 29.25, p99=120.5, drop=0.125))
    assert "cameras 29.25 frames/s detected, latency p99 120.5 ms, dropped 12.5%" in line and "LoadGen" not in line


def test_a_files_reference_runtime_is_the_reference(tmp_path):
    """ONNX Runtime at fp32 runs an .onnx file as exported: the answer the others are checked against."""
    def run(backend):
        folder = tmp_path / backend
        folder.mkdir()
        (folder / "summary.json").write_text(json.dumps({"model": "/models/x.onnx",
                                                         "runtime": {"backend": backend, "precision": "fp32"}}))
        return FinishedRun(folder)
    assert agreement_of(run("onnxruntime")) == "reference"
    assert agreement_of(run("openvino")) == "unchecked"
