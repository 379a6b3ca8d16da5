"""pipelines/exported/layouts/dfine.py: postprocessing in the graph, fed each image's original size."""
import torch

from pipelines.exported.layouts import dfine
from pipelines.exported.layouts.contract import Misfit
from tests.support.exported_files import IMAGE, exported

INPUTS = [IMAGE, ("orig_target_sizes", (1, 2), "int64")]


def test_its_outputs_are_found_by_name_or_by_rank_and_the_sizes_input_is_filled():
    named = dfine.read(exported([("scores", (1, 300)), ("labels", (1, 300), "int64"), ("boxes", (1, 300, 4))],
                                INPUTS))
    assert named.roles == {"labels": 1, "boxes": 2, "scores": 0} and named.classes == dfine.CLASSES
    assert dict(named.extra_inputs) == {"orig_target_sizes": "original_wh"}
    unnamed = dfine.read(exported([("a", (1, 300)), ("b", (1, 300, 4)), ("c", (1, 300), "int64")], INPUTS))
    assert unnamed.roles == {"labels": 2, "boxes": 1, "scores": 0}  # the integer one holds the labels
    assert isinstance(dfine.read(exported([("a", (1, 300))] * 3, [IMAGE, ("sizes", (1, 3))])), Misfit)


def test_raw_rows_are_the_graphs_boxes_scores_and_labels():
    reading = dfine.read(exported([("labels", (1, 1), "int64"), ("boxes", (1, 1, 4)), ("scores", (1, 1))], INPUTS))
    found = dfine.raw((torch.tensor([[2]]), torch.tensor([[[1.0, 2.0, 3.0, 4.0]]]), torch.tensor([[0.5]])),
                      reading, 64, 64)
    assert found.tolist() == [[[1.0, 2.0, 3.0, 4.0, 0.5, 2.0]]]
