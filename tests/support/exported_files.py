"""Exported files as the layouts see them (pipelines/exported/file_facts.ExportedFile), written by hand: only the
declared inputs, outputs and metadata a layout's read() looks at, no graph to run, so a layout's signature and its
decode are tested on shapes and tensors alone."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from pipelines.exported.file_facts import AfterConvolutions, ExportedFile, Tensor

IMAGE = ("images", (1, 3, 64, 64))


def tensors(specs: Sequence[tuple]) -> tuple[Tensor, ...]:
    """(name, shape) or (name, shape, dtype) -> Tensors."""
    return tuple(Tensor(*spec) for spec in specs)


def exported(outputs: Sequence[tuple], inputs: Sequence[tuple] = (IMAGE,), metadata: Optional[dict] = None,
             format: str = "onnx", after: Optional[AfterConvolutions] = None,
             path: Path = Path("model.onnx")) -> ExportedFile:
    return ExportedFile(path, format, tensors(inputs), tensors(outputs), metadata or {}, after_convolutions=after)


# What an ONNX graph does after its last convolutions: nothing but reshapes (undecoded rows), or a decode.
UNDECODED = AfterConvolutions(frozenset({"Reshape", "Sigmoid"}), frozenset())
EXP_DECODE = AfterConvolutions(frozenset({"Exp", "Mul", "Add"}), frozenset({"Mul", "Add"}))
