"""User mistakes through the CLI: exit status 2 and one `error:` message naming the file or key, no traceback."""
import shutil
import struct
from pathlib import Path

import cv2
import pandas as pd
import pytest
import yaml

from benchmark import main
from tests.support.helpers import quick_args, run_benchmark
from tests.support.paths import ROOT

QUICK = quick_args(160)


def run_cli(tmp_path, capsys, *overrides: str) -> tuple[int, str]:
    code, _ = run_benchmark(QUICK, tmp_path / "outputs", *overrides)
    return code, capsys.readouterr().err


def assert_usage_error(code: int, err: str, *fragments: str) -> None:
    assert code == 2
    assert err.startswith("error: ") and "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def tiny_variant(tmp_path, edit) -> Path:
    definition = yaml.safe_load((ROOT / "models" / "definitions" / "yolov7-tiny.yaml").read_text())
    edit(definition)
    path = tmp_path / "variant.yaml"
    path.write_text(yaml.safe_dump(definition, sort_keys=False))
    return path


def test_binary_model_definition(tmp_path, capsys):
    path = tmp_path / "yolov7.yaml"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    code, err = run_cli(tmp_path, capsys, f"model.arch={path}")
    assert_usage_error(code, err, str(path), "not a text YAML model definition")


def test_detect_fed_one_tensor(tmp_path, capsys):
    def edit(definition):
        definition["anchors"] = definition["anchors"][:1]
        definition["head"][-1] = [-1, 1, "Detect", ["nc", "anchors"]]
    path = tiny_variant(tmp_path, edit)
    code, err = run_cli(tmp_path, capsys, f"model.arch={path}")
    assert_usage_error(code, err, str(path), "layer 77: Detect's 'from' must be a list of layers")


def test_absurd_channel_count(tmp_path, capsys):
    def edit(definition):
        for index in (2, 3, 4):
            definition["backbone"][index] = [-1, 1, "Conv", [1000000, 3, 1]]
    path = tiny_variant(tmp_path, edit)
    code, err = run_cli(tmp_path, capsys, f"model.arch={path}")
    assert_usage_error(code, err, str(path), "layer 2: Conv would have 1000000 output channels", "check c2")


@pytest.mark.slow
def test_png_renamed_as_weights(tmp_path, capsys):
    path = tmp_path / "yolov7-tiny.pt"
    path.write_bytes(cv2.imencode(".png", cv2.imread(str(ROOT / "datasets" / "samples" / "dog.jpg")))[1].tobytes())
    code, err = run_cli(tmp_path, capsys, f"model.weights={path}")
    assert_usage_error(code, err, str(path), "not a PyTorch checkpoint (looks like a PNG image",
                       "model.weights must point at a .pt file saved by torch.save")


@pytest.mark.slow
def test_checkpoint_of_the_other_arch_suggests_the_right_one(tmp_path, capsys):
    import torch

    from models import build_model

    path = tmp_path / "tiny_weights.pt"
    torch.save(build_model("yolov7-tiny").state_dict(), path)
    code, err = run_cli(tmp_path, capsys, f"model.weights={path}", "model.arch=yolov7")
    assert_usage_error(code, err, str(path), "set model.arch: yolov7-tiny (--set model.arch=yolov7-tiny)")
    assert err.index("--set model.arch=yolov7-tiny") < err.index("missing keys")  # the suggestion comes first


@pytest.mark.parametrize("override, fragments", [
    ("dataset.batch_size=true", ["dataset.batch_size: must be a whole number", "(from --set dataset.batch_size=true)"]),
    ("postprocess.max_det='4'", ["postprocess.max_det", "(got '4')", "(from --set postprocess.max_det='4')"]),
    ("postprocess.classes=[0, 2", ["--set 'postprocess.classes=[0, 2': the value '[0, 2' is not valid YAML"]),
])
def test_bad_set_values_are_blamed_on_the_set(tmp_path, capsys, override, fragments):
    code, err = run_cli(tmp_path, capsys, override)
    assert_usage_error(code, err, *fragments)
    assert "samples_tiny.yaml" not in err


def test_config_yaml_syntax_error_names_file_line_and_column(tmp_path, capsys):
    config = tmp_path / "mine.yaml"
    config.write_text("dataset:\n  path: datasets/samples\n  batch_size: [2\n")
    code = main(["--config", str(config)])
    assert_usage_error(code, capsys.readouterr().err, f"config file {config} is not valid YAML",
                       "at line 4, column 1")


def exif_orientation_6(jpeg: bytes) -> bytes:
    """The JPEG with an EXIF APP1 segment saying: rotate 90 degrees clockwise to view."""
    tiff = b"MM" + struct.pack(">HIH", 42, 8, 1) + struct.pack(">HHIHH", 0x0112, 3, 1, 6, 0) + struct.pack(">I", 0)
    payload = b"Exif\0\0" + tiff
    return jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload + jpeg[2:]


@pytest.mark.slow
def test_rotated_photo_is_detected_upright(tmp_path, capsys):
    images = tmp_path / "images"
    images.mkdir()
    photo = ROOT / "datasets" / "samples" / "dog.jpg"  # stored 768 wide, 576 high
    (images / "dog.jpg").write_bytes(exif_orientation_6(photo.read_bytes()))
    code, _ = run_cli(tmp_path, capsys, f"dataset.path={images}", "run.id=rotated", "postprocess.conf_thres=0.00002",
                      "benchmark.layer_timing=false", "benchmark.repeats=1", "outputs.plots=false")
    assert code == 0
    run_dir = tmp_path / "outputs" / "rotated"
    annotated = cv2.imread(str(next((run_dir / "images").rglob("dog.jpg"))), cv2.IMREAD_UNCHANGED)
    assert annotated.shape[1] == 576 and annotated.shape[0] >= 768  # upright, plus the random-weights banner
    boxes = pd.read_csv(run_dir / "detections.csv")
    assert len(boxes) > 0
    assert boxes["x2"].max() <= 576 and boxes["y2"].max() <= 768
    assert boxes["y2"].max() > 576  # impossible in the sideways frame, which is 576 high
    shutil.rmtree(run_dir)
