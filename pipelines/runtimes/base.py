"""The runtime seam: the one place that prepares a network and runs its forward.

A runtime takes the loaded network and an example input and returns a `PreparedForward`: a callable from the input
batch tensor to the network's raw output, plus the torch module behind it when hooks can see one. `settings()`
reports what the runtime really uses (threads, precision, ...), for env.json and summary.json.

`Runtime` declares every capability a runtime may have, each with one signature; a new runtime (a folder with a
spec.py and a session, pipelines/runtimes/registry.py) learns from this file alone what it must provide.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

import torch
from torch import nn

from pipelines.contract import LoadedNetwork
from utils.core.bounded_text import clipped
from utils.core.errors import UsageError


class RuntimeNotSupported(UsageError):
    """A runtime setting this machine or this runtime cannot do; the message says what to use instead."""


@dataclass
class Feeding:
    """What a runtime fed a user's file first, beside the input shape its graph declares (a size it leaves free:
    None), so that a failure is blamed on the right party."""

    shape: Optional[tuple[int, ...]] = None
    declared: Optional[tuple[Optional[int], ...]] = None

    def fed(self, shape: Sequence[int], declared: Sequence[Any]) -> None:
        self.shape = tuple(int(size) for size in shape)
        self.declared = tuple(size if isinstance(size, int) and size > 0 else None for size in declared)

    def misfit(self) -> Optional[str]:
        """How the shape fed differs from the one the graph declares; None where it fits (or nothing was fed)."""
        if self.shape is None or self.declared is None:
            return None
        if len(self.shape) != len(self.declared) or any(
                size is not None and size != given for size, given in zip(self.declared, self.shape)):
            shown = [size if size is not None else "free" for size in self.declared]
            return f"fed an input of shape {list(self.shape)} to a graph that takes {shown}"
        return None


@contextmanager
def a_file_it_may_refuse(network: LoadedNetwork, runtime: str) -> Iterator[Feeding]:
    """Loading and first running a user's file (model.file): what the runtime refuses there (an opset it lacks, an
    operator of a custom domain) is the file's fault, not a bug, so it ends as RuntimeNotSupported naming the
    file, the runtime and its reason, in one bounded line. Where detbench fed the graph a shape it does not
    declare (the yielded Feeding says what was fed), the fault is detbench's: a bug, raised as one. A network
    detbench exported itself is left to raise."""
    feeding = Feeding()
    try:
        yield feeding
    except RuntimeNotSupported:
        raise
    except Exception as error:
        if network.file is None:
            raise
        reason = clipped(" ".join(str(error).split()), 300)
        misfit = feeding.misfit()
        if misfit is not None:
            raise RuntimeError(f"detbench {misfit} (model.file {network.file}, {runtime}: {reason}): the file is "
                               "not at fault; this is a bug in detbench, please report it") from error
        if feeding.shape is not None:
            raise RuntimeNotSupported(
                f"model.file {network.file}: {runtime} loaded it but cannot run it on an input of shape "
                f"{list(feeding.shape)}, which its graph takes ({type(error).__name__}: {reason}); the graph fails "
                "on this runtime: use another runtime.backend, or export it again") from None
        raise RuntimeNotSupported(f"model.file {network.file}: {runtime} cannot run it ({type(error).__name__}: "
                                  f"{reason}); export it again with operators and an opset it has, or use another "
                                  "runtime.backend") from None


def in_the_networks_layout(example: torch.Tensor, network: LoadedNetwork) -> torch.Tensor:
    """An NCHW example (a family's example_input) in the layout the network's input takes: (batch, height, width, 3)
    for a channels-last file, as its pipeline hands batches over."""
    return example.permute(0, 2, 3, 1).contiguous() if network.channels_last and example.dim() == 4 else example


def stored_precision(network: LoadedNetwork) -> Optional[dict[str, Any]]:
    """What a file runs as it is stored, for summary.json `runtime`: its weights' element type and its input's (with
    an integer input's scale and zero point); None for a network detbench exported, or a file that says nothing."""
    description = network.description
    if network.file is None or "weights_stored_as" not in description:
        return None
    image = description.get("inputs", [[]])[0]
    facts = {"weights": description["weights_stored_as"], "input": image[2] if len(image) > 2 else None,
             "why": "a TFLite file runs as it is stored: runtime.precision fp32 is the file's own precision"}
    if len(image) > 3:
        facts["input_quantization"] = {"scale": image[3][0], "zero_point": image[3][1]}
    return facts


def at_the_graphs_shape(example: torch.Tensor, declared: Sequence[Any], channels_last: bool = False) -> torch.Tensor:
    """The example input at a graph's fixed sizes: its batch repeated to a fixed batch (a static export of batch 4
    takes nothing else), and zeros of the graph's own height and width where it fixes them (a static 800x608
    export takes no square); `channels_last`: both in (batch, height, width, 3). The example's values never
    matter, only its shape and element type."""
    fixed = [size if isinstance(size, int) and size > 0 else None for size in declared]
    spatial = (1, 2) if channels_last else (2, 3)
    if len(fixed) == example.dim() == 4 and any(fixed[axis] not in (None, example.shape[axis]) for axis in spatial):
        shape = list(example.shape)
        for axis in spatial:
            shape[axis] = fixed[axis] or shape[axis]
        example = example.new_zeros(shape)
    batch = fixed[0] if fixed else None
    if batch is not None and batch != example.shape[0]:
        return example[:1].expand(batch, *example.shape[1:]).contiguous()
    return example


@dataclass
class PreparedForward:
    run: Callable[[torch.Tensor], Any]
    module: Optional[nn.Module]  # what per-layer hooks may attach to; None for runtimes outside torch
    # torch.uint8: the runtime takes the pixel values themselves, in the float input's layout, and divides them
    # by the network's pixel_scale inside its own graph; the pipeline's preprocessing then stops before converting.
    input_dtype: torch.dtype = torch.float32

    def __call__(self, batch: torch.Tensor, *extra: Any) -> Any:
        """`extra`: further arguments of the network's forward (R-CNN's image sizes); torch runtimes only.
        The output may be the runtime's own buffer (OpenVINO's, not copied): it holds until the calling thread's
        next forward, and whoever keeps it longer copies it. A network with several outputs (a file's) returns
        them as a tuple, in the graph's order."""
        return self.run(batch, *extra)


@dataclass(frozen=True)
class RuntimeSettings:
    """What every runtime is built with: the config's common runtime keys (and model.fuse), the cache of runtimes
    that export, and int8's calibration. A runtime's own keys travel apart, as its spec's options model."""

    precision: str = "fp32"  # one of its spec's precisions
    threads: Optional[int] = None  # None: the library's default
    fuse: bool = True
    streams: Union[int, str] = 1  # a count, or "auto" for the runtime's own choice
    pinning: bool = False
    cache_dir: Union[Path, str, None] = None  # exports and compiled models (a temporary folder when None)
    calibration: Any = None  # a quantization.Calibration, at int8 only


class Runtime(ABC):
    """What runs a network's forward.

    Built by the registry (its spec's `session`) as `Session(settings, options)`: a RuntimeSettings and an instance
    of its spec's options model (spec.options, defaults filled, not validated: the config validated them, and the
    session refuses what it cannot do). A setting it cannot do raises RuntimeNotSupported, in the constructor or
    in prepare().
    """

    name: str  # runtime.backend
    # Requests in flight at once once prepared, "auto" resolved; with "auto" asked, `streams_auto` says what was
    # chosen and why ({"asked", "resolved", "why"}; concurrency.auto_choice), else None.
    streams: int = 1
    streams_auto: Optional[dict[str, Any]] = None

    @abstractmethod
    def prepare(self, network: LoadedNetwork, example: torch.Tensor) -> PreparedForward:
        """`example` is an input batch of the run's shape (exporters trace with it; dynamic axes keep the
        batch size and the spatial size free). A network given as a file (network.file) is read, not exported."""

    @abstractmethod
    def settings(self) -> dict[str, Any]:
        """What the runtime actually uses, read back after prepare(); `streams_auto` among it."""

    def profiling(self, output_dir: Union[Path, str, None] = None) -> AbstractContextManager[Any]:
        """A context in which forwards run under the runtime's own profiler; on exit the object it yielded holds
        the profile, which the spec's layer_reader and trace_reader read. `output_dir`: where a profiler that
        writes files puts them (a temporary folder by default). A spec naming a layer or trace reader must
        provide this; the default says the runtime has none."""
        raise RuntimeNotSupported(f"runtime.backend {self.name} has no profiler of its own")

    def close(self) -> None:
        """Gives back what the runtime changed in the process and what outlives it there (the cores it pinned
        threads to), so that a next run in the same process starts as the first did. Called once its last forward
        ran; settings() still reads back what it did. A runtime that changes nothing process-wide keeps this."""

    def peer_defaults(self) -> Optional[dict[str, Any]]:
        """What the runtime picks by itself on this CPU when given no settings (precision, streams, threads), for
        comparing with a peer tool that runs it that way; None where that is what detbench runs anyway."""
        return None
