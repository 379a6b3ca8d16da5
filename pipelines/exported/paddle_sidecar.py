"""PaddleDetection's `infer_cfg.yml`, which its exporter writes beside the model and paddle2onnx leaves beside the
.onnx: the author's preprocessing (`Preprocess`: Resize, NormalizeImage, Permute, ...), the class names
(`label_list`) and, for PicoDet, the strides of its heads (`fpn_stride`). Read only when it is there; each step
it names becomes a recipe step, and a step detbench has no counterpart for is named in the reading's words."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Optional

import yaml

from pipelines.exported.inspection import ExportedFile, ExportedFileError
from pipelines.exported.recipe import Recipe

SIDECAR = "infer_cfg.yml"
INTERPOLATIONS = {0: "nearest", 1: "linear", 2: "cubic", 3: "area"}  # PaddleDetection's interp: OpenCV's codes
UNSEEN = {"Permute", "PadStride"}  # NCHW order and stride padding: what any input here already has


@dataclass(frozen=True)
class InferConfig:
    path: Path
    recipe: Recipe
    labels: Optional[list[str]]
    strides: Optional[tuple[int, ...]]
    skipped: tuple[str, ...]  # steps detbench has no counterpart for

    def said(self) -> str:
        """For the reading's why: where the recipe came from, and what of it is not applied."""
        skipped = f" (not applied: {', '.join(self.skipped)})" if self.skipped else ""
        return f"recipe from {self.path.name} beside the file{skipped}"


def read_infer_config(file: ExportedFile, default: Recipe) -> Optional[InferConfig]:
    """The sidecar beside the file as a recipe (the layout's `default` for what it leaves out); None where there
    is none. A sidecar that is not PaddleDetection's YAML is refused, naming it."""
    path = file.path.parent / SIDECAR
    if not path.is_file():
        return None
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, OSError, UnicodeDecodeError) as error:
        raise ExportedFileError(f"{path} (PaddleDetection's preprocessing beside model.file) is not readable YAML "
                                f"({error}); export the model again or remove the file") from None
    steps = loaded.get("Preprocess") if isinstance(loaded, dict) else None
    if not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps):
        raise ExportedFileError(f"{path} (beside model.file) has no Preprocess list of steps, as PaddleDetection's "
                                "infer_cfg.yml does; export the model again or remove the file")
    recipe, skipped = default, []
    for step in steps:
        recipe, known = _applied(recipe, step)
        if not known:
            skipped.append(str(step.get("type")))
    labels = loaded.get("label_list")
    strides = loaded.get("fpn_stride")
    return InferConfig(path, recipe, [str(label) for label in labels] if isinstance(labels, list) else None,
                       tuple(int(s) for s in strides) if isinstance(strides, list) else None, tuple(skipped))


def _applied(recipe: Recipe, step: dict[str, Any]) -> tuple[Recipe, bool]:
    kind = step.get("type")
    if kind == "Resize":
        # keep_ratio: one scale, the image at the top left (a Pad step fills the rest); else each axis its own.
        return replace(recipe, resize="letterbox_corner" if step.get("keep_ratio") else "stretch",
                       interpolation=INTERPOLATIONS.get(int(step.get("interp", 1)), recipe.interpolation),
                       resampler="opencv"), True
    if kind == "NormalizeImage":
        plain = step.get("norm_type", "mean_std") == "none"
        mean = (0.0, 0.0, 0.0) if plain else tuple(float(v) for v in step.get("mean", recipe.mean))
        std = (1.0, 1.0, 1.0) if plain else tuple(float(v) for v in step.get("std", recipe.std))
        return replace(recipe, scale=255.0 if step.get("is_scale", True) else 1.0, mean=mean, std=std), True
    if kind == "Pad":  # the recipe's grey 114 is Paddle's default fill; another fill is named, not applied
        fill = step.get("fill_value", [114.0])
        return recipe, isinstance(fill, list) and all(float(value) == recipe.pad_value for value in fill)
    return recipe, kind in UNSEEN
