"""The int8 calibration inputs: the first `runtime.calibration.images` of the items given (images, or video
frames) through the run's own preprocessing, handed to the runtime as network inputs
(pipelines.runtimes.quantization.Calibration)."""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from datasets.item_batches import Item, ItemBatches
from datasets.sources.identity import FrameRef
from pipelines.cache_keys import file_digest, parts_digest
from pipelines.contract import FORWARD_STAGE, DetectorFamily, LoadedNetwork
from pipelines.runtimes.base import PreparedForward
from pipelines.runtimes.onnx_export import as_input
from pipelines.runtimes.quantization import Calibration
from utils.config.schema import CalibrationSection, PostprocessSection, PreprocessSection
from utils.measure.steps.timed_batch import batch_loop, untimed


def calibration_inputs(family: DetectorFamily, network: LoadedNetwork, preprocess: PreprocessSection,
                       postprocess: PostprocessSection, images: ItemBatches, settings: CalibrationSection,
                       ) -> Calibration:
    """`settings`: runtime.calibration: how many of `images` calibrate, the layers kept in float, and how the
    quantizer reads ranges and corrects biases (its preset, range and bias_correction)."""
    chosen = images.of(images.items[:settings.images], 1)
    digest_of = functools.lru_cache(maxsize=None)(file_digest)  # a video's frames share its one digest
    digest = parts_digest({"images": ",".join(item_digest(item, digest_of) for item in chosen.items),
                           "preprocess": json.dumps(preprocess.model_dump(mode="json"), sort_keys=True)})

    def inputs() -> Iterator[np.ndarray]:
        # The pipeline's stages up to its forward, with a forward that only keeps what it is given: the
        # network input exactly as the timed passes build it.
        seen: list[Any] = []
        pipeline = family.build_pipeline(network, PreparedForward(lambda batch, *extra: seen.append((batch, extra)),
                                                                  None), preprocess, postprocess)
        stages = pipeline.stages()
        upto = [stage.name for stage in stages].index(FORWARD_STAGE) + 1
        for result in batch_loop(iter(chosen), range(len(chosen)), untimed(stages[:upto])):
            if result.valid:
                batch, extra = seen.pop()
                # A file's further inputs (original sizes) go with its image, as its timed passes feed them.
                yield (as_input(batch), dict(extra[0])) if extra else as_input(batch)

    method = tuple((key, getattr(settings, key)) for key in ("preset", "range", "bias_correction"))
    return Calibration(inputs, len(chosen.items), digest, tuple(settings.keep_float), method)


def item_digest(item: Item, digest_of: Callable[[Path], str] = file_digest) -> str:
    """What an item adds to the calibration's digest: an image's file digest, a frame's video digest and index."""
    if isinstance(item, FrameRef):
        return f"{digest_of(item.video)}@{item.index}"
    return digest_of(item)
