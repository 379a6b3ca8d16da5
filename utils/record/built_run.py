"""What a run has built, handed by the composition root to the parts that read it after the passes (the checks)
and in place of them (the LoadGen test): the family and its network, the runtime and its forward, the pipeline,
the items (images or video frames) the checks may score, the labels, and the config's sections those parts read.

Plain frozen data: built once, after everything that can refuse the user's input. It holds sections, never the
whole config, which the composition root alone reads (utils/assembly/composition.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from datasets.item_batches import ItemBatches
from datasets.labels import GroundTruth
from pipelines.contract import DetectionPipeline, DetectorFamily, LoadedNetwork
from pipelines.runtimes.base import PreparedForward, Runtime
from utils.config.schema import (BenchmarkSection, CamerasSection, DatasetSection, ModelSection, PostprocessSection,
                                 PreprocessSection, RuntimeSection)


@dataclass(frozen=True)
class RunSections:
    """The config's sections the parts below the composition root read, as validated (utils/config/schema.py)."""

    dataset: DatasetSection
    model: ModelSection
    runtime: RuntimeSection
    preprocess: PreprocessSection
    postprocess: PostprocessSection
    benchmark: BenchmarkSection
    seed: int  # run.seed: the reference's random weights and the accuracy pass's bootstrap draw from it
    cameras: CamerasSection  # benchmark.scenario cameras reads it


@dataclass(frozen=True)
class BuiltRun:
    """The run as built: its network on its runtime, in the family's pipeline, and what the checks score."""

    sections: RunSections
    family: DetectorFamily
    network: LoadedNetwork
    runtime: Runtime
    forward: PreparedForward  # the runtime's prepared forward, which the accuracy pass builds its pipeline around
    pipeline: DetectionPipeline  # as deployed: the run's preprocess and postprocess
    scored: ItemBatches  # the images or frames the checks may score (never int8's calibration ones), in batches
    truth: Optional[GroundTruth]  # dataset.labels, one per item the run found; None without labels
