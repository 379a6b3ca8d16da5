"""The args column of a model definition: the words and activations it may hold, and each module's signature,
checked before any layer is built."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

from torch import nn

ACTIVATION_PATTERN = re.compile(r"^(?:nn\.)?(?P<name>[A-Za-z0-9]+)\((?P<arg>[^()]*)\)$")
NUMBER_PATTERN = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
# in-place where the reference runtime makes them in-place
ACTIVATIONS: dict[str, Callable[..., nn.Module]] = {
    "SiLU": lambda: nn.SiLU(inplace=True),
    "ReLU": lambda: nn.ReLU(inplace=True),
    "ReLU6": lambda: nn.ReLU6(inplace=True),
    "LeakyReLU": lambda negative_slope=0.01: nn.LeakyReLU(negative_slope, inplace=True),
    "Hardswish": lambda: nn.Hardswish(inplace=True),
    "Mish": nn.Mish,
    "Sigmoid": nn.Sigmoid,
    "Identity": nn.Identity,
}
ACTIVATIONS_WITH_ARG = {"LeakyReLU"}
UPSAMPLE_MODES = ("nearest", "nearest-exact", "bilinear", "bicubic", "area")


@dataclass(frozen=True)
class ActivationSpec:
    """An activation named in a definition; built afresh per layer so no module instance is shared."""
    name: str
    arg: float | None

    def build(self) -> nn.Module:
        factory = ACTIVATIONS[self.name]
        return factory() if self.arg is None else factory(self.arg)


def parse_activation(text: str) -> ActivationSpec | None:
    """'nn.LeakyReLU(0.1)' -> ActivationSpec; None when the text is not a whitelisted activation call."""
    match = ACTIVATION_PATTERN.match(text.strip())
    if match is None or match["name"] not in ACTIVATIONS:
        return None
    arg_text = match["arg"].strip()
    if not arg_text:
        return ActivationSpec(match["name"], None)
    if match["name"] in ACTIVATIONS_WITH_ARG and NUMBER_PATTERN.match(arg_text):
        return ActivationSpec(match["name"], float(arg_text))
    return None


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A finite int or float (YAML spells infinity and NaN as .inf and .nan)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_int(value: Any) -> int:
    if not is_int(value):
        raise ValueError("an integer")
    return value


def _check_positive_int(value: Any) -> int:
    if not is_int(value) or value < 1:
        raise ValueError("a positive integer")
    return value


def _check_int_or_none(value: Any) -> int | None:
    if value is not None and not is_int(value):
        raise ValueError("an integer or None")
    return value


def _check_activation(value: Any) -> bool | ActivationSpec:
    if isinstance(value, (bool, ActivationSpec)):
        return value
    raise ValueError("True, False or an activation such as nn.LeakyReLU(0.1)")


def _check_kernel_sizes(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list) or not value or not all(is_int(v) and v > 0 for v in value):
        raise ValueError("a list of positive integers")
    return tuple(value)


def _check_scale(value: Any) -> float | None:
    if value is not None and (not is_number(value) or value <= 0):
        raise ValueError("a positive finite number or None")
    return value


def _check_mode(value: Any) -> str:
    if value not in UPSAMPLE_MODES:
        raise ValueError(f"one of {', '.join(UPSAMPLE_MODES)}")
    return value


def _check_any(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Param:
    name: str
    check: Callable[[Any], Any]
    default: Any = None
    required: bool = False


# signatures of the args column, positional, in the order the public cfg format writes them
CONV_PARAMS = (Param("c2", _check_positive_int, required=True), Param("k", _check_positive_int, 1),
               Param("s", _check_positive_int, 1), Param("p", _check_int_or_none, None),
               Param("g", _check_positive_int, 1), Param("act", _check_activation, True))
REPCONV_PARAMS = (CONV_PARAMS[0], Param("k", _check_positive_int, 3)) + CONV_PARAMS[2:]
SIGNATURES: dict[str, tuple[Param, ...]] = {
    "Conv": CONV_PARAMS,
    "RepConv": REPCONV_PARAMS,
    "SPPCSPC": (Param("c2", _check_positive_int, required=True), Param("k", _check_kernel_sizes, [5, 9, 13])),
    "Concat": (Param("d", _check_int, 1),),
    "MP": (Param("k", _check_positive_int, 2),),
    "SP": (Param("k", _check_positive_int, 3), Param("s", _check_positive_int, 1)),
    "Upsample": (Param("size", _check_int_or_none, None), Param("scale_factor", _check_scale, 2),
                 Param("mode", _check_mode, "nearest")),
    "Detect": (Param("nc", _check_positive_int, required=True), Param("anchors", _check_any, required=True)),
}


def resolve_arg(value: Any, nc: int, anchors: list) -> Any:
    """Definition-file spelling -> value: 'None', 'nc', 'anchors' and activation calls are the only words."""
    if not isinstance(value, str):
        return value
    if value == "None":
        return None
    if value == "nc":
        return nc
    if value == "anchors":
        return anchors
    if value in UPSAMPLE_MODES:
        return value
    activation = parse_activation(value)
    if activation is None:
        raise ValueError(f"unsupported argument {value!r} (allowed words: None, nc, anchors, "
                         f"{', '.join(UPSAMPLE_MODES)}, or an activation like nn.LeakyReLU(0.1))")
    return activation


def bind_args(module: str, args: list[Any]) -> dict[str, Any]:
    """Positional args -> validated keyword args for `module`'s signature."""
    params = SIGNATURES[module]
    if len(args) > len(params):
        raise ValueError(f"{module} takes at most {len(params)} args ({', '.join(p.name for p in params)}), "
                         f"got {len(args)}")
    bound = {}
    for index, param in enumerate(params):
        if index < len(args):
            try:
                bound[param.name] = param.check(args[index])
            except ValueError as error:
                raise ValueError(f"{module} arg {param.name} must be {error}, got {args[index]!r}") from None
        elif param.required:
            raise ValueError(f"{module} needs arg {param.name}")
        else:
            bound[param.name] = param.default
    return bound
