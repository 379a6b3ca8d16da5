"""A .tflite file's graph ended before an operator a runtime lacks (OpenVINO has no TFLite_Detection_PostProcess):
a copy whose outputs are the tensors the graph computes for that operator, with the operator removed, written to
the cache keyed by the file's content (the user's file is never written). The family then does the operator's work
on those outputs (network.tail says which)."""
from __future__ import annotations

import hashlib
from pathlib import Path

from pipelines.cache_keys import file_digest
from pipelines.contract import GraphTail
from pipelines.runtimes import cache_integrity


def ended_before(source: Path, tail: GraphTail, cache_dir: Path) -> Path:
    """The cached copy of `source` ending at `tail.inputs`, made on a miss or where the cached copy is damaged."""
    key = f"tflite={file_digest(source)};ends_before={tail.operator};outputs={','.join(tail.inputs)}"
    path = cache_dir / f"{hashlib.sha256(key.encode()).hexdigest()[:20]}.tflite"
    with cache_integrity.building(cache_dir):
        if not cache_integrity.usable([path], key):
            cache_integrity.write_atomically(path, _without(source, tail))
            cache_integrity.record([path], key)
    return path


def _without(source: Path, tail: GraphTail) -> bytes:
    from ai_edge_litert.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model(str(source))
    subgraph = model.subgraphs[0]
    index = {(tensor.name.decode() if isinstance(tensor.name, bytes) else tensor.name): position
             for position, tensor in enumerate(subgraph.tensors)}
    codes = [code.customCode.decode() if isinstance(code.customCode, bytes) else code.customCode
             for code in model.operatorCodes]
    subgraph.operators = [op for op in subgraph.operators if codes[op.opcodeIndex] != tail.operator]
    subgraph.outputs = [index[name] for name in tail.inputs]
    model.signatureDefs = None  # the signature names the removed outputs
    return bytes(flatbuffer_utils.convert_object_to_bytearray(model))
