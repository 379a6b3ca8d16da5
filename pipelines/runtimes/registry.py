"""Runtimes by `runtime.backend`. A new runtime is a folder beside these holding a light `spec.py` (its
`SPEC`), and one line here naming the folder.

Only the specs are imported here: a session, a layer reader or a trace reader is imported when a run uses
it (OpenVINO and ONNX Runtime take a second to import, and a torch run needs neither).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

from pipelines.runtimes.spec import RuntimeSpec

if TYPE_CHECKING:
    from pipelines.runtimes.base import Runtime

RUNTIMES = (
    "torch",
    "onnxruntime",
    "openvino",
    "litert",
)

SPECS: dict[str, RuntimeSpec] = {
    folder: importlib.import_module(f"pipelines.runtimes.{folder}.spec").SPEC for folder in RUNTIMES}
REFERENCE: RuntimeSpec = next(spec for spec in SPECS.values() if spec.reference)
REFERENCE_PRECISION = "fp32"


def _attribute(spec: RuntimeSpec, reference: str) -> Any:
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(f"pipelines.runtimes.{spec.name}.{module}"), name)


def build_runtime(backend: str, **keys: Any) -> "Runtime":
    """A runtime from keyword settings: the common ones (base.RuntimeSettings) and its spec's own options. A key
    it takes neither way is a TypeError, as a constructor's would be."""
    from dataclasses import fields

    from pipelines.runtimes.base import RuntimeSettings
    spec = SPECS[backend]
    common = {key: keys.pop(key) for key in [entry.name for entry in fields(RuntimeSettings)] if key in keys}
    own = {key: keys.pop(key) for key in list(keys) if key in spec.options.model_fields}
    if keys:
        raise TypeError(f"runtime {backend} takes no {', '.join(sorted(keys))}")
    return _attribute(spec, spec.session)(RuntimeSettings(**common), spec.options.model_construct(**own))


def build_reference(**settings: Any) -> "Runtime":
    """The reference runtime at the reference precision, its own options at their defaults."""
    return build_runtime(REFERENCE.name, precision=REFERENCE_PRECISION, **settings)


def is_reference(runtime: Mapping[str, Any], backend: Optional[str] = None) -> bool:
    """Whether a runtime section (as data) or a run's runtime settings are the reference configuration: the
    reference runtime (or `backend`, where the family's reference is another, as a file's is) at fp32 with its own
    options at their defaults."""
    spec = SPECS.get(runtime.get("backend"))
    is_backend = spec is not None and (spec.name == backend if backend is not None else spec.reference)
    return bool(is_backend and runtime.get("precision") == REFERENCE_PRECISION and all(
        runtime.get(key, option.default) in (option.default, None) for key, option in spec.options.model_fields.items()))


def offering(precision: str) -> list[str]:
    """The runtimes that offer a precision, in registry order."""
    return [spec.name for spec in SPECS.values() if precision in spec.precisions]


def reading(suffix: str) -> list[RuntimeSpec]:
    """The runtimes that read an exported file of this kind (".onnx", ".xml") as the network, in registry order."""
    return [spec for spec in SPECS.values() if suffix in spec.file_kinds]


def keeping_modules() -> list[RuntimeSpec]:
    """The runtimes that run the torch modules themselves."""
    return [spec for spec in SPECS.values() if spec.keeps_modules]


def layer_reader(backend: str) -> Optional[Callable]:
    """How a runtime's profiling() pass becomes node runs; None for a runtime without its own profiler."""
    spec = SPECS[backend]
    return None if spec.layer_reader is None else _attribute(spec, spec.layer_reader)


def trace_reader(backend: str) -> Optional[Callable]:
    """How a runtime's profiling() of one batch becomes trace events; None for a runtime without a timeline."""
    spec = SPECS[backend]
    return None if spec.trace_reader is None else _attribute(spec, spec.trace_reader)
