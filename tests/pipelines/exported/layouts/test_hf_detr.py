"""pipelines/exported/layouts/hf_detr.py: Hugging Face's logits and pred_boxes, decoded as config.json says."""
import json
import math

import pytest
import torch

from pipelines.exported.layouts import hf_detr
from tests.support.exported_files import exported

OUTPUTS = [("logits", (1, 2, 4)), ("pred_boxes", (1, 2, 4))]


def test_without_config_json_the_last_slot_is_no_object_and_scores_are_a_softmax(tmp_path):
    reading = hf_detr.read(exported(OUTPUTS, path=tmp_path / "model.onnx"))
    assert (reading.classes, reading.details) == (3, {"activation": "softmax"}) and "assumed" in reading.why
    logits = torch.tensor([[[4.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 9.0]]])
    boxes = torch.tensor([[[0.5, 0.5, 0.5, 0.5], [0.5, 0.5, 1.0, 1.0]]])
    found = hf_detr.raw((logits, boxes), reading, 64, 64)[0]
    expected = math.exp(4.0) / (math.exp(4.0) + 2 + math.exp(1.0))
    assert found[0].tolist() == pytest.approx([16, 16, 48, 48, expected, 0])
    assert found[1, 4] < 0.01  # the no-object slot is never a class


def test_labels_for_every_slot_mean_sigmoid_top_pairs_and_the_processor_gives_the_recipe(tmp_path):
    labels = {str(i): name for i, name in enumerate("abcd")}
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "deformable_detr", "id2label": labels}))
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"do_normalize": False, "resample": 3}))
    reading = hf_detr.read(exported(OUTPUTS, path=tmp_path / "model.onnx"))
    assert (reading.classes, reading.details) == (4, {"activation": "sigmoid", "top": 100})
    assert reading.recipe.mean == (0.0, 0.0, 0.0) and reading.recipe.interpolation == "cubic"
    assert reading.recipe_from == "preprocessor_config.json"


def test_the_processors_steps_without_a_counterpart_are_named():
    recipe, skipped = hf_detr.processor_recipe({"rescale_factor": 1 / 127.5, "resample": 9,
                                               "size": {"shortest_edge": 800}})
    assert recipe.scale == 127.5 and recipe.mean == hf_detr.RECIPE.mean
    assert skipped[0] == "resample 9" and "shortest-edge" in skipped[1]
