"""A recipe tried against the application's detections (utils/commands/match/trial.py): an outcome's rank and
verdicts, and Trials.run over a hand-written family whose forward counts its calls, so that every decode is seen
to come from one forward per image, each scored against the application's boxes."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch

from pipelines.contract import FORWARD_STAGE, Detections
from utils.checks.agreement.matching import MatchCounts
from utils.commands.match.candidates import Change, Decode
from utils.commands.match.theirs import Theirs
from utils.commands.match.trial import REPRODUCED, Outcome, Trials
from utils.config.schema import config_for

BGR = Change("channels", (("channels", "bgr"),))


def found(*rows) -> Detections:
    """Rows of (x1, y1, x2, y2, score, label)."""
    table = torch.tensor(rows, dtype=torch.float64).reshape(-1, 6)
    return Detections(table[:, :4], table[:, 4], table[:, 5].long())


def outcome(counts: MatchCounts, changes=()) -> Outcome:
    return Outcome(tuple(changes), Decode((("conf_thres", 0.1),)), counts, ())


def test_the_rank_puts_loose_then_strict_f1_then_fewer_changes_first():
    best, stricter, simpler = (outcome(MatchCounts(10, 10, 10, 5)), outcome(MatchCounts(10, 10, 10, 8), [BGR]),
                               outcome(MatchCounts(10, 10, 10, 8)))
    worse = outcome(MatchCounts(10, 10, 9, 9))
    assert sorted([worse, best, stricter, simpler], key=lambda o: o.rank, reverse=True) == [simpler, stricter, best,
                                                                                           worse]
    assert simpler.rank == (1.0, pytest.approx(0.8), 0) and stricter.rank[2] == -1
    assert outcome(MatchCounts(1, 1, 0, 0)).rank[:2] == (0.0, 0.0)  # no match: an F1 of 0, not a division by 0


def test_reproducing_needs_loose_recall_and_precision_and_exact_the_strict_too():
    assert REPRODUCED == 0.99
    assert outcome(MatchCounts(100, 100, 99, 99)).exact
    loose_only = outcome(MatchCounts(100, 100, 99, 50))
    assert loose_only.reproduces and not loose_only.exact
    assert not outcome(MatchCounts(100, 102, 99, 99)).reproduces  # precision 0.97: two extra boxes of detbench's


@dataclass
class Stage:
    name: str
    run: Callable[[Any], Any]


class Family:
    """The network's raw boxes are each image's ANSWER; the postprocess keeps those at or above its cut."""

    def __init__(self):
        self.forwards, self.built = 0, []

    def forward(self, batch):
        self.forwards += 1
        return ANSWER[int(batch[0][0, 0, 0])]  # each image is filled with its index

    def build_pipeline(self, network, forward, preprocess, postprocess):
        self.built.append((preprocess, postprocess))
        cut = postprocess.conf_thres

        def post(raw: Detections):
            keep = raw.scores >= cut
            return [Detections(raw.boxes[keep], raw.scores[keep], raw.labels[keep])]

        return type("Pipeline", (), {"stages": lambda _: [Stage("load", lambda images: images),
                                                          Stage(FORWARD_STAGE, self.forward),
                                                          Stage("postprocess", post)]})()


THEIRS = {0: found((0, 0, 10, 10, 0.9, 0)), 1: found((20, 20, 30, 30, 0.5, 1))}
# Image 0: their box and one more of detbench's at 0.3 (below their lowest score, 0.5); image 1: theirs alone.
ANSWER = {0: found((0, 0, 10, 10, 0.9, 0), (50, 50, 60, 60, 0.3, 0)), 1: found((20, 20, 30, 30, 0.5, 1))}


def trials(family: Family, advanced: list) -> Trials:
    config = config_for("yolov7-tiny")
    paths = [Path(f"/data/{index}.jpg") for index in THEIRS]
    images = [(path, np.full((4, 4, 3), index, np.uint8)) for index, path in enumerate(paths)]
    theirs = Theirs({path: THEIRS[index] for index, path in enumerate(paths)}, Path("theirs.csv"), "CSV")
    return Trials(family, None, None, config.preprocess, config.postprocess, images, theirs, advanced.append)


def test_every_decode_comes_from_one_forward_per_image_and_is_scored_against_theirs():
    family, advanced = Family(), []
    low, high = Decode((("conf_thres", 0.2),)), Decode((("conf_thres", 0.4), ("max_det", 5)))
    loose, tight = trials(family, advanced).run((BGR,), [low, high])
    assert family.forwards == 2 and advanced == [1, 1]
    assert (loose.changes, loose.decode, tight.decode) == ((BGR,), low, high)
    # The low cut keeps detbench's extra box: 2 of 3 candidates match; the high one matches exactly.
    assert (loose.counts.reference, loose.counts.candidate, loose.counts.loose, loose.counts.strict) == (2, 3, 2, 2)
    assert tight.counts.loose_precision == 1.0 and tight.exact and not loose.reproduces
    assert [(path.name, counts.candidate) for path, counts in loose.per_image] == [("0.jpg", 2), ("1.jpg", 1)]


def test_the_changes_and_the_decode_reach_the_pipelines_the_family_builds():
    family = Family()
    trials(family, []).run((BGR,), [Decode((("conf_thres", 0.2), ("max_det", 7)))])
    (preprocess, postprocess), = family.built
    assert preprocess.channels == "bgr" and (postprocess.conf_thres, postprocess.max_det) == (0.2, 7)
