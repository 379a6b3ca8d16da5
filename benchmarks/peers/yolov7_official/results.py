"""The parity benchmark's figures: detections read from either side, their agreement with the official loop,
medians over rounds, the three goals, and the printed table."""
from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from benchmarks.peers.yolov7_official.specs import TORCH_FP32
from utils.record.statistics import GOAL_INTERVAL as INTERVAL, judge_against, median_confidence_interval

REFERENCE = "official"
GOAL_EAGER = 1.0
GOAL_EQUAL = 1.5
GOAL_ANY = 3.0
UNKNOWN = "unknown"
# The "equal" and "close" bars of detbench's own verdict (utils.checks.agreement.matching.VerdictThresholds), applied to
# detections only: the official loop's raw outputs are not compared.
EQUAL_MIN = 0.99
CLOSE_MIN = 0.9


Row = tuple[int, float, float, float, float, float]  # class, score, x1, y1, x2, y2


def read_detections_csv(path: Path) -> dict[str, list[Row]]:
    """detections.csv of either side -> {image: [(class, score, x1, y1, x2, y2), ...]} (detbench names the class
    column class_id, the peer class)."""
    found: dict[str, list[Row]] = {}
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        class_column = "class_id" if "class_id" in (reader.fieldnames or ()) else "class"
        for row in reader:
            found.setdefault(row["image"], []).append((
                int(row[class_column]), float(row["score"]), float(row["x1"]), float(row["y1"]),
                float(row["x2"]), float(row["y2"])))
    return found


def agreement_counts(reference: dict[str, list[Row]], candidate: dict[str, list[Row]], images: Iterable[str]):
    """MatchCounts of the candidate's detections against the reference's, summed over `images` (an image absent
    from a file has no detections there)."""
    import torch

    from utils.checks.agreement.matching import MatchCounts, match_detections

    class Found:
        def __init__(self, rows: list[Row]):
            table = torch.tensor(rows, dtype=torch.float64).reshape(-1, 6)
            self.labels = table[:, 0].long()
            self.scores = table[:, 1]
            self.boxes = table[:, 2:6]

    total = MatchCounts()
    for image in images:
        total = total + match_detections(Found(reference.get(image, [])), Found(candidate.get(image, [])))
    return total


def verdict_against_official(counts) -> str:
    """equal / close / different from detection counts alone, at detbench's own bars."""
    if counts.strict_recall >= EQUAL_MIN and counts.strict_precision >= EQUAL_MIN:
        return "equal"
    if counts.loose_recall >= CLOSE_MIN and counts.loose_precision >= CLOSE_MIN:
        return "close"
    return "different"


def median_or_none(values: Iterable[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


@dataclass
class RoundResult:
    images_per_s: float | None = None
    p50_ms_per_image: float | None = None
    forward_p50_ms: float | None = None
    detections: int | None = None
    detbench_verdict: str | None = None
    note: str | None = None  # why there are no figures (not available, failed)
    faults_per_image: float | None = None  # minor page faults of the process over the timed passes, per image


@dataclass
class ConfigurationSummary:
    label: str
    rounds_ok: int
    rounds_tried: int
    images_per_s: float | None
    ratio: float | None  # median over rounds of (images/s / the official loop's in the same round)
    p50_ms_per_image: float | None
    forward_p50_ms: float | None
    spread: float | None  # (max - min) / median of images/s over rounds
    counts: Any = None  # MatchCounts against the official loop, summed over rounds
    verdict: str | None = None  # against the official loop
    detbench_verdicts: tuple[str, ...] = ()
    note: str | None = None
    faults_per_image: float | None = None
    ratio_interval: tuple[float, float] | None = None  # INTERVAL of the ratio's median over rounds


def summarize(label: str, rounds: list[RoundResult], official: list[RoundResult], counts=None) -> ConfigurationSummary:
    """Medians over the rounds that produced figures; ratios pair each round with the official loop's."""
    ok = [r for r in rounds if r.images_per_s is not None]
    ratios = [r.images_per_s / o.images_per_s for r, o in zip(rounds, official)
              if r.images_per_s is not None and o.images_per_s]
    speeds = [r.images_per_s for r in ok]
    middle = median_or_none(speeds)
    notes = [r.note for r in rounds if r.note]
    return ConfigurationSummary(
        label=label, rounds_ok=len(ok), rounds_tried=len(rounds), images_per_s=middle,
        ratio=median_or_none(ratios), p50_ms_per_image=median_or_none(r.p50_ms_per_image for r in ok),
        forward_p50_ms=median_or_none(r.forward_p50_ms for r in ok),
        spread=(max(speeds) - min(speeds)) / middle if len(speeds) > 1 and middle else None,
        counts=counts, verdict=None if counts is None else verdict_against_official(counts),
        detbench_verdicts=tuple(sorted({r.detbench_verdict for r in ok if r.detbench_verdict})),
        note=notes[0] if notes and not ok else None,
        faults_per_image=median_or_none(r.faults_per_image for r in ok),
        ratio_interval=median_confidence_interval(ratios, INTERVAL))


@dataclass
class Goal:
    text: str
    target: float
    status: str  # met, missed, not resolved (the rounds' interval straddles the target) or UNKNOWN (not measured)
    detail: str


def evaluate_goals(rows: Sequence[ConfigurationSummary]) -> list[Goal]:
    """The three goals, judged on the detbench rows (the official row is the 1.0x reference)."""
    measured = [row for row in rows if row.label != REFERENCE and row.ratio is not None]

    def described(row: ConfigurationSummary) -> str:
        own = "/".join(row.detbench_verdicts) or "n/a"
        spread = (f"rounds' {INTERVAL:.0%} interval {row.ratio_interval[0]:.2f}-{row.ratio_interval[1]:.2f}x"
                  if row.ratio_interval else "too few rounds for an interval")
        return (f"{row.label} at {row.ratio:.2f}x ({spread}; vs official: {row.verdict or 'n/a'}; detbench "
                f"agreement: {own})")

    def status(row: ConfigurationSummary | None, target: float) -> str:
        return UNKNOWN if row is None else judge_against(row.ratio, row.ratio_interval, target, higher_is_better=True)

    eager = next((row for row in measured if row.label == TORCH_FP32), None)
    goals = [Goal(f"torch eager fp32 pipeline >= {GOAL_EAGER:.1f}x the official loop", GOAL_EAGER,
                  status(eager, GOAL_EAGER),
                  "torch:fp32 not measured" if eager is None else described(eager))]
    equal = [row for row in measured if row.verdict == "equal"]
    best_equal = max(equal, key=lambda row: row.ratio, default=None)
    goals.append(Goal(f"fastest configuration with detections equal to the official loop's >= {GOAL_EQUAL:.1f}x",
                      GOAL_EQUAL, status(best_equal, GOAL_EQUAL),
                      "no configuration has equal detections" if best_equal is None else described(best_equal)))
    fastest = max(measured, key=lambda row: row.ratio, default=None)
    goals.append(Goal(f"fastest configuration at any precision >= {GOAL_ANY:.1f}x", GOAL_ANY,
                      status(fastest, GOAL_ANY),
                      "nothing measured" if fastest is None else described(fastest)))
    return goals


def _number(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def format_table(rows: Sequence[ConfigurationSummary]) -> str:
    header = ("configuration", "rounds", "images/s", "x official", "spread", "p50 ms/img", "fwd p50 ms",
              "faults/img", "loose R/P", "strict R/P", "vs official", "detbench verdict")
    lines = []
    for row in rows:
        if row.rounds_ok == 0:
            lines.append((row.label, f"0/{row.rounds_tried}", row.note or "no figures"))
            continue
        counts = row.counts
        loose = strict = "-"
        if counts is not None and row.label != REFERENCE:
            loose = f"{counts.loose_recall:.3f}/{counts.loose_precision:.3f}"
            strict = f"{counts.strict_recall:.3f}/{counts.strict_precision:.3f}"
        lines.append((row.label, f"{row.rounds_ok}/{row.rounds_tried}", _number(row.images_per_s, ".3f"),
                      _number(row.ratio, ".2f"), "-" if row.spread is None else f"{row.spread:.0%}",
                      _number(row.p50_ms_per_image, ".0f"), _number(row.forward_p50_ms, ".0f"),
                      _number(row.faults_per_image, ".0f"), loose, strict,
                      (row.verdict or "-") if row.label != REFERENCE else "reference",
                      "/".join(row.detbench_verdicts) or "-"))
    full = [line for line in lines if len(line) == len(header)]
    widths = [max(len(str(line[i])) for line in [header, *full]) for i in range(len(header))]
    out = ["  ".join(str(cell).ljust(width) for cell, width in zip(header, widths)).rstrip()]
    for line in lines:
        if len(line) == len(header):
            out.append("  ".join(str(cell).ljust(width) for cell, width in zip(line, widths)).rstrip())
        else:  # a configuration without figures: its note across the table
            out.append(f"{line[0].ljust(widths[0])}  {line[1].ljust(widths[1])}  {line[2]}")
    return "\n".join(out)


def format_goals(goals: Sequence[Goal]) -> str:
    marks = {"met": "[met]", "missed": "[not met]", "not resolved": "[not resolved]", UNKNOWN: "[unknown]"}
    width = max(len(mark) for mark in marks.values())
    return "\n".join(f"{marks[goal.status]:<{width}} {goal.text}: {goal.detail}" for goal in goals)
