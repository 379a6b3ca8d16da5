"""A recipe tried against the application's detections: the network runs once per image for each preprocessing,
and every postprocessing is decoded from that one forward before the next (a runtime's output buffer holds until
then). Each is scored by utils/checks/agreement/matching.py's matcher: the application's boxes as the reference,
detbench's as the candidate, IoU 0.5 and the same class (loose), and IoU 0.9 with scores within 0.01 (strict)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from pipelines.contract import FORWARD_STAGE, Detections
from utils.checks.agreement.matching import MatchCounts, match_detections
from utils.commands.match.candidates import Change, Decode
from utils.commands.match.theirs import Theirs


@dataclass(frozen=True)
class Outcome:
    changes: tuple[Change, ...]
    decode: Decode
    counts: MatchCounts
    per_image: tuple[tuple[Path, MatchCounts], ...]

    @property
    def rank(self) -> tuple[float, float, int]:
        """Better first when sorted descending: loose F1, strict F1, fewer changes."""
        return (_f1(self.counts.loose_recall, self.counts.loose_precision),
                _f1(self.counts.strict_recall, self.counts.strict_precision), -len(self.changes))

    @property
    def reproduces(self) -> bool:
        return self.counts.loose_recall >= REPRODUCED and self.counts.loose_precision >= REPRODUCED

    @property
    def exact(self) -> bool:
        return self.reproduces and min(self.counts.strict_recall, self.counts.strict_precision) >= REPRODUCED


REPRODUCED = 0.99  # recall and precision at which a recipe reproduces the application's detections


def _f1(recall: float, precision: float) -> float:
    return 2 * recall * precision / (recall + precision) if recall + precision else 0.0


@dataclass
class Trials:
    """What every trial shares: the family, the loaded network and its forward, the config's sections, the
    images (decoded once) and the application's detections."""

    family: Any
    network: Any
    forward: Any
    preprocess: Any  # the config's preprocess section, as resolved
    postprocess: Any
    images: Sequence[tuple[Path, np.ndarray]]
    theirs: Theirs
    advance: Callable[[int], None] = lambda images: None  # the progress bar, by images forwarded

    def run(self, changes: tuple[Change, ...], decodes: Sequence[Decode]) -> list[Outcome]:
        """Every decode of one preprocessing, from one forward per image."""
        preprocess = self.preprocess.model_copy(update={key: value for change in changes for key, value in
                                                        change.keys})
        pipelines = [self.family.build_pipeline(self.network, self.forward, preprocess,
                                                self.postprocess.model_copy(update=decode.as_dict()))
                     for decode in decodes]
        stages = pipelines[0].stages()
        forward_at = [stage.name for stage in stages].index(FORWARD_STAGE) + 1
        counts = [[] for _ in decodes]
        for path, image in self.images:
            value: Any = [image]
            for stage in stages[:forward_at]:
                value = stage.run(value)
            for found, pipeline in zip(counts, pipelines):
                ours = value
                for stage in pipeline.stages()[forward_at:]:
                    ours = stage.run(ours)
                found.append((path, match_detections(self.theirs.images[path], _plain(ours[0]))))
            self.advance(1)
        return [Outcome(changes, decode, sum((count for _, count in image_counts), MatchCounts()),
                        tuple(image_counts)) for decode, image_counts in zip(decodes, counts)]


def _plain(found: Detections) -> Detections:
    return Detections(found.boxes.float(), found.scores.float(), found.labels.long())
