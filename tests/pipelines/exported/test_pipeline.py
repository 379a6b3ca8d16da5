"""pipelines/exported/pipeline.py: the decode after the file's forward, and the doubt kept on an assumed layout."""
import torch

from pipelines.boxes.nms import NmsSettings
from pipelines.exported.layouts import end2end
from pipelines.exported.layouts.contract import ASSUMED, SIGNED, Reading
from pipelines.exported.pipeline import Decode, Seen, as_tuple


def test_one_output_alone_is_a_tuple_too():
    out = torch.zeros(1)
    assert as_tuple(out) == (out,) and as_tuple([out, out]) == (out, out)


def test_without_nms_the_decode_is_the_score_cut_and_another_cut_is_a_new_decode():
    rows = torch.tensor([[[0, 0, 8, 8, 0.9, 1], [0, 0, 8, 8, 0.2, 0]]])
    decode = Decode(end2end, Reading("end2end", 2, "why", SIGNED), NmsSettings(0.25, 0.5))
    assert [found[:, 4].tolist() for found in decode(rows, 64, 64)] == [[0.8999999761581421]]
    lower = decode.at(0.1)
    assert lower.conf_thres == 0.1 and decode.conf_thres == 0.25 and len(lower(rows, 64, 64)[0]) == 2
    assert decode.scores(rows).tolist() == [[0.8999999761581421, 0.20000000298023224]]


def test_an_assumed_layout_is_doubted_when_its_boxes_are_implausible_or_nothing_passes():
    assert Seen(images=3).doubt() == "no score passed the cut in any of 3 decoded image(s)"
    inside, outside = torch.tensor([[1.0, 1, 8, 8, 0.9, 0]]), torch.tensor([[70.0, 1, 80, 8, 0.9, 0]] * 2)
    seen = Seen().add([inside, outside], 64, 64)
    assert (seen.images, seen.kept, seen.implausible) == (2, 3, 2) and "2 of 3 boxes" in seen.doubt()
    assert Seen().add([inside], 64, 64).doubt() is None
    decode = Decode(end2end, Reading("end2end", 1, "why", ASSUMED), NmsSettings(0.25, 0.5))
    decode(torch.tensor([[[0.0, 0, 8, 8, 0.1, 0]]]), 64, 64)
    assert decode.seen.images == 1 and decode.seen.doubt() is not None
