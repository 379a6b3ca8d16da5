"""The R-CNN pipeline (pipelines/rcnn/pipeline.py) on a tiny Faster R-CNN with seeded random weights and tiny
images: the head settings it puts on the network's modules (again at every forward), boxes mapped back to the
original images, the cut of postprocess_at, the raw output by rank, its stages, parts and batch shapes, and the
same detections as torchvision's own model. No download."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.models.detection.rpn import AnchorGenerator
from torchvision.ops import MultiScaleRoIAlign

from pipelines.contract import FORWARD_STAGE
from pipelines.rcnn.network import TwoStageNetwork
from pipelines.rcnn.pipeline import BATCHING_NOTE, Forwarded, HeadSettings, RcnnPipeline, detections_tensor
from pipelines.runtimes.base import PreparedForward
from pipelines.torchvision_common.transform import Postprocess, Preprocess, TransformSettings

SETTINGS = HeadSettings(score_thresh=0.2, nms_thresh=0.5, detections_per_img=5, rpn_pre_nms_top_n=100,
                        rpn_post_nms_top_n=50)


def tiny_detector(seed: int = 0) -> FasterRCNN:
    """A Faster R-CNN whose backbone is one stride-4 conv, 3 classes, its transform at min = max size 64."""
    torch.manual_seed(seed)
    backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=4, padding=1), nn.ReLU())
    backbone.out_channels = 8
    return FasterRCNN(backbone, rpn_anchor_generator=AnchorGenerator(((16,),), ((1.0,),)),
                      box_roi_pool=MultiScaleRoIAlign(["0"], 7, 2), box_head=TwoMLPHead(8 * 7 * 7, 32),
                      box_predictor=FastRCNNPredictor(32, 3), min_size=64, max_size=64).eval()


def build(model: FasterRCNN, settings: HeadSettings = SETTINGS, min_size: int = 64, max_size: int = 64):
    network = TwoStageNetwork(model).eval()

    def run(batch, *extra):
        with torch.inference_mode():
            return network(batch, *extra)

    transform = model.transform
    pre = Preprocess(TransformSettings(min_size, max_size, tuple(transform.image_mean), tuple(transform.image_std)))
    return RcnnPipeline(PreparedForward(run, network), network, ["bg", "a", "b"], pre, Postprocess(pre.transform),
                        settings)


def random_image(height: int, width: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


@pytest.fixture(scope="module")
def pipeline():
    return build(tiny_detector())


# --- settings on the network's modules ---------------------------------------------------------------------------

def test_head_settings_land_on_the_modules_at_test_time_only():
    network = TwoStageNetwork(tiny_detector())
    training = dict(network.rpn._pre_nms_top_n)["training"], dict(network.rpn._post_nms_top_n)["training"]
    SETTINGS.apply(network)
    heads = network.roi_heads
    assert (heads.score_thresh, heads.nms_thresh, heads.detections_per_img) == (0.2, 0.5, 5)
    assert network.rpn._pre_nms_top_n["testing"] == 100 and network.rpn._post_nms_top_n["testing"] == 50
    assert (network.rpn._pre_nms_top_n["training"], network.rpn._post_nms_top_n["training"]) == training


def test_every_forward_puts_its_own_settings_back(pipeline):
    # Another pipeline on the same network (the accuracy pass's, at its own cut) changes them in between.
    HeadSettings(0.9, 0.1, 1, 10, 10).apply(pipeline.network)
    batch = pipeline.preprocess([random_image(48, 64)])
    found = pipeline.forward(batch).detections[0]
    assert pipeline.network.roi_heads.score_thresh == 0.2 and pipeline.network.rpn._post_nms_top_n["testing"] == 50
    assert 0 < len(found["scores"]) <= 5 and float(found["scores"].min()) > 0.2


# --- the whole pipeline ------------------------------------------------------------------------------------------

def test_detections_are_torchvisions_own_in_the_original_pixels():
    model = tiny_detector()
    pipeline = build(model)
    image = random_image(40, 80, seed=1)  # resized by 0.8 to 32 x 64, then padded to 64 x 64
    ours = pipeline([image])[0]
    rgb = torch.from_numpy(np.ascontiguousarray(image[..., ::-1].transpose(2, 0, 1))).float() / 255.0
    with torch.inference_mode():
        theirs = model([rgb])[0]  # the same modules, so the same head settings
    assert len(ours) == len(theirs["boxes"]) == 5
    assert torch.equal(ours.boxes, theirs["boxes"]) and torch.equal(ours.scores, theirs["scores"])
    assert torch.equal(ours.labels, theirs["labels"]) and ours.masks is None
    assert float(ours.boxes[:, [0, 2]].max()) <= 80 and float(ours.boxes[:, [1, 3]].max()) <= 40


def fixed_forwarded(pipeline: RcnnPipeline) -> Forwarded:
    """A 32 x 64 image resized by 0.5 (min_size 16) to 16 x 32; two detections in those resized pixels."""
    batch = pipeline.preprocess([random_image(32, 64)])
    detections = [{"boxes": torch.tensor([[2.0, 2.0, 6.0, 6.0], [8.0, 4.0, 12.0, 8.0]]),
                   "scores": torch.tensor([0.5, 0.7]), "labels": torch.tensor([1, 2])}]
    return Forwarded(batch, detections)


def test_boxes_go_back_to_the_original_image_and_the_cut_is_strict():
    pipeline = build(tiny_detector(), min_size=16, max_size=1000)
    forwarded = fixed_forwarded(pipeline)
    assert forwarded.batch.images.image_sizes == [(16, 32)] and forwarded.batch.original_sizes == [(32, 64)]
    every = pipeline.postprocess(forwarded)[0]
    assert every.boxes.tolist() == [[4.0, 4.0, 12.0, 12.0], [16.0, 8.0, 24.0, 16.0]]  # twice the resized pixels
    forwarded = fixed_forwarded(pipeline)
    cut = pipeline.postprocess_at(forwarded, 0.5)[0]  # 0.5 itself is not above 0.5
    assert cut.boxes.tolist() == [[16.0, 8.0, 24.0, 16.0]] and cut.labels.tolist() == [2]
    assert cut.scores.tolist() == pytest.approx([0.7])
    assert len(pipeline.postprocess_at(forwarded, 0.7)[0]) == 0
    # postprocess_at leaves the forward's detections as they were, in the resized pixels
    assert forwarded.detections[0]["boxes"].tolist() == [[2.0, 2.0, 6.0, 6.0], [8.0, 4.0, 12.0, 8.0]]


def test_postprocess_leaves_the_forward_as_it_was_for_postprocess_at():
    pipeline = build(tiny_detector(), min_size=16, max_size=1000)
    forwarded = fixed_forwarded(pipeline)
    pipeline.postprocess(forwarded)
    assert pipeline.postprocess_at(forwarded, 0.5)[0].boxes.tolist() == [[16.0, 8.0, 24.0, 16.0]]


def test_the_raw_output_ranks_detections_in_rows_of_detections_per_img():
    pipeline = build(tiny_detector(), min_size=16, max_size=1000)
    raw = pipeline.raw_output(fixed_forwarded(pipeline))
    assert raw.shape == (1, 5, 6)
    assert raw[0, :2].tolist() == [[8.0, 4.0, 12.0, 8.0, pytest.approx(0.7), 2.0],
                                   [2.0, 2.0, 6.0, 6.0, 0.5, 1.0]]
    assert raw[0, 2:].abs().sum() == 0
    assert pipeline.candidate_scores(raw)[0].tolist() == pytest.approx([0.7, 0.5, 0, 0, 0])


def test_detections_tensor_pads_truncates_and_keeps_ties_in_order():
    found = [{"boxes": torch.arange(12, dtype=torch.float64).reshape(3, 4), "scores": torch.tensor([0.25, 0.5, 0.25]),
              "labels": torch.tensor([7, 8, 9])},
             {"boxes": torch.zeros(0, 4), "scores": torch.zeros(0), "labels": torch.zeros(0, dtype=torch.int64)}]
    raw = detections_tensor(found, 2)
    assert raw.dtype == torch.float32 and raw.shape == (2, 2, 6)
    assert raw[0].tolist() == [[4.0, 5.0, 6.0, 7.0, 0.5, 8.0], [0.0, 1.0, 2.0, 3.0, 0.25, 7.0]]  # the tie's first
    assert raw[1].abs().sum() == 0


# --- what the harness reads of it --------------------------------------------------------------------------------

def test_stages_parts_and_targets(pipeline):
    assert [stage.name for stage in pipeline.stages()] == ["preprocess", FORWARD_STAGE, "postprocess"]
    assert all(stage.parent is None for stage in pipeline.stages())
    network = pipeline.network
    assert pipeline.forward_parts() == (("backbone", network.backbone), ("rpn", network.rpn),
                                        ("roi_heads", network.roi_heads))
    targets = pipeline.layer_timing_targets()
    assert targets.model is network and targets.pre_transforms == (pipeline.preprocessor,)
    assert targets.post_transforms == (pipeline.postprocessor,)
    assert targets.functional_paths == ("backbone.fpn", "rpn", "roi_heads")
    assert pipeline.family == "rcnn" and pipeline.batching_note == BATCHING_NOTE
    assert "pads every image of a batch to the batch's largest" in BATCHING_NOTE
    assert pipeline.score_threshold == 0.2 and pipeline.class_names == ["bg", "a", "b"]


def test_the_input_shape_is_the_padded_batch_the_transform_makes():
    pipeline = build(tiny_detector(), min_size=16, max_size=1000)
    # 32 x 64 by 0.5 is 16 x 32; 20 x 10 by 1.6 is 32 x 16; padded to the largest, in multiples of 32.
    assert pipeline.input_shape([(32, 64), (20, 10)]) == (2, 3, 32, 32)
    odd = build(tiny_detector(), min_size=30, max_size=50)
    sizes = [(100, 300), (77, 41)]
    images = [random_image(height, width) for height, width in sizes]
    assert odd.input_shape(sizes) == tuple(odd.preprocess(images).images.tensors.shape)
