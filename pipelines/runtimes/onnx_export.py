"""Export a network to ONNX once and keep the file in an on-disk cache, for ONNX Runtime and OpenVINO.

The file is named by a digest of everything that determines its contents, so a second run with the same
network, exporter settings and library versions reuses it. It is written under a temporary name and renamed
into place, and checked against its checksum record before each use (cache_integrity).
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import tempfile
import time
import warnings
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import torch

from pipelines.cache_keys import default_cache_dir
from pipelines.contract import LoadedNetwork
from pipelines.runtimes import cache_integrity
from pipelines.runtimes.base import RuntimeNotSupported

INPUT_NAME = "images"
OUTPUT_NAME = "prediction"
# Batch and spatial axes stay free: rect letterbox shapes and a short last batch reuse the same file.
DYNAMIC_AXES = {INPUT_NAME: {0: "batch", 2: "height", 3: "width"}, OUTPUT_NAME: {0: "batch", 1: "candidates"}}


@dataclass(frozen=True)
class ExportResult:
    path: Path
    seconds: float  # time spent exporting; about 0 on a cache hit
    cache_hit: bool
    key: str  # what determines the file, in words; the file name is a digest of it
    cache_dir: Optional[Path] = None  # where what is made from it (int8) is cached; None: beside it


OPSET = 17  # the exports' ONNX opset: torch's legacy exporter and both runtimes' parsers take it


INPUT_TYPES = (torch.uint8, torch.int8, torch.float16)  # what a file's graph may take besides float32


def as_input(batch: torch.Tensor, dtype: torch.dtype = torch.float32) -> np.ndarray:
    """The array an exported graph's image input takes: float32, or what a file's graph takes (uint8 pixels, an
    int8 quantized input, float16)."""
    dtype = dtype if dtype in INPUT_TYPES else torch.float32
    return batch.detach().to(device="cpu", dtype=dtype).contiguous().numpy()


EXAMPLE_EXTRA = {"tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(float)": np.float32}


def example_extra(inputs: Any, batch: int) -> dict[str, np.ndarray]:
    """Values of a graph's further inputs for an example run (ONNX Runtime's NodeArg: name, shape, type): ones of
    the declared shape, the batch axis the example's, any other free axis 1. Their values never matter here."""
    examples = {}
    for node in inputs:
        shape = [batch if position == 0 else (size if isinstance(size, int) and size > 0 else 1)
                 for position, size in enumerate(node.shape)]
        examples[node.name] = np.ones(shape, dtype=EXAMPLE_EXTRA.get(node.type, np.float32))
    return examples


def export_key_parts(network: LoadedNetwork, example: torch.Tensor, opset: int, fuse: bool) -> dict[str, str]:
    # Only the example's rank enters the key: its sizes are dynamic axes of the exported graph.
    return {
        "network": network.cache_key,
        "fuse": str(bool(fuse and network.fuse is not None)),
        "opset": str(opset),
        "torch": torch.__version__,
        "onnx": metadata.version("onnx"),  # not imported: a run from the cache never pays its import (0.6 s)
        "input_rank": str(example.dim()),
    }


def export_onnx(network: LoadedNetwork, example: torch.Tensor, cache_dir: Union[Path, str, None] = None,
                opset: int = OPSET, fuse: bool = True) -> ExportResult:
    """The cached ONNX file of `network` (input "images", output "prediction"), exported on a cache miss or
    where the cached file is damaged (cache_integrity); a network that is a file already (model.file) is that
    file, read where it lies and keyed by its content.

    `fuse=False` exports the module as it stands (a module something else already fused stays fused)."""
    if network.file is not None:  # the user's file is read where it lies; what is made from it goes to the cache
        directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        directory.mkdir(parents=True, exist_ok=True)
        return ExportResult(Path(network.file), 0.0, True, f"file={network.cache_key}", directory)
    parts = export_key_parts(network, example, opset, fuse)
    key = ";".join(f"{name}={value}" for name, value in parts.items())
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = directory / f"{hashlib.sha256(key.encode()).hexdigest()[:20]}.onnx"
    directory.mkdir(parents=True, exist_ok=True)
    with cache_integrity.building(directory):
        if cache_integrity.usable([path], key):
            return ExportResult(path, 0.0, True, key)
        started = time.perf_counter()
        # The sidecar says in words what the file name's digest stands for.
        cache_integrity.write_atomically(path.with_suffix(".json"), json.dumps(parts, indent=2).encode())
        _export_into(path, network, example, opset, fuse)
        cache_integrity.record([path], key)
    return ExportResult(path, time.perf_counter() - started, False, key)


def _export_into(path: Path, network: LoadedNetwork, example: torch.Tensor, opset: int, fuse: bool) -> None:
    # A copy: tracing a live model once left its later eager bf16 outputs wrong (shared/notes/environment.md),
    # and the torch reference keeps using the original.
    module = copy.deepcopy(network.module)
    if fuse and network.fuse is not None:
        network.fuse(module)
    module.float().eval()
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".onnx.partial")
    os.close(handle)
    try:
        with warnings.catch_warnings():
            # The legacy exporter's deprecation notice and its tracer warnings about constant strides say
            # nothing the user can act on.
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            torch.onnx.export(module, (example.detach().float(),), temporary, dynamo=False, opset_version=opset,
                              input_names=[INPUT_NAME], output_names=[OUTPUT_NAME], dynamic_axes=DYNAMIC_AXES)
        import onnx

        onnx.checker.check_model(temporary)
        os.replace(temporary, path)
    except Exception as error:
        raise RuntimeNotSupported(
            f"ONNX export (opset {opset}, legacy exporter) of the {type(network.module).__name__} network "
            f"{network.cache_key} failed: {type(error).__name__}: {error}") from error
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
