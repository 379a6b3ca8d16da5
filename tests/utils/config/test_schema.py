import pytest
import yaml

from utils.config.schema import ConfigError, apply_override, config_to_yaml, load_config


def write(tmp_path, data, name="exp.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def minimal():
    return {"dataset": {"path": "datasets/samples"}}


def test_defaults_and_generated_run_id(tmp_path):
    config = load_config(write(tmp_path, minimal()))
    assert config.preprocess.img_size == 640
    assert config.postprocess.conf_thres == 0.25 and config.postprocess.iou_thres == 0.45
    assert config.postprocess.max_det == 300 and config.model.fuse is True
    assert config.run.output_dir == "outputs" and config.outputs.save_images is True
    assert config.run.id.endswith("_exp") and config.run.id[:8].isdigit()


def test_overrides_parse_values_as_yaml(tmp_path):
    config = load_config(write(tmp_path, minimal()), ["dataset.batch_size=4", "postprocess.classes=[0, 2]",
                                                      "model.weights=null", "run.id=my-run",
                                                      "benchmark.energy.idle_s=1.5"])
    assert config.dataset.batch_size == 4
    assert config.postprocess.classes == [0, 2]
    assert config.model.weights is None
    assert config.run.id == "my-run"
    assert config.benchmark.energy.idle_s == 1.5


def test_resolved_config_round_trips(tmp_path):
    config = load_config(write(tmp_path, minimal()), ["run.id=x"])
    again = load_config(write(tmp_path, yaml.safe_load(config_to_yaml(config)), "again.yaml"))
    assert again == config


@pytest.mark.parametrize("override, expected", [
    ("model.archh=yolov7", ["model.archh", "unknown key"]),
    ("dataset.batch_size=zero", ["dataset.batch_size", "'zero'"]),
    ("dataset.batch_size=0", ["dataset.batch_size", "greater than or equal to 1"]),
    ("preprocess.img_size=100", ["preprocess.img_size", "multiple of 32", "100"]),
    ("model.arch=yolov9", ["model.arch", "yolov7-tiny", "'yolov9'"]),
    ("model.file=README.md", ["model.file: must be an exported detector file (.onnx", "'README.md'"]),
    ("postprocess.iou_thres=1.5", ["postprocess.iou_thres", "1.5"]),
    ("run.id=a/b", ["run.id", "plain directory name"]),
    ("extra.key=1", ["extra", "unknown key"]),
])
def test_bad_values_name_key_and_value(tmp_path, override, expected):
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, minimal()), [override])
    for fragment in expected:
        assert fragment in str(info.value)


def test_missing_dataset_path_is_reported(tmp_path):
    with pytest.raises(ConfigError, match=r"dataset: required key is missing"):
        load_config(write(tmp_path, {"model": {"arch": "yolov7"}}))


def test_bad_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("dataset: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(broken)
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("42\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(scalar)


def test_override_syntax_errors():
    with pytest.raises(ConfigError, match="dotted.key=value"):
        apply_override({}, "dataset.batch_size")
    with pytest.raises(ConfigError, match="is a value, not a section"):
        apply_override({"dataset": 3}, "dataset.path=x")


def test_shipped_configs_validate():
    for name in ("samples", "samples_tiny", "imagenet_mini"):
        config = load_config(f"configs/{name}.yaml")
        assert config.dataset.path.startswith("datasets/")


@pytest.mark.parametrize("override, expected", [
    ("dataset.batch_size=true", "dataset.batch_size: must be a whole number written without quotes, e.g. 4 (got True)"),
    ("dataset.batch_size='4'", "dataset.batch_size: must be a whole number written without quotes, e.g. 4 (got '4')"),
    ("postprocess.max_det=1.5", "postprocess.max_det: must be a whole number written without quotes, e.g. 4 (got 1.5)"),
    ("postprocess.classes=[0, true]", "postprocess.classes.1: must be a whole number"),
    ("model.fuse=1", "model.fuse: must be true or false, written without quotes (got 1)"),
    ("model.fuse='true'", "model.fuse: must be true or false, written without quotes (got 'true')"),
    ("postprocess.conf_thres=true", "postprocess.conf_thres: must be a number written without quotes, e.g. 0.5"),
    ("postprocess.conf_thres='0.5'", "postprocess.conf_thres: must be a number written without quotes"),
    ("benchmark.min_time_s=.inf", "benchmark.min_time_s: Input should be a finite number (got inf)"),
])
def test_types_are_strict(tmp_path, override, expected):
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, minimal()), [override])
    assert expected in str(info.value)


def test_yaml_values_of_the_right_type_still_validate(tmp_path):
    data = minimal()
    data["preprocess"] = {"img_size": 640, "rect": True}
    data["postprocess"] = {"conf_thres": 1, "classes": [0, 2]}  # an int where a float belongs is fine
    config = load_config(write(tmp_path, data))
    assert config.preprocess.img_size == 640 and config.preprocess.rect is True
    assert config.postprocess.conf_thres == 1.0 and isinstance(config.postprocess.conf_thres, float)


def test_yaml_syntax_error_names_the_file_line_and_column(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("dataset:\n  path: datasets/samples\n  batch_size: [2\n")
    with pytest.raises(ConfigError) as info:
        load_config(broken)
    message = str(info.value)
    assert message.startswith(f"config file {broken} is not valid YAML: ") and "<unicode string>" not in message
    assert "at line 4, column 1 (while parsing a flow sequence that starts at line 3, column 15)" in message


def test_control_character_and_binary_config_files(tmp_path):
    control = tmp_path / "control.yaml"
    control.write_text('dataset:\n  path: "a\x01b"\n')
    with pytest.raises(ConfigError, match=r"control.yaml is not valid YAML: character '\\x01' is not allowed at "
                                          r"line 2, column 11"):
        load_config(control)
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    with pytest.raises(ConfigError, match=r"binary.yaml is not a text YAML file"):
        load_config(binary)


def test_invalid_set_value_is_blamed_on_the_set(tmp_path):
    path = write(tmp_path, minimal())
    with pytest.raises(ConfigError) as info:
        load_config(path, ["postprocess.classes=[0, 2"])
    message = str(info.value)
    assert message.startswith("--set 'postprocess.classes=[0, 2': the value '[0, 2' is not valid YAML (")
    assert str(path) not in message and "<unicode string>" not in message


def test_validation_errors_say_which_set_or_file_the_value_came_from(tmp_path):
    data = minimal()
    data["postprocess"] = {"iou_thres": 2}
    path = write(tmp_path, data)
    with pytest.raises(ConfigError) as info:
        load_config(path, ["dataset.batch_size=4", "dataset.batch_size=true", "benchmark.energy={idle_s: -1}"])
    lines = str(info.value).splitlines()
    assert lines[0] == "invalid configuration:"
    by_key = {line.split(":")[0].strip(): line for line in lines[1:]}
    assert by_key["dataset.batch_size"].endswith("(from --set dataset.batch_size=true)")
    assert by_key["benchmark.energy.idle_s"].endswith("(from --set benchmark.energy={idle_s: -1})")
    assert by_key["postprocess.iou_thres"].endswith(f"(in {path})")
    with pytest.raises(ConfigError) as info:
        load_config(path, ["dataset.batch_size=4"])
    assert str(info.value).startswith(f"invalid configuration in {path}:") and "--set" not in str(info.value)


@pytest.mark.parametrize("overrides, expected", [
    (["cameras.detector=per_stream", "cameras.count=3", "runtime.streams=2"],
     ["cameras.detector per_stream runs 3 detector(s) at once", "runtime.streams is 2", "set runtime.streams 3"]),
    (["runtime.streams=2"], ["runtime.streams 2 with cameras.detector shared", "set runtime.streams 1"]),
    (["runtime.backend=openvino", "runtime.precision=int8"],
     ["runtime.precision int8 calibrates on images", "runtime.calibration.path"]),
    (["cameras.when_busy=late"], ["cameras.when_busy", "'drop' or 'queue'"]),
    (["cameras.duration_s=0"], ["cameras.duration_s", "greater than 0"]),
    (['cameras.sources=["a.mp4", " "]'], ["cameras.sources[1] is empty"]),
])
def test_the_cameras_are_checked_against_the_runtime_naming_the_keys(tmp_path, overrides, expected):
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, minimal()), ["benchmark.scenario=cameras", *overrides])
    for fragment in expected:
        assert fragment in str(info.value)


def test_one_detector_per_camera_on_a_stream_each_is_accepted(tmp_path):
    config = load_config(write(tmp_path, minimal()), ["benchmark.scenario=cameras", "cameras.detector=per_stream",
                                                      'cameras.sources=["a.mp4", "rtsp://cam/1"]', "cameras.count=2",
                                                      "runtime.streams=4", "runtime.threads=4"])
    assert config.cameras.camera_count == 4 and not config.reads_image_folder
    assert load_config(write(tmp_path, minimal()), []).reads_image_folder


def _minimal_onnx(path):
    """A graph with a yolov8-shaped output, all a config's check of model.file reads."""
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("Constant", [], ["output0"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0]))
    graph = helper.make_graph([node], "m", [helper.make_tensor_value_info("images", TensorProto.FLOAT,
                                                                          ["batch", 3, "height", "width"])],
                              [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 7, 100])])
    onnx.save(helper.make_model(graph), str(path))


def test_a_folder_as_model_file_stands_for_the_one_detector_file_inside_it(tmp_path):
    folder = tmp_path / "yolo11n_export"
    folder.mkdir()
    _minimal_onnx(folder / "yolo11n.onnx")
    (folder / "metadata.yaml").write_text("imgsz: [64, 64]\n")  # beside it, as exporters write: not a detector
    config = load_config(write(tmp_path, minimal()), [f"model.file={folder}", "runtime.backend=onnxruntime"])
    assert config.model.file == str(folder / "yolo11n.onnx")
    (folder / "yolo11n.xml").write_text("x")
    with pytest.raises(ConfigError, match=r"holding 2 detector files \(yolo11n.onnx, yolo11n.xml\); set model.file "
                                          r"to one of them"):
        load_config(write(tmp_path, minimal()), [f"model.file={folder}"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"holding no detector file; set model.file to an exported detector file"):
        load_config(write(tmp_path, minimal()), [f"model.file={tmp_path / 'empty'}"])
