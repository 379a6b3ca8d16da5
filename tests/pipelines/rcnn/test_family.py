"""The R-CNN family (pipelines/rcnn/family.py) against torchvision itself, on seeded random weights at small image
sizes: the network it loads and the pipeline it builds give torchvision's detections, batching changes them only
through padding, checkpoints load or are refused naming file and keys, and bf16 is checked against fp32."""
import pytest
import torch

from models import CheckpointError
from pipelines.rcnn import family
from pipelines.runtimes.registry import build_runtime
from pipelines.runtimes.torch.session import cpu_runs_bf16
from pipelines.torchvision_common.weights import build_detector
from tests.support.torchvision_detectors import as_rgb_tensor, photo
from utils.config.schema import config_for
from utils.checks.agreement.agreement_check import compare_with_reference

ARCH = "fasterrcnn_mobilenet_v3_large_fpn"
PRE = config_for(ARCH, preprocess={"img_size": 160, "max_size": 200}).preprocess
POST = config_for(ARCH).postprocess


def pipeline(weights=None, seed=0, precision="fp32", arch=ARCH, network=None):
    network = network or family.load_network(arch, weights, seed)
    forward = build_runtime("torch", fuse=False, precision=precision).prepare(network, family.example_input(PRE))
    return family.build_pipeline(network, forward, PRE, POST)


@pytest.fixture(scope="module")
def fp32():
    return pipeline()


@pytest.mark.slow
def test_batch_of_one_equals_torchvision_on_the_same_weights(fp32):
    image = photo("dog.jpg")
    ours = fp32([image])[0]
    model = build_detector(ARCH, seed=123)  # other random weights, replaced by ours below
    model.load_state_dict(fp32.network.state_dict())  # strict: the same keys as torchvision's own model
    model.transform.min_size, model.transform.max_size = (PRE.img_size,), PRE.max_size
    model.roi_heads.score_thresh = POST.conf_thres  # the deployed cut; the builder's own is its evaluation cut
    with torch.inference_mode():
        theirs = model([as_rgb_tensor(image)])[0]
    assert len(ours) > 10  # the spread random weights give boxes above the deployed cut
    assert torch.equal(ours.boxes, theirs["boxes"])
    assert torch.equal(ours.scores, theirs["scores"])
    assert torch.equal(ours.labels, theirs["labels"])


@pytest.mark.slow
def test_batching_changes_detections_only_through_padding(fp32):
    wide, tall = photo("kite.jpg"), photo("dog.jpg")[:, :300]
    batched = fp32.forward(fp32.preprocess([wide, tall])).detections[1]
    alone = fp32.preprocess([tall])
    single = fp32.forward(alone).detections[0]
    assert not torch.equal(single["boxes"], batched["boxes"])  # batching does change the tall image's boxes
    padded_batch = fp32.preprocess([wide, tall]).images.tensors
    padded = torch.zeros(1, *padded_batch.shape[1:])
    height, width = alone.images.tensors.shape[-2:]
    padded[..., :height, :width] = alone.images.tensors
    with torch.inference_mode():
        padded_alone = fp32.network(padded, alone.images.image_sizes)[0]
    # The tall image alone, padded to the wide one's size, gives what the batch gave, up to the rounding of
    # convolutions run at another batch size; unpadded, its boxes move by pixels.
    assert torch.equal(padded_alone["labels"], batched["labels"])
    torch.testing.assert_close(padded_alone["boxes"], batched["boxes"], rtol=0, atol=1e-3)
    torch.testing.assert_close(padded_alone["scores"], batched["scores"], rtol=0, atol=1e-4)
    assert len(single["boxes"]) != len(batched["boxes"]) or (single["boxes"] - batched["boxes"]).abs().max() > 0.1


@pytest.mark.slow
def test_a_saved_state_dict_loads_through_the_config_key_and_gives_the_same_detections(fp32, tmp_path):
    path = tmp_path / "seeded.pth"
    torch.save(fp32.network.state_dict(), path)
    network = family.load_network(ARCH, str(path), seed=7)  # the seed no longer matters
    assert network.random_weights is False and network.weights == "checkpoint seeded.pth"
    loaded = pipeline(network=network)
    image = photo("eagle.jpg")
    ours, theirs = fp32([image])[0], loaded([image])[0]
    assert len(ours) > 0 and torch.equal(ours.boxes, theirs.boxes) and torch.equal(ours.labels, theirs.labels)


@pytest.mark.slow
def test_a_checkpoint_of_another_architecture_is_refused_naming_file_and_keys(fp32, tmp_path):
    state = fp32.network.state_dict()
    state.pop("roi_heads.box_predictor.cls_score.bias")
    state["roi_heads.box_predictor.bbox_pred.weight"] = torch.zeros(4, 1024)
    state["extra.weight"] = torch.zeros(1)
    path = tmp_path / "other.pth"
    torch.save(state, path)
    with pytest.raises(CheckpointError, match=(
            r"other\.pth does not fit model\.arch fasterrcnn_mobilenet_v3_large_fpn: 1 key\(s\) missing "
            r"\(e\.g\. roi_heads\.box_predictor\.cls_score\.bias\); 1 unexpected key\(s\) \(e\.g\. extra\.weight\); "
            r"1 of another shape")):
        family.load_network(ARCH, str(path), 0)
    pickled = tmp_path / "code.pth"
    torch.save({"model": object()}, pickled)
    with pytest.raises(CheckpointError, match="code.pth: not a state_dict torch can load safely"):
        family.load_network(ARCH, str(pickled), 0)


@pytest.mark.slow
@pytest.mark.skipif(not cpu_runs_bf16(), reason="this CPU has no native bf16")
def test_agreement_check_compares_bf16_with_the_fp32_reference(fp32):
    bf16 = pipeline(precision="bf16")
    images = [photo("dog.jpg")]
    agreement = compare_with_reference(bf16, fp32, [images], top_k=20, conf_thres=fp32.score_threshold,
                                       reference_name="torch fp32")
    assert agreement["reference_detections"] > 0 and agreement["candidate_detections"] > 0
    assert agreement["verdict"] in ("equal", "close", "different")
    assert agreement["raw_output"]["candidates"] == 20
