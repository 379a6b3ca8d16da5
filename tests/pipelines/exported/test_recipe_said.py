"""What a file run says of its recipe (pipelines/exported/recipe_said.py): on what ground, which keys the config
set, and the keys that change it, from small graphs whose declared shapes and metadata are all that is read."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pipelines.exported import facts
from pipelines.exported.recipe import Recipe
from pipelines.exported.recipe_said import DecodeSettings, keys_in_words, said_recipe
from pipelines.settings import NO_CAP
from tests.pipelines.exported.test_family import onnx_file

DECODE = DecodeSettings(0.25, 0.7, 300, False, False, True)


def said(file: Path, yours=(), decode: DecodeSettings = DECODE, head=None) -> dict:
    exported, layout, reading = facts.read(str(file), head)
    return said_recipe(exported, layout, reading, layout.RECIPE, facts.input_hw(exported, 64), decode, yours)


def test_an_ultralytics_file_runs_its_exporters_recipe_read_from_its_metadata(tmp_path):
    file = onnx_file(tmp_path, "v8", {"output0": [1, 7, 100]}, metadata={"author": "Ultralytics"})
    entry = said(file, ["preprocess.channels", "postprocess.agnostic", "run.id"])
    assert entry["ground"] == "the exporter's: Ultralytics' predict, read from its metadata (author Ultralytics)"
    assert entry["yours"] == ["preprocess.channels", "postprocess.agnostic"]  # only the recipe's keys
    assert entry["said"] == ("letterbox centred, pad 114; OpenCV linear on the 8-bit image; RGB; / 255; input 64x64; "
                             "NMS class by class at IoU 0.7, cut 0.25, at most 300 kept; boxes clipped to the image")
    assert "preprocess.img_size" in entry["keys"] and "postprocess.agnostic" in entry["keys"]
    assert entry["change"].startswith("change it with preprocess.{resize, resampler,")
    assert "benchmark.py match" in entry["change"]


def test_without_metadata_the_recipe_is_the_layouts_default_and_a_static_size_is_not_a_key(tmp_path):
    file = onnx_file(tmp_path, "plain", {"output0": [1, 7, 100]}, inputs={"images": [1, 3, 96, 64]})
    entry = said(file, decode=replace(DECODE, agnostic=True, max_det=NO_CAP))
    assert entry["ground"] == "the yolov8 layout's default, Ultralytics' predict" and entry["yours"] == []
    assert "input 96x64" in entry["said"] and "NMS class-agnostic at IoU 0.7, cut 0.25, no cap" in entry["said"]
    assert "preprocess.img_size" not in entry["keys"] and entry["preprocess"]["input_hw"] == [96, 64]


def test_rows_one_per_object_have_no_nms_keys_and_a_sidecar_recipe_is_the_exporters(tmp_path):
    detr = onnx_file(tmp_path, "detr", {"dets": [1, 100, 4], "labels": [1, 100, 3]})
    entry = said(detr, decode=replace(DECODE, clip=False))
    assert entry["ground"] == "the detr layout's default, its author's predict"
    assert "postprocess.iou_thres" not in entry["keys"] and entry["postprocess"]["agnostic"] is None
    assert "the file's own rows, cut 0.25" in entry["said"] and "left beyond the image" in entry["said"]
    exported, layout, reading = facts.read(str(detr))
    sidecar = replace(reading, recipe=Recipe(resize="stretch"), recipe_from="infer_cfg.yml")
    assert said_recipe(exported, layout, sidecar, Recipe(), (64, 64), DECODE, ())["ground"] == \
        "the exporter's, read from infer_cfg.yml"


def test_keys_are_said_section_by_section():
    assert keys_in_words(["preprocess.a", "preprocess.b", "postprocess.c"]) == "preprocess.{a, b}, postprocess.c"
