"""pipelines/exported/layouts/yolonas_batch.py: NMS in the graph, each image's rows counted."""
import torch

from pipelines.exported.decoding import PAD_SCORE
from pipelines.exported.layouts import yolonas_batch
from pipelines.exported.layouts.contract import NAMED, SIGNED, Misfit
from tests.support.exported_files import exported

NAMED_OUTPUTS = [("graph2_num_predictions", (1, 1), "int64"), ("graph2_pred_boxes", (1, 2, "?")),
                 ("graph2_pred_scores", (1, 2)), ("graph2_pred_classes", (1, 2), "int64")]


def test_its_names_even_prefixed_make_it_named_else_the_ranks_sign_it():
    assert yolonas_batch.read(exported(NAMED_OUTPUTS)).confidence == NAMED
    unnamed = [("a", (1, 1)), ("b", (1, 2, 4)), ("c", (1, 2)), ("d", (1, 2))]
    assert yolonas_batch.read(exported(unnamed)).confidence == SIGNED
    tf_style = [("a", (1,)), ("b", (1, 2, 4)), ("c", (1, 2)), ("d", (1, 2))]  # a count of shape (B,)
    assert isinstance(yolonas_batch.read(exported(tf_style)), Misfit)


def test_rows_past_each_images_count_are_padding():
    reading = yolonas_batch.read(exported(NAMED_OUTPUTS))
    found = yolonas_batch.raw((torch.tensor([[1]]), torch.tensor([[[1.0, 2, 3, 4], [5, 6, 7, 8]]]),
                               torch.tensor([[0.9, 0.8]]), torch.tensor([[3, 1]])), reading, 64, 64)
    assert found[0, 0].tolist() == [1.0, 2.0, 3.0, 4.0, 0.8999999761581421, 3.0] and found[0, 1, 4] == PAD_SCORE
