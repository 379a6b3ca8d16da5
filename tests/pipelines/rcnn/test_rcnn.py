"""The R-CNN family against torchvision itself, on seeded random weights at small image sizes."""
import json

import cv2
import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from benchmark import main
from models import CheckpointError
from pipelines.rcnn import family
from pipelines.runtimes.registry import build_runtime
from pipelines.runtimes.torch.session import cpu_runs_bf16
from pipelines.torchvision_common.weights import COCO_CATEGORIES, build_detector, state_dict_mismatch
from tests.support.paths import ROOT, SAMPLES
from utils.config.schema import ConfigError, config_for, config_to_yaml, load_config
from utils.checks.agreement.agreement_check import compare_with_reference
from utils.detections.masks import label_map

ARCH = "fasterrcnn_mobilenet_v3_large_fpn"
PRE = config_for(ARCH, preprocess={"img_size": 160, "max_size": 200}).preprocess
POST = config_for(ARCH).postprocess


def photo(name: str) -> np.ndarray:
    return cv2.imread(str(SAMPLES / name))


def pipeline(weights=None, seed=0, precision="fp32", arch=ARCH, network=None):
    network = network or family.load_network(arch, weights, seed)
    forward = build_runtime("torch", fuse=False, precision=precision).prepare(network, family.example_input(PRE))
    return family.build_pipeline(network, forward, PRE, POST)


def as_rgb_tensor(image: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(image[..., ::-1].transpose(2, 0, 1))).float() / 255.0


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


def test_state_dict_mismatch_ignores_only_batchnorm_counters():
    expected = {"a.weight": torch.zeros(2), "bn.num_batches_tracked": torch.tensor(0)}
    assert state_dict_mismatch(expected, {"a.weight": torch.ones(2)}) == ""
    assert state_dict_mismatch(expected, {"a.weight": torch.ones(3)}) == ("1 of another shape (e.g. a.weight: file "
                                                                         "(3,), model (2,))")


@pytest.mark.parametrize("arch, key, owner", [
    (ARCH, "postprocess.agnostic=true", "yolo family"),
    ("yolov7-tiny", "postprocess.rpn_pre_nms_top_n=320", "rcnn family"),
    ("yolov7-tiny", "preprocess.max_size=320", "rcnn and dense families"),
])
def test_a_key_of_another_family_is_refused_naming_its_family(tmp_path, capsys, arch, key, owner):
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"dataset": {"path": str(SAMPLES)}, "model": {"arch": arch}}))
    with pytest.raises(ConfigError, match=f"{key.split('=')[0]} belongs to the {owner}"):
        load_config(config, [key])
    assert main(["--config", str(config), "--set", key]) == 2
    assert "belongs to the" in capsys.readouterr().err


def test_the_run_config_lists_only_the_keys_of_its_family(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"dataset": {"path": str(SAMPLES)}, "model": {"arch": ARCH},
                                      "preprocess": {"img_size": 320}}))
    written = yaml.safe_load(config_to_yaml(load_config(config)))
    assert written["preprocess"] == {"img_size": 320, "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225],
                                     "max_size": 1333}
    assert written["postprocess"] == {"conf_thres": 0.5, "iou_thres": 0.5, "max_det": 100, "rpn_pre_nms_top_n": 1000,
                                      "rpn_post_nms_top_n": 1000}


def test_exported_runtimes_are_refused_for_this_family(tmp_path, capsys):
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"dataset": {"path": str(SAMPLES)}, "model": {"arch": ARCH},
                                      "runtime": {"backend": "onnxruntime"}}))
    assert main(["--config", str(config)]) == 2
    assert "runtime.backend onnxruntime is not supported for this family (rcnn" in capsys.readouterr().err


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


def test_label_map_numbers_rows_from_one_and_the_higher_score_wins():
    masks = np.zeros((2, 3, 4), dtype=bool)
    masks[0, 0, :2] = True
    masks[1, 0, 1:3] = True
    masks[1, 2, 3] = True
    assert label_map(masks).tolist() == [[1, 1, 2, 0], [0, 0, 0, 0], [0, 0, 0, 2]]
    assert label_map(np.zeros((0, 2, 2), dtype=bool)).tolist() == [[0, 0], [0, 0]]


@pytest.mark.slow
def test_mask_rcnn_end_to_end_writes_masks_steps_and_batching_note(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    for name in ("dog.jpg", "person.jpg"):
        (images / name).write_bytes((SAMPLES / name).read_bytes())
    code = main(["--config", str(ROOT / "configs" / "samples_maskrcnn.yaml"),
                 "--set", f"dataset.path={images}", "--set", f"run.output_dir={tmp_path / 'out'}",
                 "--set", "run.id=mask", "--set", "dataset.batch_size=2", "--set", "preprocess.img_size=160",
                 "--set", "preprocess.max_size=200", "--set", "postprocess.max_det=10",
                 "--set", "benchmark.warmup=0", "--set", "benchmark.repeats=1",
                 "--set", "benchmark.energy.enabled=false", "--set", "benchmark.memory.enabled=false"])
    assert code == 0
    run = tmp_path / "out" / "mask"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["family"] == "rcnn" and summary["img_size"] == 160
    assert any("pads every image" in note for note in summary["notes"])
    detections = pd.read_csv(run / "detections.csv", keep_default_na=False)  # "N/A" is a COCO name
    for name in ("dog", "person"):
        labels = cv2.imread(str(run / "masks" / f"{name}.png"), cv2.IMREAD_UNCHANGED)
        rows = int((detections["image"] == f"{name}.jpg").sum())
        assert labels.dtype == np.uint16 and labels.shape == photo(f"{name}.jpg").shape[:2]
        assert 0 < labels.max() <= rows
        assert (run / "images" / f"{name}.jpg").is_file()
    assert set(detections["class_name"]) <= set(COCO_CATEGORIES) and len(detections) <= 2 * 10
    steps = pd.read_csv(run / "steps_timer.csv")
    parts = steps[steps["step"].isin(["backbone", "rpn", "roi_heads"])]
    assert set(parts["parent"]) == {"forward"} and len(parts) == 3 * len(steps[steps["step"] == "forward"])
    layers = pd.read_csv(run / "layer_timer.csv")
    for path in ("backbone.body.layer4", "backbone.fpn", "rpn.head", "roi_heads.box_roi_pool",
                 "roi_heads.mask_head", "rpn/unattributed", "roi_heads/unattributed"):
        assert path in set(layers["path"]), path
    conv = layers[layers["path"] == "roi_heads.mask_predictor.mask_fcn_logits"]
    assert float(conv["macs"].iloc[0]) > 0
