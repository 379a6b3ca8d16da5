import builtins
import copy
import gzip
import os
import pickle
import pickletools
import zipfile

import pytest
import torch
from torch import nn

from models import CheckpointError, build_model, fuse_model, load_weights
from models.checkpoint import MAX_LISTED, StandIn, read_restricted
from models.yolo import DEFINITIONS_DIR, Model, load_definition

# The globals the official yolov7.pt / yolov7-tiny.pt pickles name (docs/models.md, "Real weights").
OFFICIAL_GLOBALS = {
    "models.yolo Model", "models.yolo Detect", "models.common Conv", "models.common Concat", "models.common MP",
    "models.common SP", "models.common SPPCSPC", "models.common RepConv",
    "torch.nn.modules.conv Conv2d", "torch.nn.modules.batchnorm BatchNorm2d",
    "torch.nn.modules.activation SiLU", "torch.nn.modules.activation LeakyReLU",
    "torch.nn.modules.pooling MaxPool2d", "torch.nn.modules.upsampling Upsample",
    "torch.nn.modules.container Sequential", "torch.nn.modules.container ModuleList",
    "torch._utils _rebuild_tensor_v2", "torch._utils _rebuild_parameter",
    "torch HalfStorage", "torch FloatStorage", "torch LongStorage",
    "collections OrderedDict", "__builtin__ set",
}


def official_layout(network: nn.Module | None, ema: nn.Module | None) -> dict:
    return {"epoch": -1, "best_fitness": None, "training_results": None, "model": network, "ema": ema,
            "updates": 0, "optimizer": None, "wandb_id": None}


@pytest.fixture(scope="module")
def tiny():
    return build_model("yolov7-tiny", seed=0)


@pytest.fixture(scope="module")
def yolov7():
    return build_model("yolov7", seed=0)


@pytest.fixture(scope="module")
def official_tiny_file(tiny, tmp_path_factory):
    """yolov7-tiny saved like the released checkpoints: a whole float16 module under 'ema'."""
    network = copy.deepcopy(tiny)
    with torch.no_grad():
        network(torch.zeros(1, 3, 64, 64))  # fills Detect's grid cache, which gets pickled too
    half = network.half()
    path = tmp_path_factory.mktemp("ckpt") / "yolov7-tiny.pt"
    torch.save(official_layout(None, half), path)
    return path


def pickle_globals(path) -> set[str]:
    with zipfile.ZipFile(path) as archive:
        data = archive.read(next(n for n in archive.namelist() if n.endswith("/data.pkl")))
    return {arg for op, arg, _ in pickletools.genops(data) if op.name == "GLOBAL"}


@pytest.fixture
def blank(tiny):
    """A yolov7-tiny whose tensors are all overwritten, so a load has to restore every one of them."""
    model = copy.deepcopy(tiny)
    with torch.no_grad():
        for tensor in model.state_dict().values():
            tensor.fill_(0.5 if tensor.is_floating_point() else 7)
    return model


def assert_same_weights(model: nn.Module, reference: nn.Module) -> None:
    expected = reference.state_dict()
    assert all(torch.equal(value, expected[key]) for key, value in model.state_dict().items())


def test_checkpoint_pickle_names_the_official_globals(official_tiny_file):
    names = pickle_globals(official_tiny_file)
    assert names <= OFFICIAL_GLOBALS, names - OFFICIAL_GLOBALS
    assert {"models.yolo Model", "models.yolo Detect", "models.common Conv", "torch HalfStorage"} <= names


def test_restricted_reader_builds_stand_ins_not_our_classes(official_tiny_file):
    payload = read_restricted(official_tiny_file)
    network = payload["ema"]
    assert isinstance(network, StandIn) and not isinstance(network, nn.Module)
    assert network.qualified_name == "models.yolo.Model"
    assert payload["model"] is None and payload["epoch"] == -1


@pytest.mark.slow
def test_official_layout_loads_into_differently_seeded_model(tiny, official_tiny_file):
    target = build_model("yolov7-tiny", seed=1)
    x = torch.rand(1, 3, 128, 128)
    with torch.no_grad():
        before = target(x)
        info = load_weights(target, official_tiny_file)
        after = target(x)
        expected = copy.deepcopy(tiny).half().float()(x)  # exactly what the float16 file holds
        original = tiny(x)
    assert not torch.allclose(before, original, atol=1e-2)
    torch.testing.assert_close(after, expected, rtol=1e-5, atol=1e-4)
    scale = original.abs().max().item()
    torch.testing.assert_close(after, original, rtol=0, atol=1e-3 * scale)  # fp16 rounding only
    assert next(target.parameters()).dtype == torch.float32
    assert info.source == "checkpoint yolov7-tiny.pt (ema, float16)"
    assert info.class_names == tiny.names and info.tensors_loaded == len(tiny.state_dict())


def test_model_key_used_when_ema_is_none(tiny, blank, tmp_path):
    path = tmp_path / "last.pt"
    torch.save(official_layout(tiny, None), path)
    info = load_weights(blank, path)
    assert info.source == "checkpoint last.pt (model, float32)"
    assert_same_weights(blank, tiny)


@pytest.mark.parametrize("wrap", [lambda sd: sd, lambda sd: {"state_dict": sd}, lambda sd: {"model": sd}])
def test_plain_state_dict_round_trip(tiny, blank, tmp_path, wrap):
    path = tmp_path / "weights.pt"
    torch.save(wrap(tiny.state_dict()), path)
    info = load_weights(blank, path)
    assert_same_weights(blank, tiny)
    assert info.source.startswith("state_dict weights.pt") and info.source.endswith("(float32)")
    assert info.tensors_loaded == len(tiny.state_dict()) and info.class_names is None


# --- hostile files --------------------------------------------------------------------------------------

class WritesAFile:
    """Unpickling this would create `path` (by os.system, builtins.exec or builtins.open)."""

    def __init__(self, path, how):
        self.path, self.how = str(path), how

    def __reduce__(self):
        if self.how == "system":
            return os.system, (f"touch {self.path}",)
        if self.how == "exec":
            return builtins.exec, (f"open({self.path!r}, 'w').close()",)
        return builtins.open, (self.path, "w")


@pytest.mark.parametrize("how, forbidden", [("system", "posix.system"), ("exec", "builtins.exec"),
                                            ("open", "io.open")])
@pytest.mark.parametrize("container", ["torch_zip", "raw_pickle_protocol_2", "raw_pickle_protocol_5"])
def test_crafted_pickle_is_refused_and_runs_nothing(tmp_path, tiny, how, forbidden, container):
    marker = tmp_path / "pwned"
    payload = official_layout(None, WritesAFile(marker, how))
    path = tmp_path / "evil.pt"
    if container == "torch_zip":
        torch.save(payload, path)
    else:
        path.write_bytes(pickle.dumps(payload, protocol=int(container[-1])))
    assert not marker.exists()
    with pytest.raises(CheckpointError) as raised:
        load_weights(tiny, path)
    message = str(raised.value)
    assert "forbidden global" in message and forbidden in message and str(path) in message
    assert not marker.exists()


def test_missing_file(tmp_path, tiny):
    with pytest.raises(CheckpointError, match="not found"):
        load_weights(tiny, tmp_path / "absent.pt")


def test_truncated_checkpoint(official_tiny_file, tmp_path, tiny):
    data = official_tiny_file.read_bytes()
    path = tmp_path / "cut.pt"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated"):
        load_weights(tiny, path)


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"


@pytest.mark.parametrize("content, found", [
    (PNG, "looks like a PNG image, first bytes 89 50 4e 47 0d 0a 1a 0a)"),
    (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", "looks like a JPEG image, first bytes ff d8 ff e0"),
    (gzip.compress(b"weights", mtime=0), "looks like a gzip file, first bytes 1f 8b"),
    (b"", "(the file is empty)"),
    (b"model:\n  arch: yolov7\n", "looks like text, e.g. YAML, first bytes 'model:\\n  arch: yolov7\\n'"),
    (b"<!DOCTYPE html>\n<html>", "looks like an HTML page, first bytes 3c 21 44 4f"),
    (b"version https://git-lfs.github.com/spec/v1\n", "looks like a Git LFS pointer, first bytes 76 65"),
    (bytes(range(256)) * 4, "unknown format, first bytes 00 01 02 03 04 05 06 07"),
])
def test_not_a_checkpoint_says_what_the_file_looks_like(tmp_path, tiny, content, found):
    path = tmp_path / "yolov7.pt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError) as raised:
        load_weights(tiny, path)
    message = str(raised.value)
    assert message.startswith(f"{path}: not a PyTorch checkpoint (") and found in message
    assert message.endswith("model.weights must point at a .pt file saved by torch.save")


def test_garbage_after_a_pickle_marker_is_reported_as_corrupt(tmp_path, tiny):
    path = tmp_path / "garbage.pt"
    path.write_bytes(b"\x80\x05" + bytes(range(256)))
    with pytest.raises(CheckpointError, match="corrupt, truncated or not a checkpoint"):
        load_weights(tiny, path)


def test_zip_without_torch_records(tmp_path, tiny):
    path = tmp_path / "other.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(CheckpointError, match="not a torch checkpoint"):
        load_weights(tiny, path)


@pytest.mark.slow
def test_tiny_checkpoint_into_yolov7_suggests_the_arch_then_lists_keys_and_shapes(yolov7, official_tiny_file):
    with pytest.raises(CheckpointError) as raised:
        load_weights(yolov7, official_tiny_file)
    message = str(raised.value)
    suggestion = ("weights do not match the model: this checkpoint is for yolov7-tiny (78 layers), the model has "
                  "106 layers: set model.arch: yolov7-tiny (--set model.arch=yolov7-tiny). The differences: ")
    assert suggestion in message
    assert "missing keys: model." in message and "unexpected keys: model." in message
    # layer 2 is a 1x1 conv 64 -> 32 in yolov7-tiny, a 3x3 conv 64 -> 64 in yolov7
    assert "model.2.conv.weight checkpoint (32, 64, 1, 1) vs model (64, 64, 3, 3)" in message
    assert message.count("more)") == 3 and message.count(", model.") <= 3 * (MAX_LISTED - 1)  # lists are cut


@pytest.mark.slow
def test_yolov7_state_dict_into_tiny_suggests_yolov7(tmp_path, tiny, yolov7):
    path = tmp_path / "yolov7_weights.pt"
    torch.save(yolov7.state_dict(), path)
    with pytest.raises(CheckpointError, match=r"this checkpoint is for yolov7 \(106 layers\), the model has 78 "
                                              r"layers: set model.arch: yolov7 \(--set model.arch=yolov7\)"):
        load_weights(tiny, path)


@pytest.mark.slow
def test_other_class_count_of_a_builtin_suggests_a_definition_copy(tmp_path, yolov7):
    definition = load_definition(DEFINITIONS_DIR / "yolov7-tiny.yaml")
    definition["nc"] = 3
    path = tmp_path / "tiny_three_classes.pt"
    torch.save(Model(definition).state_dict(), path)
    with pytest.raises(CheckpointError) as raised:
        load_weights(yolov7, path)
    assert ("this checkpoint is for yolov7-tiny (78 layers) trained for 3 classes, the model has 106 layers: copy "
            "models/definitions/yolov7-tiny.yaml, set nc: 3 in the copy") in str(raised.value)


@pytest.mark.slow
def test_checkpoint_of_no_builtin_arch_gets_no_suggestion(tmp_path, tiny):
    definition = load_definition(DEFINITIONS_DIR / "yolov7-tiny.yaml")
    definition["width_multiple"] = 0.5
    path = tmp_path / "narrow.pt"
    torch.save(Model(definition).state_dict(), path)
    with pytest.raises(CheckpointError) as raised:
        load_weights(tiny, path)
    assert "the checkpoint has 78 layers, the model 78" in str(raised.value)
    assert "model.arch" not in str(raised.value)


@pytest.mark.slow
def test_class_count_mismatch(tmp_path, tiny):
    definition = load_definition(DEFINITIONS_DIR / "yolov7-tiny.yaml")
    definition["nc"] = 3
    path = tmp_path / "three_classes.pt"
    torch.save(Model(definition).state_dict(), path)
    with pytest.raises(CheckpointError) as raised:
        load_weights(tiny, path)
    assert "nc=3" in str(raised.value) and "nc=80" in str(raised.value)


@pytest.mark.slow
def test_fused_model_refuses_unfused_weights_with_hint(tiny, official_tiny_file):
    fused = fuse_model(copy.deepcopy(tiny))
    with pytest.raises(CheckpointError) as raised:
        load_weights(fused, official_tiny_file)
    assert "load weights before fuse_model" in str(raised.value)
    assert "model.arch" not in str(raised.value)  # same arch, so no arch to suggest
    assert "model.0.bn.weight" in str(raised.value)


def test_cyclic_module_tree_is_refused(tmp_path, tiny):
    network = copy.deepcopy(tiny)
    network.model[0]._modules["loop"] = network.model  # a child that contains its parent
    path = tmp_path / "cyclic.pt"
    torch.save(official_layout(None, network), path)
    with pytest.raises(CheckpointError, match="contains itself"):
        load_weights(tiny, path)
