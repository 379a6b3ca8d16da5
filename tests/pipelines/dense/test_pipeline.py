"""The dense pipeline (pipelines/dense/pipeline.py: torchvision's RetinaNet, FCOS, SSD, SSDlite) against torchvision
itself, on spread random weights at small sizes: the same detections, the evaluation cut keeping more than the
deployed one, its stages and the batching note."""
import pytest
import torch

from pipelines.dense import family
from pipelines.dense.pipeline import DensePipeline
from pipelines.torchvision_common import weights
from tests.support.torchvision_detectors import SMALL, as_rgb_tensor, photo, pipeline, torchvision_own

pytestmark = pytest.mark.slow  # torchvision's dense detectors built and run

# The equality check at the least its architecture takes: the resizing transforms (RetinaNet, FCOS) at half the
# other tests' SMALL sizes, their FPN's coarsest level still a whole cell; SSD300 and SSDlite at SMALL's.
TINY = {**SMALL, **{arch: {"img_size": 64, "max_size": 96}
                    for arch in ("retinanet_resnet50_fpn", "retinanet_resnet50_fpn_v2", "fcos_resnet50_fpn")}}
CALIBRATION_SIZES = (64, 96)  # the random weights spread on photos at TINY's resizing sizes


@pytest.fixture(scope="module")
def network():
    """`network(arch)`: the architecture's network, loaded once for the module (the torch runtime without fusing
    leaves it as it is). Its random weights are spread as a run spreads them, but calibrated on two of the bundled
    photos at the tests' own sizes rather than on all six at 192 to 320: that calibration was most of each
    test's time, and what these tests hold the pipeline to (torchvision's answers on the same weights, the cuts)
    does not depend on the photos the weights were spread on. The process's cache of spread weights is set
    aside meanwhile, so these weights are neither taken from it nor left in it for other tests."""
    loaded = {}

    def load(arch: str):
        if arch not in loaded:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(family, "CALIBRATION_SIZES", CALIBRATION_SIZES)
                patch.setattr(family, "calibration_photos", lambda: weights.calibration_photos()[:2])
                patch.setattr(weights, "_random_states", {})
                loaded[arch] = family.load_network(arch, None, 0)
        return loaded[arch]

    return load


@pytest.mark.parametrize("arch", list(TINY))
def test_detections_equal_torchvisions_own_model_on_the_same_weights(arch, network):
    ours, config = pipeline(arch, network(arch), preprocess=TINY[arch])
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


def test_the_evaluation_cut_keeps_what_the_deployed_cut_keeps_and_more(network):
    ours, config = pipeline("ssdlite320_mobilenet_v3_large", network("ssdlite320_mobilenet_v3_large"))
    forwarded = ours.forward(ours.preprocess([photo("dog.jpg")]))
    deployed = ours.postprocess_at(forwarded, config.postprocess.conf_thres)[0]
    evaluated = ours.postprocess_at(forwarded, config.benchmark.accuracy.conf_thres)[0]
    assert config.benchmark.accuracy.conf_thres == 0.001 and len(evaluated) > len(deployed) > 0
    assert len(evaluated) <= config.postprocess.max_det


def test_batching_is_noted_where_the_transform_pads_and_not_for_a_fixed_square(network):
    padded, _ = pipeline("fcos_resnet50_fpn", network("fcos_resnet50_fpn"))
    square, _ = pipeline("ssdlite320_mobilenet_v3_large", network("ssdlite320_mobilenet_v3_large"))
    assert "pads every image of a batch" in padded.batching_note and square.batching_note is None
    assert isinstance(padded, DensePipeline) and isinstance(square, DensePipeline)
    # The decode and the scaling back are postprocessing, each timed apart after the forward.
    assert [stage.name for stage in padded.stages()] == ["preprocess", "forward", "decode", "scale_boxes"]
    assert square.input_shape([(480, 640), (300, 200)]) == (2, 3, 160, 160)  # a fixed square at img_size
