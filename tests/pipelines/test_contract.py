"""The contract every family's pipeline keeps (pipelines/contract.py): its stages run in order on the images, its
step order puts each group before its first child and the forward's parts after the forward, and one image's
detections count their boxes. Each family's own pipeline is tested beside it."""
import numpy as np
import torch
from torch import nn

from pipelines.contract import FORWARD_STAGE, Detections, DetectionPipeline, LayerTimingTargets, Stage


class Counting(DetectionPipeline):
    """A pipeline of plain steps: each stage records its name, the forward has two parts."""

    family, class_names, score_threshold = "test", ["thing"], 0.5

    def __init__(self, parts=()):
        self.ran: list[str] = []
        self.parts = tuple(parts)

    def _step(self, name):
        def run(value):
            self.ran.append(name)
            return value + [name]
        return run

    def stages(self):
        return (Stage("preprocess", self._step("preprocess")), Stage(FORWARD_STAGE, self._step(FORWARD_STAGE)),
                Stage("nms", self._step("nms"), parent="postprocess"),
                Stage("scale_boxes", self._step("scale_boxes"), parent="postprocess"))

    def forward_parts(self):
        return self.parts

    def layer_timing_targets(self):
        return LayerTimingTargets(None)

    def raw_output(self, forwarded):
        return forwarded

    def candidate_scores(self, raw):
        return raw

    def postprocess_at(self, forwarded, conf_thres):
        return []

    def input_shape(self, sizes):
        return (len(sizes), 3, 32, 32)


def test_a_pipeline_runs_its_stages_in_order_on_the_images():
    pipeline = Counting()
    assert pipeline([np.zeros((2, 2, 3))])[1:] == ["preprocess", FORWARD_STAGE, "nms", "scale_boxes"]
    assert pipeline.ran == ["preprocess", FORWARD_STAGE, "nms", "scale_boxes"]
    assert pipeline.doubts() == [] and pipeline.batching_note is None


def test_groups_come_before_their_first_child_and_forward_parts_after_the_forward():
    assert FORWARD_STAGE == "forward"
    assert Counting().step_order() == ("preprocess", "forward", "postprocess", "nms", "scale_boxes")
    parted = Counting(parts=[("backbone", nn.Identity()), ("head", nn.Identity())])
    assert parted.step_order() == ("preprocess", "forward", "backbone", "head", "postprocess", "nms", "scale_boxes")


def test_detections_count_their_boxes_and_carry_no_masks_by_default():
    found = Detections(torch.zeros(3, 4), torch.zeros(3), torch.zeros(3, dtype=torch.int64))
    assert len(found) == 3 and found.masks is None
    assert len(Detections(torch.zeros(0, 4), torch.zeros(0), torch.zeros(0, dtype=torch.int64))) == 0
    targets = LayerTimingTargets(None)
    assert targets.pre_transforms == targets.post_transforms == targets.functional_paths == ()
