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
from typing import Any, Optional

from datasets.item_batches import Item, ItemBatches
from utils.record.built_run import BuiltRun, RunSections
from utils.record.steps import PIPELINE_STEP
from utils.scenarios.context import PassContext
from utils.scenarios.input_shapes import WarmupChoice
from utils.scenarios.pass_plan import PassPlan


@dataclass(frozen=True)
class FoundImages:
    """The run's items as found at start-up, before anything is loaded: image paths or video frames (none for a
    scenario that reads its own sources), the bytes each holds decoded (from its header or its video's; skipped
    ones left out), and the folder outputs name them relative to."""

    items: list[Item]
    image_bytes: list[int]
    root: Path


@dataclass(frozen=True)
class RunImages:
    """The run's items, for the scenarios that read them (Scenario.reads_images): the dataset in batches (image
    files, or video frames), each item's size (None where skipped), the input shape each batch makes, the bytes each
    decoded item holds, and the warm-up chosen. Empty for a scenario that reads its own sources."""

    dataset: ItemBatches
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
    # Whether the run's items (dataset.path: a folder of images, or video frames) feed its passes, the checks after
    # them (the reference, agreement, accuracy) and int8 calibration; a scenario that reads its own sources does
    # without.
    reads_images: bool = True
    # What its timed batches are fetched through when not the dataset's own fetch (load, decode_frames): LoadGen's
    # queries take samples it holds decoded in memory.
    timed_fetch_step: Optional[str] = None
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

    def items_root(self, found: FoundImages) -> Path:
        """What detections.csv names an item relative to."""
        return found.root

    def notes(self, sections: RunSections) -> list[str]:
        """What a reader of this run's results needs to know of how the scenario read the config."""
        return []
