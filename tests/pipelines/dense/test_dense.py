"""The dense family (torchvision's RetinaNet, FCOS, SSD, SSDlite) against torchvision itself, on spread random
weights at small sizes, and through the whole harness on every runtime that can export it."""
import json
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest
import torch
from torchvision.models import detection
from torchvision.models.detection.image_list import ImageList

from benchmark import main
from models import CheckpointError
from pipelines.dense import family
from pipelines.dense.network import Decode, LevelSizes
from pipelines.dense.pipeline import DensePipeline
from pipelines.runtimes.registry import build_runtime
from utils.config.schema import config_for
from tests.support.paths import ROOT

pytestmark = pytest.mark.slow  # torchvision's dense detectors built, run and exported

SAMPLES = ROOT / "datasets" / "samples"
SMALL = {"retinanet_resnet50_fpn": {"img_size": 128, "max_size": 192},
         "retinanet_resnet50_fpn_v2": {"img_size": 128, "max_size": 192},
         "fcos_resnet50_fpn": {"img_size": 128, "max_size": 192},
         "ssd300_vgg16": {},  # its layers need at least 268
         "ssdlite320_mobilenet_v3_large": {"img_size": 160}}


def photo(name: str) -> np.ndarray:
    return cv2.imread(str(SAMPLES / name))


def as_rgb_tensor(image: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(image[..., ::-1].transpose(2, 0, 1))).float() / 255.0


def pipeline(arch: str, network=None, **postprocess):
    config = config_for(arch, preprocess=SMALL[arch], postprocess=postprocess)
    network = network or family.load_network(arch, None, 0)
    forward = build_runtime("torch", fuse=False, precision="fp32").prepare(
        network, family.example_input(config.preprocess))
    return family.build_pipeline(network, forward, config.preprocess, config.postprocess), config


def torchvision_own(arch: str, state: dict, config) -> torch.nn.Module:
    """torchvision's model on the same weights and settings, whose model([image]) the pipeline must equal."""
    model = getattr(detection, arch)(weights=None, weights_backbone=None).eval()
    model.load_state_dict(state)  # strict: the network's keys are torchvision's own
    post, pre = config.postprocess, config.preprocess
    model.score_thresh, model.nms_thresh = post.conf_thres, post.iou_thres
    model.detections_per_img, model.topk_candidates = post.max_det, post.topk_candidates
    model.transform.min_size, model.transform.max_size = (pre.img_size,), pre.max_size
    if model.transform.fixed_size is not None:
        model.transform.fixed_size = (pre.img_size, pre.img_size)
    return model


@pytest.mark.parametrize("arch", list(SMALL))
def test_detections_equal_torchvisions_own_model_on_the_same_weights(arch):
    ours, config = pipeline(arch)
    images = [photo("eagle.jpg"), photo("kite.jpg")]
    state = {k: v for k, v in ours.prepared.module.state_dict().items()}
    model = torchvision_own(arch, state, config)
    with torch.inference_mode():
        found = ours(images)
        theirs = model([as_rgb_tensor(image) for image in images])
    assert sum(len(d) for d in found) > 0  # spread random weights detect something at the deployed cut 0.5
    for mine, own in zip(found, theirs):
        assert torch.equal(mine.boxes, own["boxes"]) and torch.equal(mine.scores, own["scores"])
        assert torch.equal(mine.labels, own["labels"])
        assert bool((mine.scores > config.postprocess.conf_thres).all())


def test_the_evaluation_cut_keeps_what_the_deployed_cut_keeps_and_more():
    ours, config = pipeline("ssdlite320_mobilenet_v3_large")
    forwarded = ours.forward(ours.preprocess([photo("dog.jpg")]))
    deployed = ours.postprocess_at(forwarded, config.postprocess.conf_thres)[0]
    evaluated = ours.postprocess_at(forwarded, config.benchmark.accuracy.conf_thres)[0]
    assert config.benchmark.accuracy.conf_thres == 0.001 and len(evaluated) > len(deployed) > 0
    assert len(evaluated) <= config.postprocess.max_det


def test_a_zero_regression_decodes_to_its_anchor_with_the_sigmoid_of_its_logit():
    """Hand-computed: RetinaNet's box coder moves an anchor by (dx, dy, dw, dh) = 0 not at all, and its score is
    the sigmoid of the class logit."""
    network = family.load_network("retinanet_resnet50_fpn", None, 0).module
    decode = Decode(network.decoding, LevelSizes(network.backbone), 0.5, 0.5, 10, 1000)
    images = ImageList(torch.zeros(1, 3, 128, 128), [(128, 128)])
    sizes = decode.level_sizes(128, 128)
    assert sizes == [(16, 16), (8, 8), (4, 4), (2, 2), (1, 1)]  # strides 8 to 128
    rows = 9 * sum(h * w for h, w in sizes)
    joined = torch.full((1, rows, 4 + 91), -20.0)
    joined[..., :4] = 0.0
    joined[0, 0, 4 + 17] = 2.0  # level 0, cell (0, 0), anchor 0 (size 32, ratio 0.5), class 17
    found = decode(joined, images)[0]
    # torchvision's anchor: a 32-px area at ratio h/w 0.5 -> w = 32 / sqrt(0.5), h = 32 * sqrt(0.5), centred on (0, 0),
    # both rounded as its AnchorGenerator rounds them.
    half_w, half_h = round(32 / 0.5 ** 0.5 / 2), round(32 * 0.5 ** 0.5 / 2)
    assert found["labels"].tolist() == [17]
    assert found["scores"].tolist() == pytest.approx([1 / (1 + np.exp(-2.0))])
    assert found["boxes"][0].tolist() == pytest.approx([0.0, 0.0, half_w, half_h])  # clipped to the image at 0


def test_a_saved_state_dict_loads_through_the_config_key_and_gives_the_same_detections(tmp_path):
    arch = "ssdlite320_mobilenet_v3_large"
    seeded, _ = pipeline(arch)
    path = tmp_path / "seeded.pth"
    torch.save(torchvision_own(arch, seeded.prepared.module.state_dict(), config_for(arch)).state_dict(), path)
    network = family.load_network(arch, str(path), seed=7)
    assert network.random_weights is False and network.weights == "checkpoint seeded.pth"
    loaded, _ = pipeline(arch, network=network)
    image = photo("dog.jpg")
    ours, theirs = seeded([image])[0], loaded([image])[0]
    assert torch.equal(ours.boxes, theirs.boxes) and torch.equal(ours.labels, theirs.labels)
    other = tmp_path / "retina.pth"
    torch.save(detection.retinanet_resnet50_fpn(weights=None, weights_backbone=None).state_dict(), other)
    with pytest.raises(CheckpointError, match=f"retina.pth does not fit model.arch {arch}: .* key\\(s\\) missing"):
        family.load_network(arch, str(other), 0)


def _run(tmp_path, run_id: str, *overrides: str) -> Path:
    images = tmp_path / "images"
    images.mkdir(exist_ok=True)
    for name in ("dog.jpg", "eagle.jpg", "kite.jpg"):
        (images / name).write_bytes((SAMPLES / name).read_bytes())
    args = ["--config", str(ROOT / "configs" / "samples_ssdlite.yaml"), "--set", f"dataset.path={images}",
            "--set", f"run.output_dir={tmp_path / 'out'}", "--set", f"run.id={run_id}",
            "--set", "preprocess.img_size=160", "--set", "benchmark.repeats=1", "--set", "outputs.plots=false",
            "--set", "benchmark.energy.enabled=false"]
    for override in overrides:
        args += ["--set", override]
    assert main(args) == 0
    return tmp_path / "out" / run_id


def test_a_run_times_decode_apart_and_hooks_every_layer(tmp_path):
    run = _run(tmp_path, "torch")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["family"] == "dense" and summary["img_size"] == 160
    steps = pd.read_csv(run / "steps_timer.csv")
    assert {"preprocess", "forward", "decode", "scale_boxes"} <= set(steps["step"])
    assert set(steps.loc[steps["step"] == "decode", "parent"]) == {"postprocess"}
    layers = pd.read_csv(run / "layer_timer.csv")
    assert "head.classification_head.module_list.0.1" in set(layers["path"])
    assert float(layers["macs"].sum()) > 0


@pytest.mark.parametrize("backend", ["onnxruntime", "openvino"])
def test_an_exported_runtime_gives_the_references_detections(tmp_path, backend):
    run = _run(tmp_path, backend, f"runtime.backend={backend}", "benchmark.layer_timing=false",
               f"runtime.cache_dir={tmp_path / 'cache'}")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["agreement"]["verdict"] == "equal", summary["agreement"]
    assert summary["agreement"]["at_configured_conf_thres"]["conf_thres"] == 0.5


def test_batching_is_noted_where_the_transform_pads_and_not_for_a_fixed_square():
    padded, _ = pipeline("fcos_resnet50_fpn")
    square, _ = pipeline("ssdlite320_mobilenet_v3_large")
    assert "pads every image of a batch" in padded.batching_note and square.batching_note is None
    assert isinstance(padded, DensePipeline) and isinstance(square, DensePipeline)
    # The decode and the scaling back are postprocessing, each timed apart after the forward.
    assert [stage.name for stage in padded.stages()] == ["preprocess", "forward", "decode", "scale_boxes"]
    assert square.input_shape([(480, 640), (300, 200)]) == (2, 3, 160, 160)  # a fixed square at img_size
