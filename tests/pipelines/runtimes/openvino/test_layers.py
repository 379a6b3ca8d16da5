"""OpenVINO's layer reader (pipelines/runtimes/openvino/layers.py): per-node counters become rows keyed by our
module paths, the first inferences left out, several kernels of one row named together, reorders OpenVINO inserted
under the Model."""
from __future__ import annotations

from pipelines.runtimes.openvino.layers import SOURCE as SOURCE_OPENVINO
from pipelines.runtimes.openvino.layers import NodeCounter
from tests.support.layer_rows import assert_adds_up, by_path, openvino_layers


US = 1000  # ns per microsecond


def counter(inference: int, name: str, node_type: str, exec_type: str, us: float,
            status: str = "EXECUTED") -> NodeCounter:
    return NodeCounter(inference, name, node_type, exec_type, us, us, status)


def test_openvino_counters_to_rows():
    counters = []
    for inference in range(3):  # the first is left out: forwards=2
        counters += [
            counter(inference, "images", "Parameter", "unknown_f32", 0, "NOT_RUN"),
            counter(inference, "images_abcd_acdb_/model.0/conv/Conv/WithoutBiases", "Reorder", "jit_uni_f32", 3),
            counter(inference, "/model.0/conv/Conv/WithoutBiases", "Convolution", "brgconv_avx512_amx_bf16", 40),
            counter(inference, "/model.77/m.0/Conv/WithoutBiases", "Convolution", "brgconv_avx512_1x1_bf16", 9.5),
            counter(inference, "/model.77/m.0/Add", "Add", "jit_avx512_bf16", 2),
            counter(inference, "/model.77/Concat_1", "Concat", "ref_f32", 1),
        ]
    counters.append(counter(2, "/model.77/Concat_2", "Concat", "unknown_f32", 7))  # another kernel, same row
    snapshot, source = openvino_layers(counters, forwards=2, images=2)
    assert source == SOURCE_OPENVINO
    rows = by_path(snapshot)
    assert list(rows) == ["Pipeline", "Model", "model.0.conv", "model.77", "model.77.m.0/Add",
                          "model.77.m.0/Convolution", "Model/Reorder", "Model/unattributed"]
    assert rows["model.0.conv"].name == "brgconv_avx512_amx_bf16" and rows["model.0.conv"].type == "Convolution"
    assert rows["model.0.conv"].parent == "model.0" and rows["model.0.conv"].depth == 3
    assert rows["model.77"].name == "ref_f32+unknown_f32" and rows["model.77"].call_total_ns == (1 * US, 8 * US)
    assert rows["model.77.m.0/Convolution"].total_ns == 19 * US
    assert rows["Model/unattributed"].total_ns == 0  # OpenVINO reports nodes only
    assert rows["Model"].total_ns == 2 * 55.5 * US + 7 * US
    assert_adds_up(snapshot)
