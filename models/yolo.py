"""The YOLOv7 network: the Detect head, the Model, and the parser of model-definition files.

A definition (public YOLOv7 cfg format) lists layers as [from, number, module, args]. Arguments are read
by hand against a per-module signature (models/definition_args.py): nothing from a definition file is ever
evaluated.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import yaml
from torch import nn

from models.common import MP, SP, SPPCSPC, Concat, Conv, RepConv
from models.definition_args import SIGNATURES, ActivationSpec, bind_args, is_int, is_number, resolve_arg
from utils.config import strict_yaml
from utils.core.errors import UsageError

DEFINITIONS_DIR = Path(__file__).resolve().parent / "definitions"
BUILTIN_ARCHS = ("yolov7", "yolov7-tiny")
STRIDE_PROBE_SIZE = 256
CHANNEL_DIVISOR = 8
# Checked before anything is allocated. YOLOv7 has 37.6 million parameters and at most 2,048 channels per
# layer; the bounds leave room for much larger variants but stop a typo from asking for terabytes.
MAX_PARAMETERS = 2_000_000_000  # 8 GB as float32
MAX_CHANNELS = 16_384
# What building or probing a malformed definition can raise; each becomes a ModelDefinitionError naming the layer.
BUILD_ERRORS = (ValueError, TypeError, IndexError, KeyError, RuntimeError, ArithmeticError)


class ModelDefinitionError(UsageError, ValueError):
    """A model-definition file or dict that cannot be turned into a network."""


class Detect(nn.Module):
    """One 1x1 conv per pyramid level; in eval mode decodes to (B, N, 5 + nc) boxes (cx, cy, w, h, obj, cls...)."""

    def __init__(self, nc: int, anchors: list[list[float]], ch: list[int]):
        super().__init__()
        self.nc = nc
        self.no = nc + 5
        self.nl = len(anchors)
        self.na = len(anchors[0]) // 2
        anchor_pixels = torch.tensor(anchors, dtype=torch.float32).view(self.nl, self.na, 2)
        # `anchors` becomes grid units once Model knows the strides; `anchor_grid` stays in pixels
        self.register_buffer("anchors", anchor_pixels.clone())
        self.register_buffer("anchor_grid", anchor_pixels.clone().view(self.nl, 1, self.na, 1, 1, 2))
        self.m = nn.ModuleList(nn.Conv2d(channels, self.na * self.no, 1) for channels in ch)
        self.stride = torch.ones(self.nl)
        self.grids: dict[tuple[int, int], torch.Tensor] = {}

    def cell_grid(self, ny: int, nx: int, like: torch.Tensor) -> torch.Tensor:
        """(1, 1, ny, nx, 2) cell offsets in (x, y) order, cached per feature-map size."""
        grid = self.grids.get((ny, nx))
        if grid is None or grid.dtype != like.dtype or grid.device != like.device:
            rows, cols = torch.meshgrid(torch.arange(ny, device=like.device), torch.arange(nx, device=like.device),
                                        indexing="ij")
            grid = torch.stack((cols, rows), dim=-1).view(1, 1, ny, nx, 2).to(like.dtype)
            self.grids[(ny, nx)] = grid
        return grid

    def forward(self, xs: list[torch.Tensor]) -> torch.Tensor | list[torch.Tensor]:
        maps = []
        for level, features in enumerate(xs):
            raw = self.m[level](features)
            batch, _, ny, nx = raw.shape
            maps.append(raw.view(batch, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous())
        if self.training:
            return maps
        decoded = []
        for level, raw in enumerate(maps):
            batch, _, ny, nx, _ = raw.shape
            y = raw.sigmoid()
            xy = (y[..., :2] * 2 - 0.5 + self.cell_grid(ny, nx, y)) * float(self.stride[level])
            wh = (y[..., 2:4] * 2) ** 2 * self.anchor_grid[level]
            decoded.append(torch.cat((xy, wh, y[..., 4:]), dim=-1).view(batch, -1, self.no))
        return torch.cat(decoded, dim=1)


MODULE_ALIASES = {"nn.Upsample": "Upsample"}
CHANNEL_MODULES = {"Conv": Conv, "RepConv": RepConv, "SPPCSPC": SPPCSPC}


def make_divisible(value: float, divisor: int = CHANNEL_DIVISOR) -> int:
    return math.ceil(value / divisor) * divisor


def scaled_depth(number: int, depth_multiple: float) -> int:
    return max(round(number * depth_multiple), 1) if number > 1 else number


# --- definition -> layers --------------------------------------------------------------------------------

def load_definition(path: str | Path) -> dict:
    """Read a definition YAML (safe types only, no key twice, no alias bomb) and check its top-level fields."""
    path = Path(path)
    if path.is_dir():
        raise ModelDefinitionError(f"model.arch {path} is a folder, not a file; model.arch must be yolov7, "
                                   "yolov7-tiny or the path of a model-definition .yaml file")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ModelDefinitionError(f"{path}: cannot read model definition: {error}") from error
    except UnicodeDecodeError as error:
        raise ModelDefinitionError(
            f"{path}: not a text YAML model definition (byte 0x{error.object[error.start]:02x} at offset "
            f"{error.start} is not UTF-8 text); model.arch must be yolov7, yolov7-tiny or the path of a "
            f"model-definition .yaml file in the YOLOv7 cfg format") from None
    try:
        definition = strict_yaml.load(text)
    except yaml.YAMLError as error:
        raise ModelDefinitionError(f"{path}: not valid YAML: {error}") from error
    if not isinstance(definition, dict):
        raise ModelDefinitionError(f"{path}: a model definition must be a mapping, got {type(definition).__name__}")
    return definition


def definition_path(arch: str) -> Path:
    """'yolov7' / 'yolov7-tiny' -> the bundled definition; anything else is taken as a path."""
    if arch in BUILTIN_ARCHS:
        return DEFINITIONS_DIR / f"{arch}.yaml"
    return Path(arch)


@dataclass(frozen=True)
class DefinitionHeader:
    """What a definition's header says every layer is built with, and how many layers its rows hold."""
    nc: int
    depth_multiple: float
    width_multiple: float
    anchors: list[list[float]]
    layers: int  # rows of backbone and head: Detect must be the last


def _check_header(definition: dict, source: str) -> DefinitionHeader:
    def fail(problem: str) -> ModelDefinitionError:
        return ModelDefinitionError(f"{source}: {problem}")

    for key in ("nc", "depth_multiple", "width_multiple", "anchors", "backbone", "head"):
        if key not in definition:
            raise fail(f"missing top-level key {key!r}")
    nc = definition["nc"]
    if not is_int(nc) or nc < 1:
        raise fail(f"nc must be a positive integer, got {nc!r}")
    multiples = []
    for key in ("depth_multiple", "width_multiple"):
        value = definition[key]
        if not is_number(value) or value <= 0:
            raise fail(f"{key} must be a positive finite number, got {value!r}")
        multiples.append(float(value))
    anchors = definition["anchors"]
    if (not isinstance(anchors, list) or not anchors
            or not all(isinstance(level, list) and level and len(level) % 2 == 0 for level in anchors)
            or len({len(level) for level in anchors}) != 1
            or not all(is_number(v) and v > 0 for level in anchors for v in level)):
        raise fail("anchors must be a list of levels, each the same even number of positive pixel sizes")
    for key in ("backbone", "head"):
        if not isinstance(definition[key], list):
            raise fail(f"{key} must be a list of layers")
    return DefinitionHeader(nc, multiples[0], multiples[1], anchors,
                            len(definition["backbone"]) + len(definition["head"]))


def _absolute_sources(sources: int | list, index: int) -> list[int]:
    """`from` entries -> absolute layer indices; -1 (the previous layer, or the image for layer 0) stays -1."""
    entries = sources if isinstance(sources, list) else [sources]
    if not entries or not all(is_int(e) for e in entries):
        raise ValueError(f"'from' must be an integer or a non-empty list of integers, got {sources!r}")
    absolute = []
    for entry in entries:
        target = entry if entry == -1 or entry >= 0 else index + entry
        if target != -1 and not 0 <= target < index:
            raise ValueError(f"'from' entry {entry} does not refer to an earlier layer")
        absolute.append(target)
    return absolute


def _layer_type(module: nn.Module) -> str:
    return f"{type(module).__module__}.{type(module).__qualname__}"


@dataclass
class LayerPlan:
    """One definition row, validated and sized, before any tensor of it exists."""
    index: int
    name: str
    sources: int | list  # the row's 'from' as written
    absolute: list[int]
    in_channels: list[int]
    out_channels: int  # what the next layers receive; 0 for Detect
    kwargs: dict[str, Any]
    repeats: int
    parameters: int


def parse_definition(definition: dict, input_channels: int = 3, source: str = "<definition>"
                     ) -> tuple[nn.Sequential, list[list[int]]]:
    """Definition dict -> (layers, absolute source indices per layer; -1 = the previous output or the image)."""
    header = _check_header(definition, source)
    rows = definition["backbone"] + definition["head"]
    channels: list[int] = []  # output channels per layer
    plans = []
    total = 0
    for index, row in enumerate(rows):
        try:
            plan = _plan_layer(row, index, channels, input_channels, header)
        except BUILD_ERRORS as error:
            raise ModelDefinitionError(f"{source}: layer {index}: {error}") from None
        total += plan.parameters
        if total > MAX_PARAMETERS:
            raise ModelDefinitionError(f"{source}: layer {index}: {_too_many_parameters(plan, total)}; check c2 "
                                       f"and number of this layer and the ones before it, width_multiple "
                                       f"({header.width_multiple:g}) and depth_multiple ({header.depth_multiple:g})")
        channels.append(plan.out_channels)
        plans.append(plan)
    if not plans or plans[-1].name != "Detect":
        raise ModelDefinitionError(f"{source}: the last layer must be Detect")
    layers = []
    for plan in plans:
        try:
            layers.append(_build_layer(plan))
        except BUILD_ERRORS as error:
            raise ModelDefinitionError(f"{source}: layer {plan.index}: {error}") from None
    return nn.Sequential(*layers), [plan.absolute for plan in plans]


def _plan_layer(row: Any, index: int, channels: list[int], input_channels: int,
                header: DefinitionHeader) -> LayerPlan:
    if not isinstance(row, list) or len(row) != 4:
        raise ValueError(f"a layer must be [from, number, module, args], got {row!r}")
    sources, number, module_name, raw_args = row
    if not isinstance(module_name, str):
        raise ValueError(f"module name must be a string, got {module_name!r}")
    name = MODULE_ALIASES.get(module_name, module_name)
    if name not in SIGNATURES:
        raise ValueError(f"unknown module {module_name!r} (allowed: Conv, Concat, MP, SP, SPPCSPC, RepConv, "
                         "Detect, nn.Upsample)")
    if not is_int(number) or number < 1:
        raise ValueError(f"'number' must be a positive integer, got {number!r}")
    if not isinstance(raw_args, list):
        raise ValueError(f"args must be a list, got {raw_args!r}")
    absolute = _absolute_sources(sources, index)
    if name != "Concat" and name != "Detect" and len(absolute) != 1:
        raise ValueError(f"{name} takes one input, 'from' lists {len(absolute)}")
    if name == "Detect" and index != header.layers - 1:
        raise ValueError("Detect must be the last layer")
    if name == "Detect" and not isinstance(sources, list):
        # a bare index hands Detect one tensor instead of the list of per-level maps it decodes
        raise ValueError(f"Detect's 'from' must be a list of layers, one per detection level (e.g. [74, 75, 76]), "
                         f"got {sources!r}")
    previous_channels = channels[-1] if channels else input_channels
    in_channels = [previous_channels if source == -1 else channels[source] for source in absolute]
    kwargs = bind_args(name, [resolve_arg(arg, header.nc, header.anchors) for arg in raw_args])
    repeats = scaled_depth(number, header.depth_multiple)

    if name in CHANNEL_MODULES:
        written = kwargs["c2"]
        kwargs["c2"] = out_channels = make_divisible(written * header.width_multiple)
        if out_channels > MAX_CHANNELS:
            raise ValueError(f"{name} would have {out_channels} output channels (c2 {written} x width_multiple "
                             f"{header.width_multiple:g}), more than the {MAX_CHANNELS} allowed; check c2 and "
                             "width_multiple")
    elif name == "Concat":
        out_channels = sum(in_channels)
        if out_channels > MAX_CHANNELS:
            raise ValueError(f"Concat would have {out_channels} output channels (the sum of its inputs' "
                             f"{in_channels}), more than the {MAX_CHANNELS} allowed; check the c2 and "
                             "width_multiple of the layers it concatenates")
    elif name == "Detect":
        _check_detect_anchors(kwargs["anchors"], len(absolute))
        outputs = _detect_outputs(kwargs)
        if outputs > MAX_CHANNELS:
            raise ValueError(f"Detect would have {outputs} output channels per level (anchors per level x "
                             f"(nc + 5), nc = {kwargs['nc']}), more than the {MAX_CHANNELS} allowed; check nc")
        out_channels = 0
    else:
        out_channels = in_channels[0]
    parameters = repeats * _parameter_count(name, kwargs, in_channels)
    return LayerPlan(index, name, sources, absolute, in_channels, out_channels, kwargs, repeats, parameters)


def _detect_outputs(kwargs: dict[str, Any]) -> int:
    """Output channels of each Detect conv: anchors per level x (nc + 5)."""
    return len(kwargs["anchors"][0]) // 2 * (kwargs["nc"] + 5)


def _parameter_count(name: str, kwargs: dict[str, Any], in_channels: list[int]) -> int:
    """Parameters one module of the layer will hold (weights, biases, BatchNorm affine), from its arguments."""
    c1 = in_channels[0]
    if name == "Conv":
        return kwargs["c2"] * (c1 // kwargs["g"]) * kwargs["k"] ** 2 + 2 * kwargs["c2"]
    if name == "RepConv":
        c2, g = kwargs["c2"], kwargs["g"]
        identity = 2 * c1 if c1 == c2 and kwargs["s"] == 1 else 0
        return c2 * (c1 // g) * (kwargs["k"] ** 2 + 1) + 4 * c2 + identity
    if name == "SPPCSPC":
        c = kwargs["c2"]  # hidden width = c2, see SPPCSPC
        weights = 2 * c1 * c + 9 * c * c + c * c + (len(kwargs["k"]) + 1) * c * c + 9 * c * c + 2 * c * c
        return weights + 7 * 2 * c
    if name == "Detect":
        outputs = _detect_outputs(kwargs)
        return sum(channels * outputs + outputs for channels in in_channels)
    return 0


def _too_many_parameters(plan: LayerPlan, total: int) -> str:
    if plan.name == "Detect":
        layer = f"Detect on inputs of {', '.join(map(str, plan.in_channels))} channels"
    else:
        layer = f"{plan.name} with {plan.in_channels[0]} input and {plan.out_channels} output channels"
    if plan.repeats > 1:
        layer += f" repeated {plan.repeats} times"
    return (f"{layer} brings the network to {total:,} parameters ({total * 4 / 1e9:,.1f} GB as float32), "
            f"more than the {MAX_PARAMETERS:,} allowed")


def _build_layer(plan: LayerPlan) -> nn.Module:
    if plan.repeats == 1:
        layer = _make_module(plan.name, plan.kwargs, plan.in_channels)
    else:
        layer = nn.Sequential(*(_make_module(plan.name, plan.kwargs, plan.in_channels)
                                for _ in range(plan.repeats)))
    layer.f = plan.sources
    layer.i = plan.index
    layer.type = _layer_type(layer)
    layer.np = sum(p.numel() for p in layer.parameters())
    return layer


def _make_module(name: str, kwargs: dict[str, Any], in_channels: list[int]) -> nn.Module:
    if name in CHANNEL_MODULES:
        built = {k: (v.build() if isinstance(v, ActivationSpec) else v) for k, v in kwargs.items()}
        return CHANNEL_MODULES[name](in_channels[0], **built)
    if name == "Concat":
        return Concat(kwargs["d"])
    if name == "Detect":
        return Detect(kwargs["nc"], kwargs["anchors"], in_channels)
    if name == "Upsample":
        return nn.Upsample(kwargs["size"], kwargs["scale_factor"], kwargs["mode"])
    return (MP if name == "MP" else SP)(**kwargs)


def _check_detect_anchors(anchors: Any, level_count: int) -> None:
    if (not isinstance(anchors, list) or len(anchors) != level_count
            or not all(isinstance(level, list) and level and len(level) % 2 == 0 for level in anchors)
            or len({len(level) for level in anchors}) != 1):
        raise ValueError(f"Detect needs one anchor list (of equal even length) per input; it has "
                         f"{level_count} inputs")


def coco_names() -> list[str]:
    lines = (DEFINITIONS_DIR / "coco80.names").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip()]


# --- the network ------------------------------------------------------------------------------------------

class Model(nn.Module):
    """A YOLOv7 network built from a definition dict; eval-mode forward returns (B, N, 5 + nc) predictions."""

    def __init__(self, definition: dict, input_channels: int = 3, source: str = "<definition>"):
        super().__init__()
        self.yaml = dict(definition, ch=input_channels)
        self.yaml_file = source
        self.model, self.sources = parse_definition(definition, input_channels, source)
        detect = self.model[-1]
        self.nc = detect.nc
        self.names = coco_names() if self.nc == 80 else [str(k) for k in range(self.nc)]
        self.save = _read_later(self.sources)
        self.stride = self._probe_strides(input_channels, source)
        detect.stride = self.stride
        detect.anchors /= self.stride.view(-1, 1, 1)
        _initialise_detect_biases(detect)

    def _probe_strides(self, input_channels: int, source: str) -> torch.Tensor:
        was_training = self.training
        self.eval()  # running stats stay untouched by the zero image
        self.model[-1].train()  # Detect then returns the raw per-level maps, all the probe needs
        probe = torch.zeros(1, input_channels, STRIDE_PROBE_SIZE, STRIDE_PROBE_SIZE)
        running = {"layer": None}  # which layer to blame when the probe fails
        hooks = [layer.register_forward_pre_hook(lambda module, _: running.update(layer=module.i))
                 for layer in self.model]
        try:
            with torch.no_grad():
                maps = self.forward(probe)
        except BUILD_ERRORS as error:
            raise ModelDefinitionError(f"{source}: layer {running['layer']}: forward of a {STRIDE_PROBE_SIZE}x"
                                       f"{STRIDE_PROBE_SIZE} image failed ({type(error).__name__}: {error}); "
                                       "check this layer's 'from' and the channels and sizes it receives"
                                       ) from error
        finally:
            for hook in hooks:
                hook.remove()
            self.train(was_training)
        return torch.tensor([self._level_stride(level, features, source) for level, features in enumerate(maps)])

    def _level_stride(self, level: int, features: torch.Tensor, source: str) -> float:
        """A Detect input's stride; the decode needs the same whole stride across and down."""
        ny, nx = features.shape[2:4]  # Detect's raw maps are (B, na, ny, nx, no)
        if ny == nx and STRIDE_PROBE_SIZE % ny == 0:
            return float(STRIDE_PROBE_SIZE // ny)
        detect = self.model[-1]
        layer = self.sources[-1][level] if self.sources[-1][level] != -1 else detect.i - 1
        raise ModelDefinitionError(
            f"{source}: layer {detect.i}: Detect input {level} (layer {layer}) is a {ny}x{nx} map for a "
            f"{STRIDE_PROBE_SIZE}x{STRIDE_PROBE_SIZE} image, not a whole stride; Detect's inputs must be "
            f"square maps downsampled by a stride that divides {STRIDE_PROBE_SIZE} (8, 16 and 32 in YOLOv7): "
            "check the strides of the layers that lead to it")

    def forward(self, x: torch.Tensor) -> torch.Tensor | list[torch.Tensor]:
        # Outputs read later are kept to the end of the forward, as the official forward keeps them. Freeing
        # each after its last reader let glibc hand the freed heap back to the kernel within the forward, and
        # the next layers faulted it back in: far more page faults per image at glibc's defaults.
        # benchmarks/peers/yolov7_official_parity.py measures the faults per image beside the official loop's.
        kept: dict[int, torch.Tensor] = {}
        for layer, sources in zip(self.model, self.sources):
            if layer.f != -1:
                inputs = [x if source == -1 else kept[source] for source in sources]
                x = inputs[0] if isinstance(layer.f, int) else inputs
            x = layer(x)
            if layer.i in self.save:
                kept[layer.i] = x
        return x


def _read_later(sources_per_layer: list[list[int]]) -> set[int]:
    """The layers whose outputs a later layer reads (besides the next layer)."""
    return {source for sources in sources_per_layer for source in sources if source != -1}


def _initialise_detect_biases(detect: Detect, image_size: int = 640) -> None:
    """Priors from the reference: about 8 objects per 640 image, class probability about 0.6 / nc."""
    with torch.no_grad():
        for conv, stride in zip(detect.m, detect.stride.tolist()):
            bias = conv.bias.view(detect.na, detect.no)
            bias[:, 4] += math.log(8 / (image_size / stride) ** 2)
            bias[:, 5:] += math.log(0.6 / (detect.nc - 0.99))


def build_model(arch: str, seed: int | None = 0) -> Model:
    """'yolov7', 'yolov7-tiny' or a definition path -> unfused float32 Model in eval mode, seeded init."""
    path = definition_path(arch)
    definition = load_definition(path)
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(seed)
        model = Model(definition, source=str(path))
    return model.float().eval()
