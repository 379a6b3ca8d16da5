"""MACs counted from an ONNX graph at the input shape an inference saw (pipelines/runtimes/graph_macs.py), and
the per-layer rows of a runtime outside torch that carry them."""
import warnings

import torch
from torch import nn

from pipelines.runtimes.graph_macs import macs_by_scope, node_macs
from pipelines.runtimes.profiles import NodeRun, NodeRuns, scope_of
from utils.measure.layers.runtime_layers import layer_timing


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.head = nn.Linear(4, 5)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.conv(images).mean(dim=(2, 3)))


def export(tmp_path):
    path = tmp_path / "small.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Small().eval(), (torch.zeros(1, 3, 16, 16),), str(path), dynamo=False, opset_version=17,
                          input_names=["images"], output_names=["out"],
                          dynamic_axes={"images": {0: "batch", 2: "height", 3: "width"}})
    return path


def test_conv_and_linear_macs_by_hand_at_each_input_shape(tmp_path):
    path = export(tmp_path)
    macs = node_macs(str(path), (1, 3, 16, 16))
    # conv: 4 x 16 x 16 outputs x (3 x 3 x 3) taps; linear: 5 outputs x 4 inputs
    assert sorted(macs.values()) == [5 * 4, 4 * 16 * 16 * 27]
    assert sorted(node_macs(str(path), (2, 3, 32, 16)).values()) == [2 * 5 * 4, 2 * 4 * 32 * 16 * 27]
    assert macs_by_scope(path, (1, 3, 16, 16), scope_of) == {("conv",): 27648, ("head",): 20}


def test_a_runtimes_rows_carry_the_graphs_macs_of_the_inferences_they_ran(tmp_path):
    path = export(tmp_path)
    nodes = (NodeRun(0, ("conv",), "Conv", "", 1000), NodeRun(1, ("conv",), "Conv", "", 1000),
             NodeRun(0, ("head",), "Gemm", "", 100), NodeRun(1, ("head",), "Gemm", "", 100))
    runs = NodeRuns(nodes, (2000, 2000), "test", input_shapes=((1, 3, 16, 16), (1, 3, 32, 32)), graph=str(path))
    snapshot = layer_timing(runs, images=2).snapshot
    rows = {record.path: record for record in snapshot.records}
    assert rows["conv"].macs_total == 27648 + 4 * 32 * 32 * 27 and rows["head"].macs_total == 40
    assert snapshot.flops_per_forward == 2 * (27648 + 4 * 32 * 32 * 27 + 40) / 2  # FLOPs = 2 MACs, over 2 forwards
    unknown = NodeRuns(nodes, (2000, 2000), "test")  # no graph: nothing to count from
    assert layer_timing(unknown, images=2).snapshot.macs_total == 0
