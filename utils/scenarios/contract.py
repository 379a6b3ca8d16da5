"""What every scenario is to the composition root: a folder of utils/scenarios/ behind this one contract, found
by its name in registry.py. The root builds the run (the dataset, the pipeline and its runtime, the recorders,
the writers) and asks the scenario for the rest; it names no scenario.

A scenario gets the config's typed sections (RunSections, the ones every part below the root reads), checks
them at start-up and turns them into its own settings (`prepare`: a refusal there is exit status 2 before
anything is loaded); then, once the run is built, the pass plan, the pass context (the runner and its recorders,
the record, the detections writer, the progress bar, the console), the run as built (its pipeline and runtime,
its labels) and its settings (ScenarioRun). It runs its passes into the record.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from datasets.image_folder import DatasetBatches
from utils.record.built_run import BuiltRun, RunSections
from utils.record.steps import PIPELINE_STEP
from utils.scenarios.context import PassContext
from utils.scenarios.input_shapes import WarmupChoice
from utils.scenarios.pass_plan import PassPlan


@dataclass(frozen=True)
class FoundImages:
    """The run's images as found at start-up, before anything is loaded: their paths (none for a scenario that
    reads its own sources) and the bytes each holds decoded (from its header; skipped ones left out)."""

    paths: list[Path]
    image_bytes: list[int]


@dataclass(frozen=True)
class RunImages:
    """The run's images, for the scenarios that read them (Scenario.reads_images): the dataset in batches, each
    file's header size (None where skipped), the input shape each batch makes, the bytes each decoded image holds,
    and the warm-up chosen. Empty for a scenario that reads its own sources."""

    dataset: DatasetBatches
    sizes: list
    input_shapes: list
    image_bytes: list
    warmup: WarmupChoice


@dataclass(frozen=True)
class ScenarioRun:
    """What a scenario's passes run with; `settings` is what its `prepare` returned."""

    plan: PassPlan
    context: PassContext
    built: BuiltRun  # its sections, pipeline, runtime and labels
    images: RunImages
    run_dir: Path
    settings: Any


class Scenario(ABC):
    # Whether the run's images (dataset.path, a folder of images) feed its passes, the checks after them (the
    # reference, agreement, accuracy) and int8 calibration; a scenario that reads its own sources does without.
    reads_images: bool = True
    # What the CPU counters bracket: each batch (PIPELINE_STEP), or the whole timed pass (RUN_STEP) where batches
    # of several threads overlap.
    counters_around: str = PIPELINE_STEP
    # Whether profiling.kernels may run its extra batch of the first images after the passes.
    kernels_batch: bool = False
    # The config sections only a scenario reads: one set by the user that this scenario does not read is noted.
    reads_sections: frozenset[str] = frozenset()

    @abstractmethod
    def prepare(self, sections: RunSections, images: FoundImages) -> Any:
        """The scenario's own settings, its refusals raised here (a UsageError: exit status 2)."""

    @abstractmethod
    def run(self, run: ScenarioRun) -> None:
        """Runs its passes into run.context.record."""

    def items_root(self, sections: RunSections) -> Path:
        """What detections.csv names an item relative to."""
        return Path(sections.dataset.path)

    def notes(self, sections: RunSections) -> list[str]:
        """What a reader of this run's results needs to know of how the scenario read the config."""
        return []
