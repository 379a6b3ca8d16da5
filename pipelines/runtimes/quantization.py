"""Post-training int8 quantization of the exported network: what the runtimes' quantizers share
(pipelines/runtimes/<name>/quantizer.py).

Calibrated on the run's own images through the run's own preprocessing (`Calibration`, built by the harness),
cached beside the ONNX export under a key made of the export key, the calibration images' digest and the
quantization settings, so a second run with the same inputs reuses the quantized model.

Every quantizer keeps the decode of `keep_float` layers (the Detect head by default) in float: its final Concat holds
pixel boxes beside 0-1 scores, which no single int8 scale holds (quantizing it gave no detections at all).
Their convolutions are still quantized.
"""
from __future__ import annotations

import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np
from torch import nn
from tqdm import tqdm

from pipelines.cache_keys import parts_digest
from pipelines.runtimes.base import LoadedNetwork, RuntimeNotSupported
from pipelines.runtimes.int8_contract import AccuracyControl, QuantizedGraph
from pipelines.runtimes.int8_repair import repaired

CONV_OPS = ("Conv",)


@dataclass(frozen=True)
class Calibration:
    """The inputs int8 is calibrated on: `inputs()` yields one float32 (1, 3, H, W) array per image, freshly
    each call (the quantizers may iterate more than once, and 300 inputs at 640 would not fit in memory); for a
    graph with further inputs (a file's original sizes), the array and those inputs by name (`named_inputs`)."""

    inputs: Callable[[], Iterator[np.ndarray]]
    images: int
    digest: str  # of the images' bytes and the preprocessing settings
    keep_float: tuple[str, ...] = field(default_factory=tuple)
    # How the quantizer reads ranges and corrects biases (runtime.calibration's preset, range, bias_correction).
    method: tuple[tuple[str, str], ...] = (("preset", "mixed"), ("range", "default"), ("bias_correction", "fast"))
    # Accuracy-aware int8 (int8_repair): None quantizes plainly.
    control: Optional[AccuracyControl] = None

    @property
    def settings(self) -> dict[str, str]:
        return dict(self.method)


def float_module_paths(module: nn.Module, keep_float: Sequence[str]) -> list[str]:
    """Module paths named by `keep_float`: a class name (Detect) stands for every module of that class, any
    other entry is a module path (model.77). An entry matching nothing is an error: a typo would otherwise
    quantize what the user meant to keep."""
    paths: list[str] = []
    named = dict(module.named_modules())
    for entry in keep_float:
        by_type = [path for path, child in named.items() if type(child).__name__ == entry and path]
        if by_type:
            paths.extend(by_type)
        elif entry in named and entry:
            paths.append(entry)
        else:
            types = sorted({type(child).__name__ for child in named.values()})
            raise ValueError(f"runtime.calibration.keep_float {entry!r} names no layer of the network: give a "
                             f"module path such as model.77 or a layer type ({', '.join(types[:12])}, ...)")
    return paths


DECODE = "decode"  # keep_float's word for a file's decode: the nodes after its last convolutions


def file_float_nodes(onnx_path: Path, keep_float: Sequence[str]) -> list[str]:
    """For a network given as a file (no module paths): the nodes `keep_float` names, by name prefix (/model.23/)
    or operator type (Concat), and for DECODE every non-convolution node from which no convolution can be
    reached: the decode after the last convolutions (box arithmetic, boxes concatenated beside scores), which no
    single int8 scale holds. An entry naming nothing is an error."""
    import onnx  # here: a run that quantizes nothing never pays its import (0.7 s, ml_dtypes' mostly)

    graph = onnx.load(str(onnx_path), load_external_data=False).graph
    consumers: dict[str, list[int]] = {}
    for index, node in enumerate(graph.node):
        for name in node.input:
            consumers.setdefault(name, []).append(index)
    reaches: dict[int, bool] = {}
    for index in reversed(range(len(graph.node))):  # ONNX lists nodes in topological order
        node = graph.node[index]
        reaches[index] = node.op_type in CONV_OPS or any(
            reaches.get(later, False) for output in node.output for later in consumers.get(output, ()))
    chosen: list[str] = []
    for entry in keep_float:
        if entry == DECODE:
            found = [node.name for i, node in enumerate(graph.node) if not reaches[i] and node.name]
        else:
            found = [node.name for node in graph.node
                     if node.name and (node.op_type == entry or node.name.startswith(entry))]
        if not found:
            types = sorted({node.op_type for node in graph.node})
            raise ValueError(f"runtime.calibration.keep_float {entry!r} names no node of {onnx_path.name}: give a "
                             f"node name prefix, an operator type ({', '.join(types[:12])}, ...) or {DECODE!r}")
        chosen += [name for name in found if name not in chosen]
    return chosen


def decode_nodes(onnx_path: Path, module_paths: Sequence[str]) -> list[str]:
    """Names of the exported graph's non-convolution nodes inside these module paths (the exporter names a
    node of module model.77 /model.77/...)."""
    import onnx

    prefixes = tuple(f"/{path}/" for path in module_paths)
    graph = onnx.load(str(onnx_path), load_external_data=False).graph
    return [node.name for node in graph.node if node.name.startswith(prefixes) and node.op_type not in CONV_OPS]


def quantize_network(network: LoadedNetwork, export_path: Path, calibration: Calibration,
                     quantize: Callable[[Sequence[str]], tuple[Path, dict[str, Any]]],
                     graph_of: Optional[Callable[[Path], QuantizedGraph]] = None,
                     files_of: Callable[[Path], list[Path]] = lambda path: [path]) -> tuple[Path, dict[str, Any]]:
    """The quantized model from `quantize(float_nodes)`, with the nodes of the `keep_float` layers left in
    float, and what preparation reports of it. A `keep_float` naming no layer is refused. With the
    calibration's accuracy control and the runtime's `graph_of` (its QuantizedGraph of a quantized file), the
    operations that cost most return to float until the budget holds (int8_repair)."""
    try:
        if network.module is None:
            paths, float_nodes = [], file_float_nodes(export_path, calibration.keep_float)
        else:
            paths = float_module_paths(network.module, calibration.keep_float)
            float_nodes = decode_nodes(export_path, paths)
    except ValueError as error:
        raise RuntimeNotSupported(str(error)) from None
    model_path, quantization = quantize(float_nodes)
    quantization.update(calibration_images=calibration.images, float_layers=paths, float_nodes=len(float_nodes),
                        method=calibration.settings)
    if calibration.control is not None and graph_of is not None:
        model_path, quantization["accuracy_control"] = repaired(lambda: graph_of(Path(quantization["quantized_file"])),
                                                                calibration.control, Path(quantization["quantized_file"]),
                                                                files_of)
    return model_path, quantization


@contextmanager
def staging(target: Path) -> Iterator[Path]:
    """A folder beside `target` for the quantizer's files, removed afterwards: the cache only ever sees files
    moved into place whole."""
    directory = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.stem}."))
    try:
        yield directory
    finally:
        for leftover in directory.iterdir():
            leftover.unlink()
        directory.rmdir()


def quantized_path(export_path: Path, export_key: str, calibration: Calibration, settings: dict[str, str],
                   suffix: str, directory: Optional[Path] = None) -> tuple[Path, str]:
    """Where the quantized model is cached (beside the export, or in `directory`: never beside a user's file),
    and the key (in words) it is built for."""
    key = {"export": export_key, "calibration": calibration.digest, "images": str(calibration.images),
           "keep_float": ",".join(calibration.keep_float), **calibration.settings, **settings}
    text = ";".join(f"{name}={value}" for name, value in key.items())
    return (directory or export_path.parent) / f"{export_path.stem}.int8-{parts_digest(key)}{suffix}", text


def with_progress(calibration: Calibration, what: str) -> Iterator[np.ndarray]:
    yield from tqdm(calibration.inputs(), total=calibration.images, desc=f"calibrating {what}", unit="image",
                    disable=None, leave=False)
