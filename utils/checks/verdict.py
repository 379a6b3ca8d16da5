"""The verdict users judge a configuration by, as plain functions.

`equal`: the detections a deployment shows (above `conf_thres`) match the torch fp32 reference's strictly
(utils.checks.agreement.matching.verdict). They are judged at `conf_thres` whenever the reference shows enough
detections there; the top-k form (the threshold that keeps the reference's top candidates) is the fallback
for random weights, whose scores rarely clear `conf_thres`. Near-tied low-score candidates that no one sees
then never decide it.

`within_budget`: not equal, but the mAP@0.5:0.95 drop's interval over images lies under the budget
(`benchmark.accuracy.max_drop`); `different` where it lies above; `undecided` where it holds the budget, with
the images that would decide it. The same rule with labels as without (utils.checks.accuracy.label_free), so a point
estimate under the budget is never called within it on its own. Without an interval (bootstrap off) the point
estimate decides. Without an accuracy measurement the old third grade, `close`, stays.
"""
from __future__ import annotations

from typing import Any, Optional

from utils.checks.agreement.matching import DIFFERENT, EQUAL, MatchCounts
from utils.record.sections import AccuracySection, AgreementSection
from utils.checks.accuracy.label_free import UNDECIDED, decide, images_to_decide

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


def budget_verdict(detections_verdict: str, drop: Optional[float], max_drop: float,
                   interval: Optional[dict[str, Any]] = None) -> str:
    """equal stays equal; otherwise the mAP drop decides when it was measured (a NaN-free float): its interval
    where there is one (under the budget, above it, or holding it: undecided), else the point estimate."""
    if detections_verdict == EQUAL or drop is None:
        return detections_verdict
    if interval:
        return decide(drop, interval["low"], interval["high"], max_drop)
    return WITHIN_BUDGET if drop <= max_drop else DIFFERENT


def apply_budget(agreement: AgreementSection, accuracy: Optional[AccuracySection], max_drop: float) -> AgreementSection:
    """The agreement entry with its verdict graded by the accuracy's mAP drop; the verdict of the detections
    alone stays as `detections_verdict`, the drop and its interval under `accuracy_drop`."""
    drop = (accuracy or {}).get("drop")
    if drop is None:
        return agreement
    free = (accuracy or {}).get("label_free")
    if free is not None:
        verdict = EQUAL if agreement["verdict"] == EQUAL else free["verdict"]
        return dict(agreement, detections_verdict=agreement["verdict"], verdict=verdict, label_free=free,
                    accuracy_drop={"map_50_95" if free["figure"] == "mAP@0.5:0.95" else "map_50": free["estimate"],
                                   "max_drop": max_drop,
                                   "interval": None if free["estimate"] is None else {
                                       "low": free["low"], "high": free["high"], "confidence": free["confidence"],
                                       "over": "images"},
                                   "against": free["label_free_truth"], "estimates": free["estimates"],
                                   "interval_crosses_budget": free["verdict"] == UNDECIDED})
    value, interval = drop["map_50_95"], drop.get("interval")
    graded = dict(agreement, detections_verdict=agreement["verdict"],
                  verdict=budget_verdict(agreement["verdict"], value, max_drop, interval))
    graded["accuracy_drop"] = {"map_50_95": value, "max_drop": max_drop, "interval": interval,
                               "against": drop.get("against"),
                               "interval_crosses_budget": crosses_budget(interval, max_drop)}
    if graded["verdict"] == UNDECIDED:
        images = int((accuracy or {}).get("images") or 0)
        graded["accuracy_drop"]["images_needed"] = images_to_decide(images, value, interval["low"],
                                                                    interval["high"], max_drop)
    return graded


def crosses_budget(interval: Optional[dict[str, Any]], max_drop: float) -> Optional[bool]:
    """Whether the drop's bootstrap interval has the budget inside it: then `within_budget` or `different`
    could have come out the other way on other images."""
    if not interval:
        return None
    return interval["low"] <= max_drop <= interval["high"]


def verdict_warnings(agreement: dict[str, Any]) -> list[str]:
    """What the run warns about its verdict: a configuration that changes the detections, why, and doubt."""
    verdict = agreement["verdict"]
    if verdict == EQUAL:
        return []
    drop, free = agreement.get("accuracy_drop"), agreement.get("label_free")
    if free is not None:
        why = f"without labels: {free['statement']}"
    elif drop:
        why = f"mAP@0.5:0.95 drop {drop['map_50_95']:+.4f} against a budget of {drop['max_drop']}"
    else:
        why = f"strict recall {agreement['strict']['recall']:.3f}"
    effect = {WITHIN_BUDGET: "changes the detections, within the mAP budget",
              UNDECIDED: "changes the detections, and whether within the mAP budget is not decided"}.get(
        verdict, "changes the answers")
    reference = agreement.get("reference") or "torch fp32 eager"
    warnings = [f"detections are {verdict.upper()} to the {reference} reference's ({why}): this configuration "
                f"{effect}; see summary.json agreement"]
    interval = (drop or {}).get("interval")
    if free is None and interval and drop["interval_crosses_budget"]:
        needed = drop.get("images_needed")
        warnings.append(f"the mAP drop's {interval['confidence']:.0%} interval over images "
                        f"[{interval['low']:+.4f}, {interval['high']:+.4f}] holds the budget {drop['max_drop']}, so "
                        "the verdict is undecided: evaluate more images"
                        + (f" (about {needed} would decide it)" if needed else "")
                        + " (dataset.labels, benchmark.accuracy.images)")
    return warnings


def doubt(agreement: Optional[dict[str, Any]]) -> Optional[str]:
    """Why a point's verdict cannot be trusted to pick it: undecided, or its drop interval contains the budget.
    None when nothing is in doubt."""
    if not agreement:
        return None
    if agreement.get("verdict") == UNDECIDED:
        free = agreement.get("label_free") or {}
        return free.get("statement", "undecided")
    drop = agreement.get("accuracy_drop") or {}
    interval = drop.get("interval")
    if agreement.get("verdict") != EQUAL and interval and crosses_budget(interval, drop["max_drop"]):
        return (f"its mAP drop's {interval['confidence']:.0%} interval [{interval['low']:+.4f}, "
                f"{interval['high']:+.4f}] contains the budget {drop['max_drop']}")
    return None
