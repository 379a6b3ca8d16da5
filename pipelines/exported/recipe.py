"""How an exported detector's author prepares an image for it: a recipe per layout (its defaults), overridable key by
key under `preprocess` (the family's own keys below, beside the shared img_size, mean and std). Light: no torch.

Each recipe step is a fact of the author's own predictor, since a file trained on one resize answers differently
to another (D-FINE stretches where YOLO letterboxes; RF-DETR resizes the float image, YOLOX the 8-bit one).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Literal, Optional

from pydantic import Field

from pipelines.boxes.keys import LetterboxKeys

Resize = Literal["letterbox", "letterbox_corner", "pad_resize", "pad_resize_corner", "stretch"]
Resampler = Literal["opencv", "torch", "torch_antialias", "pil"]
Interpolation = Literal["linear", "nearest", "cubic", "area"]
Channels = Literal["rgb", "bgr"]
InputType = Literal["float32", "float16", "uint8", "int8"]
RECIPE_KEYS = ("resize", "resampler", "interpolation", "channels", "scale", "pad_value", "input_type", "inset")
RESIZES = {"letterbox": "letterbox centred, pad {pad}", "letterbox_corner": "letterbox at the top left, pad {pad}",
           "pad_resize": "padded, centred, to the input's aspect, pad {pad}, then resized",
           "pad_resize_corner": "padded to a square at the bottom right, pad {pad}, then resized",
           "stretch": "stretched to the input"}
RESAMPLERS = {"opencv": "OpenCV {interpolation} on the 8-bit image", "torch": "torch {interpolation} on the float "
              "image, no antialias", "torch_antialias": "torch {interpolation} on the float image, antialiased",
              "pil": "PIL {interpolation} on the 8-bit image"}
IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


@dataclass(frozen=True)
class Recipe:
    """One layout's preprocessing: the image resized to the input (a letterbox fitting it `inset` pixels inside
    each edge), its channels ordered, its values divided by `scale` then normalised by mean and std (given as R,
    G, B), fed as `input_type`."""

    resize: Resize = "letterbox"
    resampler: Resampler = "opencv"
    interpolation: Interpolation = "linear"
    channels: Channels = "rgb"
    scale: float = 255.0
    mean: tuple[float, float, float] = (0.0, 0.0, 0.0)
    std: tuple[float, float, float] = (1.0, 1.0, 1.0)
    pad_value: int = 114
    input_type: InputType = "float32"
    inset: int = 0

    def with_keys(self, keys: dict[str, Any]) -> "Recipe":
        """This recipe with the config's keys that are set (None: the layout's own)."""
        changes = {key: (tuple(value) if key in ("mean", "std") else value)
                   for key, value in keys.items() if value is not None and key in (*RECIPE_KEYS, "mean", "std")}
        return replace(self, **changes)

    def describe(self) -> dict[str, Any]:
        """For summary.json: every step, as run."""
        return asdict(self)

    def words(self) -> str:
        """The recipe as a reader checks it against the author's predictor."""
        inset = f", {self.inset} pixels inside each edge" if self.inset and self.resize == "letterbox" else ""
        parts = [RESIZES[self.resize].format(pad=self.pad_value) + inset,
                 RESAMPLERS[self.resampler].format(interpolation=self.interpolation), self.channels.upper()]
        parts.append("0-255" if self.scale == 1.0 else f"/ {self.scale:g}")
        if (self.mean, self.std) == IMAGENET:
            parts.append("ImageNet mean and std")
        elif self.mean != (0.0, 0.0, 0.0) or self.std != (1.0, 1.0, 1.0):
            parts.append(f"mean {list(self.mean)}, std {list(self.std)}")
        if self.input_type != "float32":
            parts.append(f"fed as {self.input_type}")
        return "; ".join(parts)


YOLO = Recipe()  # Ultralytics' LetterBox: centred, grey 114, OpenCV's linear resize of the 8-bit image, RGB / 255


class Preprocess(LetterboxKeys):
    """The recipe's keys; null: the layout's own (docs/models.md gives each layout's recipe)."""

    resize: Optional[Resize] = Field(None, description=(
        "exported: `letterbox` (aspect kept, centred, padded), `letterbox_corner` (aspect kept, padded at the "
        "bottom and right, as YOLOX and PaddleDetection do), `pad_resize` (padded, centred, to the input's aspect "
        "first, then resized, as MediaPipe's letterbox), `pad_resize_corner` (padded at the bottom and right to a "
        "square of the longer side first, then the square resized to the input: one scale, the longer side over "
        "the input size, as applications that pad before OpenCV's blobFromImage do) or `stretch` (each axis to "
        "the input, as DETRs do); null: the layout's own"))
    resampler: Optional[Resampler] = Field(None, description=(
        "exported: what resizes: `opencv` (the 8-bit image, rounded to whole grey levels), `torch` (the float image, "
        "without antialiasing, as torchvision's tensor resize with antialias=False: rfdetr 1.9 and later), "
        "`torch_antialias` (the float image, antialiased where it shrinks: torchvision's tensor resize by its "
        "default, as rfdetr 1.8 and earlier predict) or `pil` (the 8-bit image with PIL's antialiased filter); "
        "null: the layout's own"))
    interpolation: Optional[Interpolation] = Field(None, description=(
        "exported: the resize's interpolation; null: the layout's own"))
    channels: Optional[Channels] = Field(None, description=(
        "exported: the input's channel order; null: the layout's own"))
    scale: Optional[float] = Field(None, gt=0.0, description=(
        "exported: pixel values are divided by this before mean and std (255: to [0, 1]; 1: kept 0-255); null: "
        "the layout's own"))
    input_type: Optional[InputType] = Field(None, description=(
        "exported: the element type fed to the graph (`uint8`: the 8-bit pixels, where the author put the "
        "normalisation inside it; `int8`: the normalised values quantized with the file's scale and zero point; "
        "`float16`); null: the file's own input type"))
    inset: Optional[int] = Field(None, ge=0, description=(
        "exported: a `letterbox` fits the image this many pixels inside each edge of the input, padded all round "
        "(super-gradients' YOLO-NAS on COCO: 636 of 640, inset 2); null: the layout's own"))
