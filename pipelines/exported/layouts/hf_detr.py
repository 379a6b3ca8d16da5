"""Hugging Face's DETR family as exported with its output names, `logits` (B, Q, slots) and `pred_boxes` (B, Q, 4) of
cx, cy, w, h normalised. Two decodes, as the family's own `post_process_object_detection` does them:
- DETR: a no-object class last, softmax over every slot, each query its best real class;
- Conditional and Deformable DETR (top 100) and RT-DETR (top Q): no no-object class, sigmoid, the best
  (query, class) pairs.
Which one is the model's config.json's (optimum writes it beside model.onnx): its id2label counts every slot or all
but the no-object one. The processor's preprocessor_config.json, written beside it too, gives the recipe (mean
and std or none, the resampling filter). Without them: DETR's decode and recipe, said as assumed."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

from pipelines.exported.decoding import best_class_rows, normalised_cxcywh_to_xyxy, top_pairs
from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import Misfit, Reading, NAMED, fixed, named, names_fit
from pipelines.exported.recipe import YOLO, Recipe

SUMMARY = ("Hugging Face DETR, Conditional/Deformable DETR, RT-DETR", "`logits` (B, Q, slots), `pred_boxes` (B, Q, 4)",
           "cx, cy, w, h normalised; class logits: DETR softmax with no-object last, the others sigmoid",
           "DETR: each query its best real class; the others: the top (query, class) pairs (100; RT-DETR Q); then "
           "the score cut", "outputs named `logits` and `pred_boxes`; the decode from config.json beside the file")
RECIPE = replace(YOLO, resize="stretch", resampler="pil", mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
NMS = False
BOXES = "input"
CLIP = False  # post_process_object_detection scales boxes to target_sizes without clamping
MODEL_CONFIG, PROCESSOR_CONFIG = "config.json", "preprocessor_config.json"
TOP = 100  # Conditional and Deformable DETR's post_process_object_detection(top_k=100)
ALL_QUERIES = ("rt_detr", "rt_detr_v2", "d_fine")  # their processor keeps the top Q pairs (num_top_queries = Q)
PIL_RESAMPLE = {0: "nearest", 2: "linear", 3: "cubic"}  # PIL's codes, as the processors save them


def _beside(file: ExportedFile, name: str) -> Optional[dict[str, Any]]:
    """A JSON sidecar beside the file, None where there is none or it is no JSON object."""
    path = Path(file.path).parent / name
    try:
        loaded = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def processor_recipe(processor: dict[str, Any]) -> tuple[Recipe, list[str]]:
    """preprocessor_config.json as a recipe, and the steps detbench does not apply (named for the reading)."""
    recipe, skipped = RECIPE, []
    if processor.get("do_normalize") is False:
        recipe = replace(recipe, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))
    elif isinstance(processor.get("image_mean"), list) and isinstance(processor.get("image_std"), list):
        recipe = replace(recipe, mean=tuple(processor["image_mean"]), std=tuple(processor["image_std"]))
    factor = processor.get("rescale_factor")
    if processor.get("do_rescale") is False:
        recipe = replace(recipe, scale=1.0)
    elif isinstance(factor, (int, float)) and factor > 0:
        recipe = replace(recipe, scale=round(1.0 / factor, 6))
    if processor.get("resample") in PIL_RESAMPLE:
        recipe = replace(recipe, interpolation=PIL_RESAMPLE[processor["resample"]])
    elif processor.get("resample") is not None:
        skipped.append(f"resample {processor['resample']}")
    size = processor.get("size") or {}
    if isinstance(size, dict) and "shortest_edge" in size:
        skipped.append("its shortest-edge resize (aspect kept, one input size per image): stretched to img_size")
    return recipe, skipped


def read(file: ExportedFile):
    roles = named(file, "pred_boxes", "logits")
    if roles is None or len(file.inputs) > 2:
        return Misfit("its outputs are named logits and pred_boxes (Hugging Face's)")
    slots = fixed(file.outputs[roles[1]].shape[-1])
    if slots is None or slots < 2:
        return Misfit("its logits hold a fixed number of class slots")
    config = _beside(file, MODEL_CONFIG) or {}
    labels = config.get("id2label")
    counted = len(labels) if isinstance(labels, dict) else None
    extra = {name: "pixel_mask" for name in [t.name for t in file.inputs[1:]]}
    processor = _beside(file, PROCESSOR_CONFIG)
    recipe, skipped = processor_recipe(processor) if processor else (None, [])
    said = (f"; recipe from {PROCESSOR_CONFIG}" + (f" (not applied: {'; '.join(skipped)})" if skipped else "")
            if processor else f"; recipe DETR's (assumed: no {PROCESSOR_CONFIG} beside the file)")
    roles_ = {"boxes": roles[0], "logits": roles[1]}
    if counted == slots and names_fit(file, slots):
        model_type = str(config.get("model_type", ""))
        top = None if model_type in ALL_QUERIES else TOP
        return Reading("hf_detr", slots, f"outputs logits and pred_boxes (Hugging Face); {MODEL_CONFIG}: "
                       f"{model_type or 'a model'} with {slots} labels and no no-object slot: sigmoid, the top "
                       f"{top or 'Q'} (query, class) pairs" + said, NAMED, roles=roles_, extra_inputs=extra,
                       details={"activation": "sigmoid", "top": top}, recipe=recipe,
                       recipe_from=PROCESSOR_CONFIG if processor else "")
    if not names_fit(file, slots - 1) or (counted is not None and counted != slots - 1):
        return Misfit(f"its logits' {slots} slots are not the {counted or len(file.names() or [])} labels of "
                      f"{MODEL_CONFIG} or the metadata, nor those and a no-object slot")
    why = (f"{MODEL_CONFIG}: {counted} labels and the no-object slot" if counted is not None
           else f"no {MODEL_CONFIG} beside the file: DETR's decode assumed (softmax, no-object last)")
    return Reading("hf_detr", slots - 1, f"outputs logits and pred_boxes (Hugging Face); {why}" + said, NAMED,
                   roles=roles_, extra_inputs=extra, details={"activation": "softmax"}, recipe=recipe,
                   recipe_from=PROCESSOR_CONFIG if processor else "")


def raw(outputs, reading: Reading, height: int, width: int):
    boxes = normalised_cxcywh_to_xyxy(outputs[reading.roles["boxes"]].float(), height, width)
    logits = outputs[reading.roles["logits"]].float()
    if reading.details.get("activation") == "sigmoid":
        return top_pairs(boxes, logits.sigmoid(), reading.details.get("top") or logits.shape[1])
    return best_class_rows(boxes, logits.softmax(dim=-1)[..., :-1])
