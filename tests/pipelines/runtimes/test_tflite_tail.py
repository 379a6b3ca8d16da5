"""A .tflite graph cut before the operator a runtime lacks (pipelines/runtimes/tflite_tail.py), on a small SSD file
written by hand (tests/support/tflite_models.py): the cached copy ends at the operator's inputs and runs on LiteRT
without it, the user's file is left as it was, a hit is not rebuilt, a damaged copy is, and the cache key follows
the file's content and the tensors asked for."""
from __future__ import annotations

import numpy as np
from ai_edge_litert.interpreter import Interpreter
from ai_edge_litert.tools import flatbuffer_utils

from pipelines.contract import GraphTail
from pipelines.runtimes import tflite_tail
from pipelines.runtimes.tflite_tail import ended_before
from tests.support.tflite_models import POSTPROCESS, ssd_file

TAIL = GraphTail(POSTPROCESS, ("raw_outputs/box_encodings", "raw_outputs/class_predictions"))
ENCODINGS = np.array([[0, 0, 0, 0], [1.0, -1.0, 0.5, 0.0]], np.float32)
LOGITS = np.array([[0, 2.0, -5, -5], [0, -5, 1.0, -5]], np.float32)
ANCHORS = np.array([[0.5, 0.5, 0.2, 0.2], [0.25, 0.25, 0.5, 0.5]], np.float32)


def ssd(tmp_path, logits=LOGITS):
    return ssd_file(tmp_path / "ssd.tflite", ENCODINGS, logits, ANCHORS, (1, 16, 16, 3))


def cache_of(tmp_path):
    # The runtime's cache folder exists by then (cache_integrity.usable_directory made it).
    folder = tmp_path / "cache"
    folder.mkdir(exist_ok=True)
    return folder


def counting_builds(monkeypatch) -> list:
    builds, real = [], tflite_tail._without
    monkeypatch.setattr(tflite_tail, "_without", lambda source, tail: builds.append(source) or real(source, tail))
    return builds


def test_the_copy_ends_at_the_operators_inputs_and_runs_without_it(tmp_path):
    source = ssd(tmp_path)
    before = source.read_bytes()
    copy = ended_before(source, TAIL, cache_of(tmp_path))
    assert copy.parent == tmp_path / "cache" and copy.suffix == ".tflite" and source.read_bytes() == before
    model = flatbuffer_utils.read_model(str(copy))
    graph = model.subgraphs[0]
    codes = [code.customCode for code in model.operatorCodes]
    assert all(codes[op.opcodeIndex] not in (POSTPROCESS, POSTPROCESS.encode()) for op in graph.operators)
    names = [graph.tensors[index].name for index in graph.outputs]
    assert [name.decode() if isinstance(name, bytes) else name for name in names] == list(TAIL.inputs)
    interpreter = Interpreter(model_path=str(copy))
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], np.full((1, 16, 16, 3), 128, np.uint8))
    interpreter.invoke()
    boxes, scores = (interpreter.get_tensor(detail["index"]) for detail in interpreter.get_output_details())
    np.testing.assert_allclose(boxes, ENCODINGS[None], atol=1e-6)
    np.testing.assert_allclose(scores, 1 / (1 + np.exp(-LOGITS[None])), atol=1e-6)


def test_a_cached_copy_is_used_and_a_damaged_one_rebuilt(tmp_path, monkeypatch):
    builds = counting_builds(monkeypatch)
    source, cache = ssd(tmp_path), cache_of(tmp_path)
    copy = ended_before(source, TAIL, cache)
    whole = copy.read_bytes()
    assert ended_before(source, TAIL, cache) == copy and len(builds) == 1
    copy.write_bytes(whole[: len(whole) // 2])  # cut short, as a full disk leaves it
    assert ended_before(source, TAIL, cache) == copy and len(builds) == 2
    assert copy.read_bytes() == whole


def test_the_key_follows_the_files_content_and_the_tensors_asked_for(tmp_path):
    cache = cache_of(tmp_path)
    first = ended_before(ssd(tmp_path), TAIL, cache)
    boxes_only = ended_before(ssd(tmp_path), GraphTail(POSTPROCESS, TAIL.inputs[:1]), cache)
    other_file = ended_before(ssd(tmp_path, LOGITS + 1), TAIL, cache)  # the same path, new content
    assert len({first, boxes_only, other_file}) == 3
    assert len(flatbuffer_utils.read_model(str(boxes_only)).subgraphs[0].outputs) == 1
