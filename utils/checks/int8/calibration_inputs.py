"""The int8 calibration inputs: the run's first `runtime.calibration.images` images through the run's own
preprocessing, handed to the runtime as network inputs (pipelines.runtimes.quantization.Calibration)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

import numpy as np

from pipelines.cache_keys import file_digest, parts_digest
from pipelines.contract import FORWARD_STAGE, DetectorFamily, LoadedNetwork
from pipelines.runtimes.base import PreparedForward
from pipelines.runtimes.onnx_export import as_input
from pipelines.runtimes.quantization import Calibration
from utils.config.schema import CalibrationSection, PostprocessSection, PreprocessSection
from utils.measure.steps.timed_batch import batch_loop, decoded_batches, untimed


def calibration_inputs(family: DetectorFamily, network: LoadedNetwork, preprocess: PreprocessSection,
                       postprocess: PostprocessSection, paths: Sequence[Path], settings: CalibrationSection,
                       max_pixels: Optional[int] = None) -> Calibration:
    """`settings`: runtime.calibration: how many of `paths` calibrate, the layers kept in float, and how the
    quantizer reads ranges and corrects biases (its preset, range and bias_correction)."""
    chosen = list(paths[:settings.images])
    digest = parts_digest({"images": ",".join(file_digest(path) for path in chosen),
                           "preprocess": json.dumps(preprocess.model_dump(mode="json"), sort_keys=True)})

    def inputs() -> Iterator[np.ndarray]:
        # The pipeline's stages up to its forward, with a forward that only keeps what it is given: the
        # network input exactly as the timed passes build it.
        seen: list[Any] = []
        pipeline = family.build_pipeline(network, PreparedForward(lambda batch, *extra: seen.append((batch, extra)),
                                                                  None), preprocess, postprocess)
        stages = pipeline.stages()
        upto = [stage.name for stage in stages].index(FORWARD_STAGE) + 1
        for result in batch_loop(decoded_batches(chosen, 1, max_pixels), range(len(chosen)), untimed(stages[:upto])):
            if result.valid:
                batch, extra = seen.pop()
                # A file's further inputs (original sizes) go with its image, as its timed passes feed them.
                yield (as_input(batch), dict(extra[0])) if extra else as_input(batch)

    method = tuple((key, getattr(settings, key)) for key in ("preset", "range", "bias_correction"))
    return Calibration(inputs, len(chosen), digest, tuple(settings.keep_float), method)
