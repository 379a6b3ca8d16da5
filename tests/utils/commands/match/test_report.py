"""What `match` prints (utils/commands/match/report.py), from hand-made outcomes: the keys a recipe sets, as --set
flags and as a config fragment that reads back, the table of recipes tried, and the answer reproduced or not with
where the closest still differs, worst image first."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import torch
import yaml

from pipelines.contract import Detections
from utils.checks.agreement.matching import MatchCounts
from utils.commands.match.candidates import Change, Decode
from utils.commands.match.report import SHOWN_IMAGES, answer, changes_of, differences, flags, fragment, table
from utils.commands.match.theirs import Theirs
from utils.commands.match.trial import Outcome

ROOT = Path("/data")
CONFIG_POST = SimpleNamespace(conf_thres=0.25, iou_thres=0.45, agnostic=False, max_det=300)
BGR = Change("channels", (("channels", "bgr"),))
IMAGENET = Change("normalisation", (("scale", 255.0), ("mean", (0.485, 0.456, 0.406)), ("std", (0.229, 0.224, 0.225))))


def decode(**keys) -> Decode:
    return Decode(tuple({"conf_thres": 0.19, "iou_thres": 0.45, "agnostic": False, "max_det": 300, **keys}.items()))


def outcome(changes=(), counts=MatchCounts(10, 10, 10, 10), per_image=(), **keys) -> Outcome:
    return Outcome(tuple(changes), decode(**keys), counts, tuple(per_image))


def theirs(count: int = 10) -> Theirs:
    found = Detections(torch.zeros(count, 4), torch.ones(count), torch.zeros(count, dtype=torch.int64))
    return Theirs({ROOT / "a.jpg": found}, Path("theirs.json"), "COCO results JSON")


def test_the_keys_set_are_every_change_the_decodes_differences_and_always_the_cut():
    keys = changes_of(outcome([BGR, IMAGENET], iou_thres=0.6), CONFIG_POST)
    assert keys == {"preprocess": {"channels": "bgr", "scale": 255.0, "mean": (0.485, 0.456, 0.406),
                                   "std": (0.229, 0.224, 0.225)},
                    "postprocess": {"conf_thres": 0.19, "iou_thres": 0.6}}
    # The config's recipe with the config's decode: only the cut, which is never the config's by chance.
    assert changes_of(outcome(), CONFIG_POST) == {"postprocess": {"conf_thres": 0.19}}


def test_flags_and_the_fragment_read_back_as_the_same_keys():
    keys = changes_of(outcome([BGR, IMAGENET], agnostic=True), CONFIG_POST)
    assert flags(keys) == ("--set preprocess.channels=bgr --set preprocess.scale=255 "
                           "--set preprocess.mean=[0.485,0.456,0.406] --set preprocess.std=[0.229,0.224,0.225] "
                           "--set postprocess.conf_thres=0.19 --set postprocess.agnostic=true")
    read = yaml.safe_load(fragment(keys))
    assert read == {section: {key: list(value) if isinstance(value, tuple) else value for key, value in values.items()}
                    for section, values in keys.items()}


def test_the_table_numbers_each_recipe_and_leaves_the_shared_cut_to_the_header():
    tried = [outcome(counts=MatchCounts(10, 8, 6, 3)), outcome([BGR], max_det=100)]
    lines = table(tried, CONFIG_POST).splitlines()
    assert len(lines) == 3 and "loose recall" in lines[0] and "strict recall" in lines[0]
    assert lines[1].split(maxsplit=5) == ["1", "0.600", "0.750", "0.300", "0.375", "(the config's recipe)"]
    assert lines[2].split() == ["2", "1.000", "1.000", "1.000", "1.000", "preprocess.channels=bgr",
                                "postprocess.max_det=100"]
    assert "conf_thres" not in "\n".join(lines)


def test_differences_are_listed_worst_image_first_and_only_where_they_differ():
    per_image = [(ROOT / "same.jpg", MatchCounts(3, 3, 3, 3)), (ROOT / "sub" / "bad.jpg", MatchCounts(4, 1, 1, 0)),
                 (ROOT / "worse.jpg", MatchCounts(5, 5, 0, 0))]
    lines = differences(outcome(per_image=per_image), ROOT)
    assert lines == ["  worse.jpg: 5 of your 5 detections unmatched, 5 of detbench's 5 beside none of yours",
                     "  sub/bad.jpg: 3 of your 4 detections unmatched, 0 of detbench's 1 beside none of yours"]
    many = [(ROOT / f"{index}.jpg", MatchCounts(1, 0, 0, 0)) for index in range(SHOWN_IMAGES + 2)]
    assert len(differences(outcome(per_image=many), ROOT)) == SHOWN_IMAGES


def test_an_answer_that_reproduces_gives_the_flags_and_the_fragment():
    text = answer(outcome([BGR]), theirs(), CONFIG_POST, ROOT)
    lines = text.splitlines()
    assert lines[0].startswith("reproduced: your 10 detections, recall 1.000, precision 1.000 at IoU 0.5")
    assert lines[1:3] == ["as flags:", "  --set preprocess.channels=bgr --set postprocess.conf_thres=0.19"]
    assert lines[3] == "to keep (a config fragment):" and "  preprocess:" in lines
    assert "where it still differs" not in text


def test_an_answer_not_reproduced_says_the_closest_and_where_it_differs():
    counts = MatchCounts(10, 9, 7, 2)
    best = outcome([BGR], counts, [(ROOT / "a.jpg", counts)])
    lines = answer(best, theirs(), CONFIG_POST, ROOT).splitlines()
    assert lines[0] == ("not reproduced by any recipe tried; the closest gives recall 0.700, precision 0.778 at IoU "
                        "0.5 and the same class (IoU 0.9 and scores within 0.01: 0.200, 0.222)")
    assert lines[1:3] == ["where it still differs:",
                          "  a.jpg: 3 of your 10 detections unmatched, 2 of detbench's 9 beside none of yours"]
