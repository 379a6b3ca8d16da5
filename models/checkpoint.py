"""Loading weights into a Model without ever running code from the weights file.

Plain state_dicts load through torch.load(weights_only=True). The official YOLOv7 checkpoints pickle a whole
network object, which weights_only refuses; for those (and to diagnose anything torch refuses) the file is
read by a restricted unpickler that maps the few globals such a file names onto inert stand-ins and refuses
every other global. Stand-ins only keep their pickled state; the state_dict is collected by walking them.
"""
from __future__ import annotations

import functools
import io
import pickle
import warnings
import zipfile
from collections import Counter, OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from models.fuse import is_fused
from utils.core.bounded_text import LIMIT, clipped
from models.yolo import BUILTIN_ARCHS, Model, definition_path, load_definition, parse_definition
from utils.core.errors import UsageError

MAX_LISTED = 10
NETWORK_CLASS = "models.yolo.Model"
MODULE_CLASSES = (
    NETWORK_CLASS, "models.yolo.Detect",
    "models.common.Conv", "models.common.Concat", "models.common.MP", "models.common.SP",
    "models.common.SPPCSPC", "models.common.RepConv",
    "torch.nn.modules.conv.Conv2d", "torch.nn.modules.batchnorm.BatchNorm2d",
    "torch.nn.modules.activation.SiLU", "torch.nn.modules.activation.LeakyReLU",
    "torch.nn.modules.activation.ReLU", "torch.nn.modules.activation.Hardswish",
    "torch.nn.modules.linear.Identity",
    "torch.nn.modules.pooling.MaxPool2d", "torch.nn.modules.upsampling.Upsample",
    "torch.nn.modules.container.Sequential", "torch.nn.modules.container.ModuleList",
)
STORAGE_DTYPES = {
    "HalfStorage": torch.float16, "FloatStorage": torch.float32, "DoubleStorage": torch.float64,
    "BFloat16Storage": torch.bfloat16, "LongStorage": torch.int64, "IntStorage": torch.int32,
    "ShortStorage": torch.int16, "CharStorage": torch.int8, "ByteStorage": torch.uint8,
    "BoolStorage": torch.bool,
}
# What users pass as weights by mistake, by leading bytes. torch.save writes a zip ("PK") or, in the legacy
# format, a pickle (0x80, the protocol marker); anything else is refused before it reaches an unpickler.
SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image", ""), (b"\xff\xd8\xff", "a JPEG image", ""), (b"GIF8", "a GIF image", ""),
    (b"\x1f\x8b", "a gzip file", ""), (b"BZh", "a bzip2 file", ""), (b"\xfd7zXZ", "an xz file", ""),
    (b"version https://git-lfs", "a Git LFS pointer", "fetch the real file with git lfs pull"),
)
HEAD_BYTES = 64
# Errors a corrupt or hostile pickle can raise while being read by the restricted unpickler.
READ_ERRORS = (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError,
               RuntimeError, zipfile.BadZipFile, OverflowError, MemoryError)


class CheckpointError(UsageError):
    """A weights file that cannot be (or must not be) loaded into the model."""


@dataclass(frozen=True)
class WeightsInfo:
    source: str  # e.g. "checkpoint yolov7.pt (ema, float16)"
    class_names: list[str] | None
    tensors_loaded: int


# --- restricted unpickling -----------------------------------------------------------------------------

class StandIn:
    """Inert record of a pickled module object: whatever the pickle builds goes into `state`, nothing runs."""
    qualified_name = "?"

    def __new__(cls, *args: Any, **kwargs: Any) -> "StandIn":
        return object.__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any):
        self.state: dict = {}

    def __setstate__(self, state: Any) -> None:
        self.state = state if isinstance(state, dict) else {}


STAND_INS = {name: type(name.rsplit(".", 1)[1], (StandIn,), {"qualified_name": name}) for name in MODULE_CLASSES}


@dataclass(frozen=True)
class StorageKind:
    dtype: torch.dtype


class Storage:
    """A storage read from the zip: a flat tensor of its dtype."""

    def __init__(self, flat: torch.Tensor):
        self.flat = flat


def rebuild_tensor(storage: Any, storage_offset: Any, size: Any, stride: Any, *_ignored: Any) -> torch.Tensor:
    """Our version of torch's tensor rebuild: a view of the storage (as_strided checks the bounds)."""
    if not isinstance(storage, Storage):
        raise CheckpointError(f"tensor record without a storage ({type(storage).__name__})")
    return storage.flat.as_strided(tuple(size), tuple(stride), int(storage_offset))


def rebuild_parameter(data: Any, *_ignored: Any) -> torch.Tensor:
    """Parameters are read as plain tensors; requires_grad and hooks do not matter here."""
    if not isinstance(data, torch.Tensor):
        raise CheckpointError(f"parameter record without tensor data ({type(data).__name__})")
    return data


SAFE_CALLABLES: dict[str, Any] = {
    "collections.OrderedDict": OrderedDict,
    "builtins.set": set,
    "torch._utils._rebuild_tensor_v2": rebuild_tensor,
    "torch._utils._rebuild_parameter": rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": rebuild_parameter,
}


class RestrictedUnpickler(pickle.Unpickler):
    """Resolves only the globals a YOLOv7 checkpoint names; reads storages from the torch zip, if any."""

    def __init__(self, file: io.BufferedIOBase, archive: zipfile.ZipFile | None, prefix: str):
        super().__init__(file)
        self.archive = archive
        self.prefix = prefix
        self.storages: dict[str, Storage] = {}

    def find_class(self, module: str, name: str) -> Any:
        module = "builtins" if module == "__builtin__" else module  # protocol-2 pickles use the Python 2 name
        full_name = f"{module}.{name}"
        if full_name in STAND_INS:
            return STAND_INS[full_name]
        if full_name in SAFE_CALLABLES:
            return SAFE_CALLABLES[full_name]
        if module == "torch" and name in STORAGE_DTYPES:
            return StorageKind(STORAGE_DTYPES[name])
        raise CheckpointError(f"refusing to load: the file names the forbidden global {full_name!r} "
                              "(a YOLOv7 checkpoint only names model classes, tensors and containers)")

    def persistent_load(self, pid: Any) -> Storage:
        if self.archive is None:
            raise CheckpointError("storage reference outside a torch zip file")
        if (not isinstance(pid, tuple) or len(pid) != 5 or pid[0] != "storage"
                or not isinstance(pid[1], StorageKind) or not isinstance(pid[2], str) or not isinstance(pid[4], int)):
            raise CheckpointError(f"unexpected storage reference {pid!r:.80}")
        _, kind, key, _location, numel = pid
        if key not in self.storages:
            raw = self.archive.read(f"{self.prefix}data/{key}")
            itemsize = torch.empty(0, dtype=kind.dtype).element_size()
            if len(raw) != numel * itemsize:
                raise CheckpointError(f"storage {key} holds {len(raw)} bytes, expected {numel * itemsize}")
            flat = torch.frombuffer(bytearray(raw), dtype=kind.dtype) if raw else torch.empty(0, dtype=kind.dtype)
            self.storages[key] = Storage(flat)
        return self.storages[key]


def read_restricted(path: Path) -> Any:
    """Unpickle a torch zip checkpoint or a raw pickle with RestrictedUnpickler."""
    with open(path, "rb") as file:
        head = file.read(4)
    try:
        if head.startswith(b"PK") or zipfile.is_zipfile(path):
            return _read_torch_zip(path)
        with open(path, "rb") as file:
            return RestrictedUnpickler(file, None, "").load()
    except CheckpointError as error:
        raise CheckpointError(f"{path}: {error}") from None
    except READ_ERRORS as error:
        what = "torch zip file" if head.startswith(b"PK") else "file (neither a torch zip file nor a pickle)"
        raise CheckpointError(f"{path}: corrupt, truncated or not a checkpoint {what}: "
                              f"{type(error).__name__}: {error}") from error


def _read_torch_zip(path: Path) -> Any:
    with zipfile.ZipFile(path) as archive:
        pickles = [name for name in archive.namelist() if name.endswith("/data.pkl") and name.count("/") == 1]
        if len(pickles) != 1:
            raise CheckpointError("a zip file without one torch data.pkl record: not a torch checkpoint")
        prefix = pickles[0][: -len("data.pkl")]
        if f"{prefix}byteorder" in archive.namelist() and archive.read(f"{prefix}byteorder") != b"little":
            raise CheckpointError("big-endian checkpoints are not supported")
        data = io.BytesIO(archive.read(pickles[0]))
        return RestrictedUnpickler(data, archive, prefix).load()


def _unsupported_format(head: bytes) -> tuple[str, str] | None:
    """(what the file looks like with its first bytes, a hint) for a file torch.save cannot have written."""
    if head.startswith((b"PK", b"\x80")):
        return None
    if not head:
        return "the file is empty", ""
    hex_bytes = f"first bytes {head[:8].hex(' ')}"
    for signature, what, hint in SIGNATURES:
        if head.startswith(signature):
            return f"looks like {what}, {hex_bytes}", hint
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < len(head) - 3:  # only a multi-byte character cut off by HEAD_BYTES is still text
            return f"unknown format, {hex_bytes}", ""
        text = head[:error.start].decode("utf-8")
    if not all(char.isprintable() or char in "\t\r\n" for char in text):
        return f"unknown format, {hex_bytes}", ""
    if text.lstrip().lower().startswith(("<!doctype html", "<html")):
        return f"looks like an HTML page, {hex_bytes}", "download the file itself, not the page that links to it"
    return f"looks like text, e.g. YAML, first bytes {text[:24]!r}", ""


def check_format(path: Path) -> None:
    """Refuses a file torch.save cannot have written, before any unpickler sees it."""
    with open(path, "rb") as file:
        unsupported = _unsupported_format(file.read(HEAD_BYTES))
    if unsupported is not None:
        found, hint = unsupported
        raise CheckpointError(f"{path}: not a PyTorch checkpoint ({found}){'; ' + hint if hint else ''}; "
                              "model.weights must point at a .pt file saved by torch.save")


def read_checkpoint(path: Path) -> Any:
    """The unpickled top-level object; torch's weights-only loader first, the restricted reader otherwise."""
    check_format(path)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Detected pickle protocol")  # raw pickles; harmless
            return torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # whole-module pickles land here; the restricted reader says precisely what is wrong
        return read_restricted(path)


# --- checkpoint object -> state_dict -------------------------------------------------------------------

def stand_in_state_dict(root: StandIn) -> dict[str, torch.Tensor]:
    """state_dict of a pickled module tree: parameters and persistent buffers, keys joined with dots."""
    entries: dict[str, torch.Tensor] = {}
    pending: list[tuple[str, StandIn, frozenset[int]]] = [("", root, frozenset())]
    while pending:
        prefix, node, ancestors = pending.pop()
        if id(node) in ancestors:  # a crafted pickle can make the module tree cyclic
            raise CheckpointError(f"module {prefix.rstrip('.')} contains itself")
        records = {group: node.state.get(group) or {} for group in ("_parameters", "_buffers", "_modules")}
        non_persistent = node.state.get("_non_persistent_buffers_set") or set()
        if not all(isinstance(r, dict) for r in records.values()) or not isinstance(non_persistent, set):
            raise CheckpointError(f"module {prefix.rstrip('.') or 'root'} has malformed module records")
        for group in ("_parameters", "_buffers"):
            for name, value in records[group].items():
                if value is None or (group == "_buffers" and name in non_persistent):
                    continue
                if not isinstance(value, torch.Tensor):
                    raise CheckpointError(f"{prefix}{name} is a {type(value).__name__}, not a tensor")
                entries[f"{prefix}{name}"] = value
        for name, child in reversed(records["_modules"].items()):
            if child is None:
                continue
            if not isinstance(child, StandIn):
                raise CheckpointError(f"submodule {prefix}{name} is a {type(child).__name__}, not a module")
            pending.append((f"{prefix}{name}.", child, ancestors | {id(node)}))
    return entries


def _is_state_dict(value: Any) -> bool:
    return (isinstance(value, dict) and bool(value)
            and all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in value.items()))


def _class_names(value: Any) -> list[str] | None:
    if isinstance(value, (list, tuple)) and value and all(isinstance(n, str) for n in value):
        return list(value)
    return None


def extract_network(payload: Any, path: Path) -> tuple[dict[str, torch.Tensor], str, list[str] | None]:
    """Checkpoint object -> (state_dict, how it was stored, class names if the file has them).

    How it was stored: 'ema' / 'model' (a pickled network under that key), 'module' (a bare pickled network),
    'state_dict' (a bare state_dict) or "state_dict['key']".
    """
    if isinstance(payload, StandIn):
        network, where, names = payload, "module", None
    elif _is_state_dict(payload):
        return payload, "state_dict", None
    elif isinstance(payload, dict):
        names = _class_names(payload.get("names"))
        for key in ("ema", "model", "state_dict"):
            if payload.get(key) is not None:
                network, where = payload[key], key
                break
        else:
            raise CheckpointError(f"{path}: not a checkpoint: a dict without a network under 'ema', 'model' "
                                  f"or 'state_dict' (keys: {_listed(map(str, payload))})")
        if _is_state_dict(network):
            return network, f"state_dict[{where!r}]", names
    else:
        raise CheckpointError(f"{path}: not a checkpoint: the file holds a {type(payload).__name__}")
    if not isinstance(network, StandIn) or network.qualified_name != NETWORK_CLASS:
        found = network.qualified_name if isinstance(network, StandIn) else type(network).__name__
        raise CheckpointError(f"{path}: the network under '{where}' is a {found}, expected {NETWORK_CLASS}")
    return stand_in_state_dict(network), where, _class_names(network.state.get("names")) or names


# --- matching against the model --------------------------------------------------------------------------

def _listed(items: Any) -> str:
    items = list(items)
    shown = ", ".join(items[:MAX_LISTED])
    return shown + (f" ... (+{len(items) - MAX_LISTED} more)" if len(items) > MAX_LISTED else "")


def _shape(tensor: torch.Tensor) -> str:
    return "(" + ", ".join(map(str, tensor.shape)) + ")"


def check_class_count(model: Model, state_dict: dict[str, torch.Tensor], path: Path) -> None:
    detect = model.model[-1]
    key = f"model.{len(model.model) - 1}.m.0.weight"
    if key in state_dict and state_dict[key].dim() >= 1 and state_dict[key].shape[0] % detect.na == 0:
        checkpoint_nc = state_dict[key].shape[0] // detect.na - 5
        if checkpoint_nc != model.nc:
            raise CheckpointError(f"{path}: class count mismatch: the checkpoint has nc={checkpoint_nc}, "
                                  f"the model has nc={model.nc} ({key} is {_shape(state_dict[key])}, the model's "
                                  f"is {_shape(detect.m[0].weight)})")


def describe_mismatch(expected: dict[str, torch.Tensor], found: dict[str, torch.Tensor]) -> list[str]:
    """Human-readable differences between two state_dicts (missing, unexpected, shape); empty if none."""
    missing = [k for k in expected if k not in found]
    unexpected = [k for k in found if k not in expected]
    shapes = [f"{k} checkpoint {_shape(found[k])} vs model {_shape(expected[k])}"
              for k in expected if k in found and found[k].shape != expected[k].shape]
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing keys: {_listed(missing)}")
    if unexpected:
        problems.append(f"{len(unexpected)} unexpected keys: {_listed(unexpected)}")
    if shapes:
        problems.append(f"{len(shapes)} shape mismatches: {_listed(shapes)}")
    return problems


def _layer_count(state_dict: dict[str, torch.Tensor]) -> int:
    """Layers named by 'model.<index>.' keys (layers without tensors in between count too)."""
    indices = [int(parts[1]) for parts in (k.split(".") for k in state_dict)
               if len(parts) > 2 and parts[0] == "model" and parts[1].isdigit()]
    return max(indices) + 1 if indices else 0


@functools.cache
def builtin_layouts() -> dict[str, dict[str, torch.Size]]:
    """Key -> shape of each builtin arch's unfused state_dict; built on the meta device, so nothing is allocated."""
    layouts = {}
    for arch in BUILTIN_ARCHS:
        with torch.device("meta"):
            layers, _ = parse_definition(load_definition(definition_path(arch)), source=arch)
        layouts[arch] = {f"model.{key}": tensor.shape for key, tensor in layers.state_dict().items()}
    return layouts


def suggest_arch(model: Model, state_dict: dict[str, torch.Tensor]) -> str | None:
    """'set model.arch: ...' when the checkpoint has the layout of a builtin arch the model does not have."""
    if is_fused(model):  # its layout differs from any unfused checkpoint; the fuse hint says what to do
        return None
    model_layout = {key: tensor.shape for key, tensor in model.state_dict().items()}
    for arch, layout in builtin_layouts().items():
        if layout.keys() != state_dict.keys() or layout == model_layout:
            continue
        head = f"model.{_layer_count(layout) - 1}."
        differing = [key for key, shape in layout.items() if state_dict[key].shape != shape]
        if not all(key.startswith(f"{head}m.") for key in differing):
            continue
        layers = f"{_layer_count(layout)} layers"
        if not differing:
            return (f"this checkpoint is for {arch} ({layers}), the model has {len(model.model)} layers: set "
                    f"model.arch: {arch} (--set model.arch={arch})")
        # only the Detect convs differ: the same network trained for another class count
        nc = state_dict[f"{head}m.0.weight"].shape[0] // layout[f"{head}anchors"][1] - 5
        return (f"this checkpoint is for {arch} ({layers}) trained for {nc} classes, the model has "
                f"{len(model.model)} layers: copy models/definitions/{arch}.yaml, set nc: {nc} in the copy and "
                f"point model.arch at it (--set model.arch=my-{arch}.yaml)")
    return None


def _main_dtype(state_dict: dict[str, torch.Tensor]) -> str:
    counts = Counter(str(t.dtype).removeprefix("torch.") for t in state_dict.values() if t.is_floating_point())
    return counts.most_common(1)[0][0] if counts else "no floating tensors"


def load_weights(model: Model, path: str | Path) -> WeightsInfo:
    """Load an official YOLOv7 checkpoint or a state_dict file into an unfused `model`, as float32.

    Sets `model.names` when the file carries one name per class. Raises CheckpointError on anything else.
    """
    path = Path(path)
    if path.is_dir():
        raise CheckpointError(f"model.weights {clipped(str(path), LIMIT)} is a folder, not a file; set model.weights "
                              "to the checkpoint file (.pt) itself")
    if not path.is_file():
        raise CheckpointError(f"weights file not found: {clipped(str(path), LIMIT)}")
    try:
        payload = read_checkpoint(path)
    except OSError as error:
        raise CheckpointError(f"{path}: cannot read: {error}") from error
    state_dict, where, names = extract_network(payload, path)
    check_class_count(model, state_dict, path)
    expected = model.state_dict()
    problems = describe_mismatch(expected, state_dict)
    if problems:
        suggestion = suggest_arch(model, state_dict)
        if suggestion is not None:
            raise CheckpointError(f"{path}: weights do not match the model: {suggestion}. The differences: "
                                  + "; ".join(problems) + ".")
        layers = f"the checkpoint has {_layer_count(state_dict)} layers, the model {len(model.model)}"
        hint = " The model is fused: load weights before fuse_model." if is_fused(model) else ""
        raise CheckpointError(f"{path}: weights do not match the model ({layers}): " + "; ".join(problems)
                              + "." + hint)
    dtype = _main_dtype(state_dict)
    converted = {k: v.to(expected[k].dtype) if v.is_floating_point() else v for k, v in state_dict.items()}
    model.load_state_dict(converted, strict=True)
    if names is not None and len(names) == model.nc:
        model.names = names
    if where.startswith("state_dict"):
        source = f"{where.replace('state_dict', 'state_dict ' + path.name)} ({dtype})"
    else:
        source = f"checkpoint {path.name} ({where}, {dtype})"
    return WeightsInfo(source, names, len(state_dict))
