"""What an exported file holds, as inspection.py (ONNX, IR) and tflite_reading.py (TFLite) read it: its inputs and
outputs, its metadata, and the error a file detbench cannot run raises. Plain data, read by the layouts."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Union

from utils.core.errors import UsageError

if TYPE_CHECKING:
    import numpy as np  # a config's start reads files without numpy (tests/whole_runs/test_cli_start.py)

Dim = Union[int, str]  # a fixed size, or the name of a dynamic axis


class ExportedFileError(UsageError):
    """A model.file that detbench cannot run; the message names the file and what to do."""


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[Dim, ...]
    dtype: str = "float32"  # numpy's name of its element type
    # An integer tensor's (scale, zero point): its real value is (q - zero point) x scale (a TFLite file's).
    quantization: Optional[tuple[float, int]] = None

    @property
    def static(self) -> bool:
        return all(isinstance(size, int) and size > 0 for size in self.shape)


@dataclass(frozen=True)
class Tail:
    """The operator a graph ends in that a runtime may lack and the family can do itself (a TFLite SSD's
    TFLite_Detection_PostProcess): its input and output tensors by name, its options, and the values of its
    constant inputs (the anchors)."""

    operator: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    options: Mapping[str, Any]
    constants: Mapping[str, "np.ndarray"]

    @property
    def computed_inputs(self) -> tuple[str, ...]:
        """The inputs the graph computes (a runtime that ends before the operator returns these)."""
        return tuple(name for name in self.inputs if name not in self.constants)


@dataclass(frozen=True)
class AfterConvolutions:
    """What an ONNX graph does after its last convolutions (the nodes from which none can be reached), read
    without running it: a YOLO export that decodes its boxes in the graph does arithmetic there on constants (its
    grids, strides and anchors; YOLOv5's `** 2`, YOLOX's `exp`), one that does not ends in the head's
    convolutions, activations and reshapes."""

    ops: frozenset[str]  # the operator types of those nodes
    on_constants: frozenset[str]  # of them, the arithmetic (inspection.ARITHMETIC) with a float constant operand

    @property
    def decodes(self) -> bool:
        return bool(self.on_constants) or "Exp" in self.ops


@dataclass(frozen=True)
class ExportedFile:
    """The file as read: its format, inputs and outputs, and what its metadata says (empty when it says nothing)."""

    path: Path
    format: str  # "onnx", "openvino" or "tflite"
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    metadata: dict[str, Any] = field(default_factory=dict)
    digest: str = ""  # of the file's bytes (and the IR's weights), for caches keyed by content
    precision: str = ""  # the element type its weights are stored in, where the format says (TFLite)
    tail: Optional[Tail] = None  # an operator it ends in that a runtime may lack
    # After the last convolutions (ONNX); None where not read or none convolves.
    after_convolutions: Optional[AfterConvolutions] = None

    @property
    def image_input(self) -> Tensor:
        return self.inputs[0]

    @property
    def channels_last(self) -> bool:
        """Whether the image input is (batch, height, width, 3), as TFLite files mostly take it; else NCHW."""
        shape = self.image_input.shape
        return len(shape) == 4 and shape[3] == 3 and shape[1] != 3

    @property
    def image_hw(self) -> tuple[Dim, Dim]:
        """The image input's height and width axes, in either layout."""
        shape = self.image_input.shape
        return (shape[1], shape[2]) if self.channels_last else (shape[2], shape[3])

    def names(self) -> Optional[list[str]]:
        """Class names by index, from the metadata; None where it has none."""
        names = self.metadata.get("names")
        if isinstance(names, dict) and all(isinstance(k, int) for k in names):
            return [str(names.get(i, i)) for i in range(max(names) + 1)] if names else None
        if isinstance(names, list):
            return [str(name) for name in names]
        return None

    def metadata_flag(self, key: str) -> Optional[bool]:
        """A true/false fact of the metadata (top level, or inside Ultralytics' export `args`)."""
        for place in (self.metadata, self.metadata.get("args") if isinstance(self.metadata.get("args"), dict)
                      else {}):
            value = place.get(key)
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value in ("True", "False"):
                return value == "True"
        return None
