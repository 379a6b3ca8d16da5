"""pipelines/exported/paddle_sidecar.py: PaddleDetection's infer_cfg.yml beside a file, as a recipe."""
import pytest

from pipelines.exported.inspection import ExportedFileError
from pipelines.exported.paddle_sidecar import read_infer_config
from pipelines.exported.recipe import Recipe
from tests.support.exported_files import exported

CFG = """Preprocess:
- {type: Resize, keep_ratio: true, interp: 0, target_size: [64, 64]}
- {type: NormalizeImage, norm_type: none, is_scale: false}
- {type: Pad, fill_value: [0.0, 0.0, 0.0]}
- {type: Permute}
label_list: [a, b]
fpn_stride: [8, 16, 32]
"""


def test_no_sidecar_is_none_and_each_step_becomes_a_recipe_step_or_is_named(tmp_path):
    file = exported([], path=tmp_path / "model.onnx")
    assert read_infer_config(file, Recipe()) is None
    (tmp_path / "infer_cfg.yml").write_text(CFG)
    config = read_infer_config(file, Recipe())
    assert (config.recipe.resize, config.recipe.interpolation, config.recipe.scale) == ("letterbox_corner", "nearest",
                                                                                        1.0)
    assert config.recipe.mean == (0.0, 0.0, 0.0) and config.labels == ["a", "b"] and config.strides == (8, 16, 32)
    # A black pad is not the recipe's grey: named as not applied; Permute is what any NCHW input is already.
    assert config.skipped == ("Pad",)
    assert config.said() == "recipe from infer_cfg.yml beside the file (not applied: Pad)"


def test_a_sidecar_that_is_not_paddles_yaml_is_refused_naming_it(tmp_path):
    (tmp_path / "infer_cfg.yml").write_text("Preprocess: [unclosed\n")
    with pytest.raises(ExportedFileError, match="infer_cfg.yml.*not readable YAML"):
        read_infer_config(exported([], path=tmp_path / "model.onnx"), Recipe())
