"""The search `match` runs (utils/commands/match/search.py), over hand-written trials that score each recipe by a
rule written here: it goes depth by depth, stops at the first recipe that reproduces exactly, keeps within its
budget of preprocessings, builds pairs on the best single, and states the round cut a deployment would use."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import torch

from pipelines.contract import Detections
from pipelines.exported.recipe import Recipe
from utils.checks.agreement.matching import MatchCounts
from utils.commands.match.search import search
from utils.commands.match.theirs import Theirs
from utils.commands.match.trial import Outcome

ROOT = Path("/data")
EXACT, CLOSE, FAR = MatchCounts(10, 10, 10, 10), MatchCounts(10, 10, 9, 6), MatchCounts(10, 10, 4, 1)


class Trials:
    """What search asks of trial.py's Trials; `score(keys, decode)` says how a recipe matches, and every run is
    kept in `calls` as (the preprocess keys set, the decodes' cuts, how many changes)."""

    def __init__(self, score):
        self.score, self.calls = score, []
        scores = torch.tensor([0.5, 0.8])
        self.theirs = Theirs({ROOT / "a.jpg": Detections(torch.zeros(2, 4), scores, torch.zeros(2).long())},
                             Path("theirs.json"), "COCO results JSON")
        self.images = [(ROOT / "a.jpg", None)]
        self.postprocess = SimpleNamespace(iou_thres=0.45, agnostic=False, max_det=300)
        self.preprocess, self.forward = None, None
        self.network = SimpleNamespace(file="model.onnx")
        said = {"layout": "yolov5", "ground": "the exporter's", "postprocess": {"nms": True},
                "preprocess": {**Recipe().describe(), "img_size": 640}}  # a key that is no recipe step is left out
        pipeline = SimpleNamespace(recipe=lambda: said)
        self.family = SimpleNamespace(build_pipeline=lambda *parts: pipeline)

    def run(self, changes, decodes):
        keys = {key: value for change in changes for key, value in change.keys}
        self.calls.append((keys, sorted({decode.as_dict()["conf_thres"] for decode in decodes}), len(changes)))
        return [Outcome(changes, decode, self.score(keys, decode.as_dict()), ()) for decode in decodes]


def bgr_at_iou_06(keys, decode):
    if keys.get("channels") == "bgr":
        return EXACT if decode["iou_thres"] == 0.6 else CLOSE
    return FAR


def test_the_search_stops_at_the_first_exact_recipe_and_states_a_round_cut():
    trials = Trials(bgr_at_iou_06)
    text = search(trials, 60, ROOT)
    # The config's recipe, then the first single change (channels): exact, so no more; then the round cuts.
    assert [keys for keys, *_ in trials.calls] == [{}, {"channels": "bgr"}, {"channels": "bgr"}]
    assert trials.calls[0][1] == [0.49]  # just below their lowest score, 0.5
    assert trials.calls[2][1][-1] == 0.45 and max(trials.calls[2][1]) < 0.5
    head = text.splitlines()[0]
    assert head.startswith("match: your 2 detections on 1 image(s) (theirs.json, COCO results JSON); model.file "
                           "model.onnx, layout yolov5, its recipe the exporter's; 2 preprocessing(s) tried, each "
                           "with 10 postprocessing(s) at the cut 0.49")
    assert "reproduced: your 2 detections" in text
    assert "--set preprocess.channels=bgr --set postprocess.conf_thres=0.45 --set postprocess.iou_thres=0.6" in text


def test_the_budget_of_preprocessings_is_kept():
    trials = Trials(lambda keys, decode: FAR)
    text = search(trials, 3, ROOT)
    assert len(trials.calls) == 4  # three preprocessings, then the best at the round cuts
    assert "3 preprocessing(s) tried" in text and "not reproduced by any recipe tried" in text


def test_pairs_are_built_on_the_best_single_change():
    def pair(keys, decode):
        if keys.get("pad_value") == 0 and keys.get("resize") == "letterbox_corner":
            return EXACT
        return CLOSE if keys == {"resize": "letterbox_corner"} else FAR

    trials = Trials(pair)
    text = search(trials, 60, ROOT)
    depths = [depth for *_, depth in trials.calls[:-1]]
    pairs = [keys for keys, _, depth in trials.calls[:-1] if depth == 2]
    assert depths == sorted(depths) and depths[-1] == 2  # every single before any pair, no triple needed
    assert all(keys["resize"] == "letterbox_corner" for keys in pairs)  # on the single that matched best
    assert pairs[-1] == {"resize": "letterbox_corner", "pad_value": 0} and "reproduced:" in text


def test_with_no_round_cut_below_their_lowest_score_the_margins_cut_stands():
    trials = Trials(lambda keys, decode: EXACT)
    for found in trials.theirs.images.values():
        found.scores[:] = 0.0005  # no round cut lies below it
    text = search(trials, 60, ROOT)
    assert len(trials.calls) == 1 and "postprocess.conf_thres=0" in text
