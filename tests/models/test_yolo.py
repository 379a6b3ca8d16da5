import copy
import math
import weakref

import pytest
import torch
import yaml
from torch import nn

from models import ModelDefinitionError, build_model, fuse_model
from models.common import MP, SP, Conv
from models.yolo import DEFINITIONS_DIR, Detect, load_definition

# Known totals: (arch, params unfused, params fused, state_dict keys fused)
KNOWN_TOTALS = [("yolov7", 37_620_125, 36_905_341, 186), ("yolov7-tiny", 6_227_101, 6_219_709, 118)]


@pytest.fixture(scope="module")
def models_by_arch():
    return {"yolov7": build_model("yolov7"), "yolov7-tiny": build_model("yolov7-tiny")}


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# --- totals, shapes, strides ------------------------------------------------------------------------------

@pytest.mark.parametrize("arch, unfused, fused, fused_keys", KNOWN_TOTALS)
def test_parameter_and_key_counts_match_reference(models_by_arch, arch, unfused, fused, fused_keys):
    model = models_by_arch[arch]
    assert parameter_count(model) == unfused
    fused_model = fuse_model(copy.deepcopy(model))
    assert parameter_count(fused_model) == fused
    assert len(fused_model.state_dict()) == fused_keys
    assert sum(layer.np for layer in fused_model.model) == fused


@pytest.mark.parametrize("arch", ["yolov7", "yolov7-tiny"])
def test_strides_and_layer_attributes(models_by_arch, arch):
    model = models_by_arch[arch]
    assert model.stride.tolist() == [8.0, 16.0, 32.0]
    assert model.model[-1].stride.tolist() == [8.0, 16.0, 32.0]
    assert model.nc == 80 and len(model.names) == 80 and model.names[0] == "person"
    assert not model.training and next(model.parameters()).dtype == torch.float32
    for index, layer in enumerate(model.model):
        assert layer.i == index
        assert layer.np == parameter_count(layer)
    assert sum(layer.np for layer in model.model) == parameter_count(model)
    assert model.model[0].type == "models.common.Conv"
    assert isinstance(model.model[-1], Detect) and model.model[-1].type == "models.yolo.Detect"


def test_yolov7_tiny_output_shape_at_640(models_by_arch):
    with torch.no_grad():
        out = models_by_arch["yolov7-tiny"](torch.rand(1, 3, 640, 640))
    assert out.shape == (1, 25200, 85)


def test_yolov7_small_forward_shape_and_decode_ranges(models_by_arch):
    with torch.no_grad():
        out = models_by_arch["yolov7"](torch.rand(2, 3, 64, 96))
    cells = 3 * (8 * 12 + 4 * 6 + 2 * 3)  # 3 anchors per cell at strides 8, 16, 32
    assert out.shape == (2, cells, 85)
    assert torch.all(out[..., 4:] >= 0) and torch.all(out[..., 4:] <= 1)  # sigmoid scores
    assert torch.all(out[..., 2:4] > 0)


def test_forward_matches_keep_everything_reference(models_by_arch):
    """A naive loop that keeps every output must give the same result as our forward."""
    model = models_by_arch["yolov7-tiny"]
    x = torch.rand(1, 3, 96, 96)
    with torch.no_grad():
        outputs, current = [], x
        for layer in model.model:
            if layer.f != -1:
                if isinstance(layer.f, int):
                    current = outputs[layer.f]
                else:
                    current = [current if j == -1 else outputs[j] for j in layer.f]
            current = layer(current)
            outputs.append(current)
        assert torch.equal(model(x), current)


def test_outputs_read_later_live_until_the_forward_ends(models_by_arch):
    """As in the official forward: freeing each after its last reader let glibc trim the heap and re-fault it
    within every forward (docs/measurement.md)."""
    model = models_by_arch["yolov7-tiny"]
    refs: dict[int, weakref.ref] = {}
    alive_at_detect: list[bool] = []
    saved = [layer for layer in model.model if layer.i in model.save]
    hooks = [layer.register_forward_hook(lambda m, _, out: refs.__setitem__(m.i, weakref.ref(out))) for layer in saved]
    hooks.append(model.model[-1].register_forward_pre_hook(
        lambda *_: alive_at_detect.extend(ref() is not None for ref in refs.values())))
    try:
        with torch.no_grad():
            model(torch.rand(1, 3, 96, 96))
    finally:
        for hook in hooks:
            hook.remove()
    assert len(alive_at_detect) == len(saved) > 10 and all(alive_at_detect)


def test_same_seed_same_weights_other_seed_other_weights(models_by_arch):
    again = build_model("yolov7-tiny", seed=0)
    other = build_model("yolov7-tiny", seed=1)
    reference = models_by_arch["yolov7-tiny"].state_dict()
    assert all(torch.equal(reference[k], v) for k, v in again.state_dict().items())
    assert not torch.equal(reference["model.0.conv.weight"], other.state_dict()["model.0.conv.weight"])


def test_batchnorm_defaults_and_activation_per_layer(models_by_arch):
    model = models_by_arch["yolov7-tiny"]
    norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    assert norms and all(m.eps == 1e-3 and m.momentum == 0.03 for m in norms)
    activations = [m.act for m in model.modules() if isinstance(m, Conv)]
    assert all(isinstance(a, nn.LeakyReLU) and a.negative_slope == 0.1 for a in activations)
    assert len({id(a) for a in activations}) == len(activations)  # shared modules would confuse layer hooks
    yolov7_activations = [m for m in models_by_arch["yolov7"].modules() if isinstance(m, nn.SiLU)]
    assert yolov7_activations and all(a.inplace for a in activations + yolov7_activations)


# --- Detect decoding ----------------------------------------------------------------------------------

def test_detect_decode_against_cell_by_cell_reference():
    torch.manual_seed(3)
    nc, anchors, stride = 2, [[10, 14, 30, 20]], 8.0
    detect = Detect(nc, anchors, [4]).eval()
    detect.stride = torch.tensor([stride])
    detect.anchors /= stride
    features = torch.randn(1, 4, 2, 3)
    with torch.no_grad():
        out = detect([features])
        raw = detect.m[0](features)  # (1, 2 * 7, 2, 3)
    no, expected = nc + 5, []
    for a in range(2):
        for gy in range(2):
            for gx in range(3):
                v = [1 / (1 + math.exp(-raw[0, a * no + c, gy, gx].item())) for c in range(no)]
                expected.append([(2 * v[0] - 0.5 + gx) * stride, (2 * v[1] - 0.5 + gy) * stride,
                                 (2 * v[2]) ** 2 * anchors[0][2 * a], (2 * v[3]) ** 2 * anchors[0][2 * a + 1]]
                                + v[4:])
    assert out.shape == (1, 12, no)
    torch.testing.assert_close(out[0], torch.tensor(expected), rtol=1e-5, atol=1e-4)
    assert (2, 3) in detect.grids


# --- fusing -----------------------------------------------------------------------------------------------


# --- definitions --------------------------------------------------------------------------------------


def write_tiny_variant(tmp_path, edit) -> str:
    definition = load_definition(DEFINITIONS_DIR / "yolov7-tiny.yaml")
    edit(definition)
    path = tmp_path / "variant.yaml"
    path.write_text(yaml.safe_dump(definition, sort_keys=False))
    return str(path)


@pytest.mark.parametrize("layer, row, expected", [
    (3, [-2, 1, "Focus", [32, 1, 1]], "unknown module 'Focus'"),
    (3, [-2, 1, "Conv", ["__import__('os').system('touch PWNED')", 1, 1]], "unsupported argument"),
    (3, [-2, 1, "Conv", [32, 1, 1, None, 1, "nn.LeakyReLU(__import__('os'))"]], "unsupported argument"),
    (4, [9, 1, "Conv", [32, 3, 1]], "does not refer to an earlier layer"),
    (4, [-1, 1, "Conv", [32, 3, 1, None, 1, True, 5]], "at most 6 args"),
    (4, [-1, 1, "Conv"], "[from, number, module, args]"),
    (4, [-1, 1, "Conv", ["wide"]], "unsupported argument 'wide'"),
    (4, [-1, 1, "Conv", [32.5, 3]], "c2 must be a positive integer"),
    (9, [[-1, -2], 1, "Concat", [1]], "forward of a 256x256 image failed"),  # /8 map next to a /4 map
])
def test_malformed_definition_raises_with_file_and_layer(tmp_path, monkeypatch, layer, row, expected):
    monkeypatch.chdir(tmp_path)
    path = write_tiny_variant(tmp_path, lambda d: d["backbone"].__setitem__(layer, row))
    with pytest.raises(ModelDefinitionError) as raised:
        build_model(path)
    message = str(raised.value)
    assert path in message and f"layer {layer}:" in message and expected in message
    assert not (tmp_path / "PWNED").exists()


def test_definition_header_and_yaml_errors(tmp_path):
    bad_yaml = tmp_path / "broken.yaml"
    bad_yaml.write_text("nc: [80\n")
    with pytest.raises(ModelDefinitionError, match="not valid YAML"):
        build_model(str(bad_yaml))
    no_anchors = write_tiny_variant(tmp_path, lambda d: d.pop("anchors"))
    with pytest.raises(ModelDefinitionError, match="missing top-level key 'anchors'"):
        build_model(no_anchors)
    with pytest.raises(ModelDefinitionError, match="cannot read"):
        build_model(str(tmp_path / "absent.yaml"))


def test_width_multiple_scales_channels_and_nc_sets_head(tmp_path):
    def edit(definition):
        definition["width_multiple"] = 0.25
        definition["nc"] = 3
    model = build_model(write_tiny_variant(tmp_path, edit))
    assert model.model[0].conv.out_channels == 8  # 32 * 0.25, rounded up to a multiple of 8
    assert model.model[1].conv.out_channels == 16
    assert model.model[-1].m[0].out_channels == 3 * (3 + 5)
    assert model.nc == 3 and model.names == ["0", "1", "2"]
    with torch.no_grad():
        assert model(torch.rand(1, 3, 64, 64)).shape == (1, 252, 8)


def test_model_from_dict_keeps_definition(models_by_arch):
    definition = load_definition(DEFINITIONS_DIR / "yolov7-tiny.yaml")
    assert models_by_arch["yolov7-tiny"].yaml["backbone"] == definition["backbone"]
    assert models_by_arch["yolov7-tiny"].yaml["ch"] == 3


def test_number_repeats_the_module_scaled_by_depth(tmp_path):
    def edit(definition):
        definition["depth_multiple"] = 0.5
        definition["backbone"][2] = [-1, 3, "Conv", [64, 1, 1, None, 1, "nn.LeakyReLU(0.1)"]]
    model = build_model(write_tiny_variant(tmp_path, edit))
    repeated = model.model[2]
    assert isinstance(repeated, nn.Sequential) and len(repeated) == 2  # round(3 * 0.5)
    assert model.model[6].type == "models.common.Concat"
    assert model.model[7].conv.in_channels == 3 * 32 + 64  # layers 5, 4, 3 and the repeated layer 2
    with torch.no_grad():
        assert model(torch.rand(1, 3, 64, 64)).shape == (1, 252, 85)


# --- user mistakes in definitions -------------------------------------------------------------------------

def test_binary_file_as_definition_names_the_file(tmp_path):
    path = tmp_path / "weights.yaml"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    with pytest.raises(ModelDefinitionError) as raised:
        build_model(str(path))
    message = str(raised.value)
    assert message.startswith(f"{path}: not a text YAML model definition") and "0x89 at offset 0" in message


def test_detect_fed_a_single_tensor_is_refused_by_layer(tmp_path):
    def edit(definition):
        definition["anchors"] = definition["anchors"][:1]
        definition["head"][-1] = [-1, 1, "Detect", ["nc", "anchors"]]
    path = write_tiny_variant(tmp_path, edit)
    with pytest.raises(ModelDefinitionError, match=r"layer 77: Detect's 'from' must be a list of layers"):
        build_model(path)


def test_detect_input_without_a_whole_stride_is_refused(tmp_path):
    def edit(definition):
        definition["anchors"] = definition["anchors"][:2]
        definition["backbone"] = [[-1, 1, "Conv", [16, 3, 3]], [-1, 1, "Conv", [16, 3, 2]]]
        definition["head"] = [[[0, 1], 1, "Detect", ["nc", "anchors"]]]
    path = write_tiny_variant(tmp_path, edit)
    with pytest.raises(ModelDefinitionError) as raised:
        build_model(path)
    message = str(raised.value)
    assert "layer 2: Detect input 0 (layer 0) is a 86x86 map for a 256x256 image, not a whole stride" in message


def first_layer_of(module: str) -> int:
    definition = load_definition(DEFINITIONS_DIR / "yolov7-tiny.yaml")
    return next(i for i, row in enumerate(definition["backbone"] + definition["head"]) if row[2] == module)


@pytest.mark.parametrize("error", [ValueError, TypeError, IndexError, RuntimeError])
def test_any_probe_failure_names_the_layer(monkeypatch, error):
    def fail(self, x):
        raise error("boom")
    monkeypatch.setattr(SP, "forward", fail)
    with pytest.raises(ModelDefinitionError) as raised:
        build_model("yolov7-tiny")
    assert f"layer {first_layer_of('SP')}: forward of a 256x256 image failed" in str(raised.value)
    assert f"{error.__name__}: boom" in str(raised.value)


@pytest.mark.parametrize("error", [ValueError, TypeError, IndexError, RuntimeError])
def test_any_construction_failure_names_the_layer(monkeypatch, error):
    def fail(self, *args, **kwargs):
        raise error("boom")
    monkeypatch.setattr(MP, "__init__", fail)
    with pytest.raises(ModelDefinitionError, match=rf"yolov7-tiny.yaml: layer {first_layer_of('MP')}: boom"):
        build_model("yolov7-tiny")


@pytest.mark.parametrize("rows, width, expected", [
    ({2: [-1, 1, "Conv", [1000000, 3, 1]], 3: [-1, 1, "Conv", [1000000, 3, 1]]}, 1.0,
     "layer 2: Conv would have 1000000 output channels (c2 1000000 x width_multiple 1)"),
    ({}, 400.0, "layer 1: Conv would have 25600 output channels (c2 64 x width_multiple 400)"),
    ({4: [-1, 1, "Conv", [16384, 1, 1]], 5: [-1, 1, "Conv", [16384, 3, 1]]}, 1.0,
     "layer 5: Conv with 16384 input and 16384 output channels brings the network to 2,4"),
    ({2: [-1, 100000, "Conv", [2048, 3, 1]]}, 1.0, "layer 2: Conv with 64 input and 2048 output channels repeated "
                                                   "100000 times brings the network to 118,374,419,488 parameters"),
])
def test_absurd_sizes_are_refused_before_allocating(tmp_path, monkeypatch, rows, width, expected):
    def edit(definition):
        definition["width_multiple"] = width
        for index, row in rows.items():
            definition["backbone"][index] = row
    path = write_tiny_variant(tmp_path, edit)
    allocated = []
    monkeypatch.setattr(Conv, "__init__", lambda *args, **kwargs: allocated.append(args))
    with pytest.raises(ModelDefinitionError) as raised:
        build_model(path)
    message = str(raised.value)
    assert expected in message and "check c2" in message and "width_multiple" in message
    assert allocated == []


@pytest.mark.parametrize("arch, parameters", [(arch, unfused) for arch, unfused, _, _ in KNOWN_TOTALS])
def test_parameter_bound_counts_exactly(monkeypatch, arch, parameters):
    monkeypatch.setattr("models.yolo.MAX_PARAMETERS", parameters)
    build_model(arch)
    monkeypatch.setattr("models.yolo.MAX_PARAMETERS", parameters - 1)
    with pytest.raises(ModelDefinitionError, match=rf"layer {105 if arch == 'yolov7' else 77}: Detect on inputs "
                                                   rf"of .* {parameters:,} parameters"):
        build_model(arch)


def test_infinite_width_is_refused_in_the_header(tmp_path):
    path = write_tiny_variant(tmp_path, lambda d: d.__setitem__("width_multiple", float("inf")))
    with pytest.raises(ModelDefinitionError, match="width_multiple must be a positive finite number, got inf"):
        build_model(path)
