"""The judge that chooses what int8 returns to float (pipelines/runtimes/int8_repair.py): the run's own pipeline
at mAP settings over the calibration images, which the run's verdict never scores.

Its figure is the verdict's own, the mAP@0.5:0.95 drop from the float model: against the labels where the
calibration images have them, otherwise against the float model's detections on mirror views of them (the
label-free stand-in, utils.checks.accuracy.label_free). It chooses; the run's verdict, on other images, judges.
"""
from __future__ import annotations

import platform
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import torch

from datasets.item_batches import ItemBatches
from pipelines.cache_keys import parts_digest
from pipelines.contract import DetectorFamily, LoadedNetwork
from pipelines.runtimes.base import PreparedForward
from pipelines.runtimes.int8_contract import AccuracyControl, RawForward
from pipelines.runtimes.onnx_export import as_input
from pipelines.runtimes.quantization import Calibration
from utils.config.schema import PostprocessSection, PreprocessSection
from utils.measure.steps.timed_batch import untimed
from utils.measure.below_layer.kernels import cpu_flags
from utils.checks.accuracy.label_free import (JUDGE_VIEWS, JudgeView, Resampling, drop_over_views, from_view,
                                              pseudo_labels, view_image)

# Enough images for a drop read to a few hundredths, few enough to decode once and keep.
MAX_SELECTION_IMAGES = 64
TIMED_INPUTS = 4  # network inputs each forward is timed on
LABELLED = "mAP@0.5:0.95 drop against the labels"
MIRRORED = "mAP@0.5:0.95 drop against the float model's detections on {views} mirror view(s)"
OWN = "mAP@0.5:0.95 drop against the float model's own detections"


@dataclass(frozen=True)
class JudgingPipeline:
    """How the judge detects: the run's family and network with its preprocess settings and the mAP settings'
    postprocess; `conf_thres`, the deployed cut, makes pseudo-labels of the float model's detections."""

    family: DetectorFamily
    network: LoadedNetwork
    preprocess: PreprocessSection
    map_postprocess: PostprocessSection
    conf_thres: float


class SelectionJudge:
    """`images`: the calibration images or frames; `truths`: their labels, in their order (None: the float model's
    detections on `judge_views` mirror views stand in; on the images themselves with 0 views)."""

    def __init__(self, judging: JudgingPipeline, images: ItemBatches, truths: Optional[Sequence[Any]] = None,
                 judge_views: int = len(JUDGE_VIEWS)):
        self.family, self.network = judging.family, judging.network
        self.preprocess, self.postprocess, self.conf_thres = (judging.preprocess, judging.map_postprocess,
                                                              judging.conf_thres)
        decoded = [(index, sample.image) for index, batch in
                   enumerate(images.of(images.items[:MAX_SELECTION_IMAGES], 1))
                   for sample in batch if sample.image is not None]
        self.images = [image for _, image in decoded]
        self._labels = [truths[index] for index, _ in decoded] if truths is not None else None
        self.views = JUDGE_VIEWS[:judge_views]
        self.figure = (LABELLED if truths is not None else MIRRORED.format(views=len(self.views)) if self.views
                       else OWN)
        self._truths: list[list] = []
        self._reference: list = []

    def detections(self, forward: RawForward, first: Optional[int] = None,
                   view: Optional[JudgeView] = None) -> list:
        pipeline = self.family.build_pipeline(self.network, PreparedForward(_torch_forward(forward), None),
                                              self.preprocess, self.postprocess)
        run = untimed(pipeline.stages())
        if view is None:
            return [run([image])[0] for image in self.images[:first]]
        return [from_view(run([view_image(image, view)])[0], view, *image.shape[:2]) for image in self.images[:first]]

    def reference(self, forward: RawForward) -> None:
        self._reference = self.detections(forward)
        if self._labels is not None:
            self._truths = [list(self._labels)]
        elif self.views:
            self._truths = [pseudo_labels(self.detections(forward, view=view), self.conf_thres) for view in self.views]
        else:
            self._truths = [pseudo_labels(self._reference, self.conf_thres)]

    def drop(self, forward: RawForward, first: Optional[int] = None) -> Optional[float]:
        """The drop from the float model's mAP; None where there is no object to find (nothing to compare).
        Ranking (`first` images) reads the first stand-in alone: it compares operations, not the budget."""
        truths = [view[:first] for view in (self._truths if first is None else self._truths[:1])]
        if not all(sum(len(truth.labels) for truth in view) for view in truths):
            return None
        found = self.detections(forward, first)
        return drop_over_views(truths, self._reference[:first], found, resampling=Resampling(resamples=0)).estimate


def accuracy_control(judge: SelectionJudge, budget: float, calibration: Calibration,
                     evaluations: int) -> AccuracyControl:
    """The control handed to the runtime's quantizer, keyed by everything that decides its choice. The judge's
    images are the calibration's first ones: their network inputs (for timing) and their digest are its."""
    settings = {"budget": str(budget), "evaluations": str(evaluations), "figure": judge.figure,
                "conf_thres": str(judge.conf_thres),
                "postprocess": judge.postprocess.model_dump_json(),
                "images": calibration.digest,
                "cpu": ",".join(sorted(_instruction_sets())), "machine": platform.machine()}
    return AccuracyControl(reference=judge.reference, drop=judge.drop,
                           inputs=lambda: list(islice(calibration.inputs(), TIMED_INPUTS)), budget=budget,
                           images=len(judge.images), figure=judge.figure, digest=parts_digest(settings),
                           evaluations=evaluations)


def _instruction_sets() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    return {flag for flag in cpu_flags(text) if flag.startswith(("avx", "amx", "sse", "fma", "vnni"))}


def _torch_forward(forward: RawForward):
    def run(batch: torch.Tensor, *extra: Any) -> Any:
        output = forward((as_input(batch), dict(extra[0])) if extra else as_input(batch))
        if isinstance(output, tuple):
            return tuple(torch.from_numpy(np.ascontiguousarray(value)) for value in output)
        return torch.from_numpy(np.ascontiguousarray(output))

    return run
