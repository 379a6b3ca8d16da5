"""A .tflite read without running it (pipelines/exported/tflite_reading.py): its inputs and outputs with their free
axes and quantization, its weights' element type, Ultralytics' appended metadata, where it ends in
TFLite_Detection_PostProcess, and the files refused (not TFLite, truncated, an operator no runtime has). Small
files written here (tests/support/tflite_models.py)."""
from __future__ import annotations

import numpy as np
import pytest

from pipelines.exported.inspection import ExportedFileError, Tensor, read_exported
from tests.support.tflite_models import Graph, image_input, shifted_outputs, ssd_file

ANCHORS = np.array([[0.5, 0.5, 0.2, 0.2], [0.25, 0.25, 0.5, 0.5]], np.float32)


def test_inputs_outputs_and_the_appended_metadata_are_read(tmp_path):
    file = shifted_outputs(tmp_path / "y.tflite", [np.zeros((1, 6, 10))], ["Identity"], (1, 32, 32, 3),
                           metadata='{"names": {"0": "a", "1": "b"}, "task": "detect", "imgsz": [32, 32]}')
    read = read_exported(file)
    assert read.format == "tflite"
    assert read.inputs == (Tensor("images", (1, 32, 32, 3), "float32"),)
    assert read.outputs == (Tensor("Identity", (1, 6, 10), "float32"),)
    assert read.names() == ["a", "b"] and read.metadata["imgsz"] == [32, 32]
    assert read.channels_last and read.image_hw == (32, 32)
    assert read.precision == "float32" and read.tail is None


def test_free_axes_and_an_integer_inputs_quantization_are_kept(tmp_path):
    file = shifted_outputs(tmp_path / "q.tflite", [np.zeros((1, 6, 10))], ["out"], (1, 3, 16, 16), "int8",
                           (0.5, -3), signature=(-1, 3, -1, -1))
    read = read_exported(file)
    assert read.inputs[0] == Tensor("images", ("?", 3, "?", "?"), "int8", (0.5, -3))
    assert not read.channels_last and read.image_hw == ("?", "?")
    assert read.metadata == {}  # nothing appended


def test_a_python_literal_metadata_text_is_read_too(tmp_path):
    file = shifted_outputs(tmp_path / "old.tflite", [np.zeros((1, 6, 10))], ["out"], (1, 16, 16, 3),
                           metadata="{'names': {0: 'x'}, 'task': 'detect'}")
    assert read_exported(file).names() == ["x"]


def test_the_postprocess_operator_its_options_and_anchors_are_read(tmp_path):
    logits = np.zeros((2, 4), np.float32)
    file = ssd_file(tmp_path / "ssd.tflite", np.zeros((2, 4), np.float32), logits, ANCHORS, (1, 8, 8, 3),
                    output_order=(2, 0, 3, 1))
    read = read_exported(file)
    tail = read.tail
    assert tail.operator == "TFLite_Detection_PostProcess"
    assert tail.computed_inputs == ("raw_outputs/box_encodings", "raw_outputs/class_predictions")
    assert tail.outputs == ("TFLite_Detection_PostProcess", "TFLite_Detection_PostProcess:1",
                            "TFLite_Detection_PostProcess:2", "TFLite_Detection_PostProcess:3")
    assert tail.options["num_classes"] == 3 and tail.options["max_detections"] == 10
    assert tail.options["y_scale"] == 10.0 and tail.options["use_regular_nms"] is False
    np.testing.assert_array_equal(tail.constants["anchors"], ANCHORS)
    assert [t.name for t in read.outputs][0] == "TFLite_Detection_PostProcess:2"
    assert read.inputs[0].quantization == (1 / 128, 128)


def test_the_weights_element_type_is_the_one_most_bytes_are_stored_in(tmp_path):
    graph = Graph()
    image = image_input(graph, (1, 8, 8, 3))
    weights = graph.constant("weights", np.zeros((64, 8), np.float16), "float16")
    floats = graph.tensor("weights_f32", (64, 8))
    from ai_edge_litert import schema_py_generated as schema
    graph.op(schema.BuiltinOperator.DEQUANTIZE, [weights], [floats])
    mean = graph.mean_of(image, "float32")
    out = graph.shifted("out", np.zeros((1, 6, 4), np.float32), mean, 1.0)
    (tmp_path / "half.tflite").write_bytes(graph.serialised([image], [out]))
    assert read_exported(tmp_path / "half.tflite").precision == "float16"


def refused(path) -> str:
    with pytest.raises(ExportedFileError) as raised:
        read_exported(path)
    return str(raised.value)


def test_a_file_that_is_not_tflite_is_refused_by_its_identifier(tmp_path):
    (tmp_path / "x.tflite").write_bytes(b"<html>not a model</html>")
    message = refused(tmp_path / "x.tflite")
    assert "is not a TFLite model" in message and "TFL3" in message


@pytest.mark.parametrize("kept", [0.5, 0.95])
def test_a_truncated_file_is_refused_whatever_it_lost(tmp_path, kept):
    whole = ssd_file(tmp_path / "whole.tflite", np.zeros((2, 4), np.float32), np.zeros((2, 4), np.float32), ANCHORS,
                     (1, 8, 8, 3)).read_bytes()
    (tmp_path / "cut.tflite").write_bytes(whole[:int(len(whole) * kept)])
    message = refused(tmp_path / "cut.tflite")
    assert "is not a readable TFLite model" in message and "truncated" in message


@pytest.mark.parametrize("code, said", [("MyFancyNms", "custom operator(s) MyFancyNms, which neither LiteRT nor "
                                                       "OpenVINO has"),
                                        ("FlexAddV2", "TensorFlow operators (FlexAddV2: converted with "
                                                      "SELECT_TF_OPS)")])
def test_an_operator_no_runtime_has_is_refused_by_name(tmp_path, code, said):
    file = ssd_file(tmp_path / "custom.tflite", np.zeros((2, 4), np.float32), np.zeros((2, 4), np.float32), ANCHORS,
                    (1, 8, 8, 3), custom_code=code)
    message = refused(file)
    assert said in message and "builtin operators only" in message
