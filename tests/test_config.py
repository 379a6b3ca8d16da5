import pytest
import yaml

from utils.config import ConfigError, apply_override, config_to_yaml, load_config


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
