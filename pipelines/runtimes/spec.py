"""What a runtime states about itself, in its folder's light `spec.py`: read by the config schema and the
harness without importing the runtime's library (torch, ONNX Runtime, OpenVINO take seconds to import).

Its session, layer reader and trace reader are named "module:attribute" inside its folder and imported only
when a run uses them (registry.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

from pydantic import BaseModel


class RuntimeOptions(BaseModel):
    """A runtime's own keys of the config's runtime section (none by default). They sit beside the common
    keys (runtime.backend, runtime.threads, ...), so each name must be new there; a key set away from its
    runtime is refused."""


def quantizes(precision: str) -> bool:
    """Whether the precision runs an int8 quantization of the network (`int8`, or `int8+bf16`: its layers left in
    float at bf16)."""
    return precision.split("+")[0] == "int8"


@dataclass(frozen=True)
class RuntimeSpec:
    name: str  # the value of runtime.backend, and the runtime's folder
    precisions: tuple[str, ...]  # what runtime.precision may be; the session checks what the CPU supports
    # "module:Class" of its Runtime, built as Class(base.RuntimeSettings, an instance of `options`).
    session: str
    # The Python package its session imports: whether the runtime is installed, asked without importing it.
    library: Optional[str] = None
    options: type[RuntimeOptions] = RuntimeOptions
    caches: bool = False  # keeps its exports and compiled models in runtime.cache_dir
    refusals: Mapping[str, str] = field(default_factory=dict)  # precision -> why it is not offered (yet)
    # At fp32 with every option at its default it is the reference other runs are checked against.
    reference: bool = False
    keeps_modules: bool = False  # runs the torch modules themselves, so hooks and parts of the forward see them
    file_kinds: tuple[str, ...] = ()  # suffixes of exported files it reads as the network (model.file), its own first
    # It runs only files given as model.file: it has no exporter for a network built in torch.
    files_only: bool = False
    # Operators a file may end in that it has no kernel for; where the family can do one's work (a GraphTail), it
    # runs the graph up to that operator's inputs instead.
    lacks_operators: tuple[str, ...] = ()
    layer_reader: Optional[str] = None  # "module:function": its profiling() pass -> NodeRuns
    # Why it has no per-layer timing, where it has no layer_reader and runs no torch module hooks could see.
    no_layer_timing: str = ""
    trace_reader: Optional[str] = None  # "module:function": its profiling() of one batch -> NativeTrace
    preparing: Optional[str] = None  # what the console adds while it prepares, when that takes a while
    # Below the layer: how its native code shows in sampled stacks, whose log lines are its, and what it can
    # say of the kernels that ran.
    native: Optional["NativeCode"] = None
    log_sources: tuple[str, ...] = ()  # top-level logger (package) names of its library and its quantizer
    kernels: "KernelSource" = field(default_factory=lambda: KernelSource(
        "unavailable", reason="the runtime names no kernels"))


@dataclass(frozen=True)
class NativeCode:
    """A runtime's native code in py-spy's stacks (utils/measure/below_layer/native_time.py): the category its frames count
    for, its title, a regular expression matching its libraries' file names, and the library that stands for
    the kernels it generates at run time (anonymous executable memory py-spy cannot name)."""

    category: str
    title: str
    libraries: str
    jit_library: str


@dataclass(frozen=True)
class KernelSource:
    """What a run can say of the kernels the runtime ran (summary.json `kernels`): `status` measured, partial or
    unavailable, with where the names come from or why there are none. `from_layers`: its own layer rows name
    them (OpenVINO's exec types); `onednn_verbose`: one extra batch with oneDNN's verbose output names each
    convolution's (torch modules)."""

    status: str
    source: str = ""
    reason: str = ""
    from_layers: bool = False
    onednn_verbose: bool = False
