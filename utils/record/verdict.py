"""The verdict users judge a configuration by, as plain functions.

`equal`: the detections a deployment shows (above `conf_thres`) match the torch fp32 reference's strictly
(utils.record.agreement.verdict). They are judged at `conf_thres` whenever the reference shows enough
detections there; the top-k form (the threshold that keeps the reference's top candidates) is the fallback
for random weights, whose scores rarely clear `conf_thres`. Near-tied low-score candidates that no one sees
then never decide it.

`within_budget`: not equal, but the mAP@0.5:0.95 drop against the reference is at most the budget
(`benchmark.accuracy.max_drop`). Else `different`. Without an accuracy measurement the old third grade,
`close`, stays.
"""
from __future__ import annotations

from typing import Any, Optional

from utils.record.agreement import DIFFERENT, EQUAL, MatchCounts

WITHIN_BUDGET = "within_budget"
# "Enough" reference detections at conf_thres to judge there: one per image on average, and at least this many.
MIN_REFERENCE_DETECTIONS = 10
JUDGED_AT_CONF_THRES = "conf_thres"
JUDGED_AT_TOP_K = "top_k"


def judged_counts(at_conf_thres: MatchCounts, top_k: MatchCounts, images: int) -> tuple[MatchCounts, str]:
    """The match counts the verdict is judged on, and where they come from."""
    if at_conf_thres.reference >= max(MIN_REFERENCE_DETECTIONS, images):
        return at_conf_thres, JUDGED_AT_CONF_THRES
    return top_k, JUDGED_AT_TOP_K


def budget_verdict(detections_verdict: str, drop: Optional[float], max_drop: float) -> str:
    """equal stays equal; otherwise the mAP drop decides when it was measured (a NaN-free float)."""
    if detections_verdict == EQUAL or drop is None:
        return detections_verdict
    return WITHIN_BUDGET if drop <= max_drop else DIFFERENT


def apply_budget(agreement: dict[str, Any], accuracy: Optional[dict[str, Any]], max_drop: float) -> dict[str, Any]:
    """The agreement entry with its verdict graded by the accuracy's mAP drop; the verdict of the detections
    alone stays as `detections_verdict`, the drop and its interval under `accuracy_drop`."""
    drop = (accuracy or {}).get("drop")
    if drop is None:
        return agreement
    value = drop["map_50_95"]
    graded = dict(agreement, detections_verdict=agreement["verdict"],
                  verdict=budget_verdict(agreement["verdict"], value, max_drop))
    graded["accuracy_drop"] = {"map_50_95": value, "max_drop": max_drop, "interval": drop.get("interval"),
                               "against": drop.get("against"),
                               "interval_crosses_budget": crosses_budget(drop.get("interval"), max_drop)}
    return graded


def crosses_budget(interval: Optional[dict[str, Any]], max_drop: float) -> Optional[bool]:
    """Whether the drop's bootstrap interval has the budget inside it: then `within_budget` or `different`
    could have come out the other way on other images."""
    if not interval:
        return None
    return interval["low"] <= max_drop <= interval["high"]
