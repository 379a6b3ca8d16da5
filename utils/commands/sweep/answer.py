"""The sweep's answer, chosen from the points' figures: the fastest configuration whose detections equal the
torch fp32 reference's, its margin over the runner-up and whether that margin is beyond the noise; the
fastest within the accuracy budget (`equal` or `within_budget`: mAP@0.5:0.95 drop at most
benchmark.accuracy.max_drop), with its margin too; and the fastest at any agreement, with its verdict. Pure:
figures in, a plain dict out.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from utils.config.schema import SINGLE_STREAM
from utils.record.bootstrap import median_ratio_interval
from utils.record.statistics import pass_spread

# Torch fp32 eager is the reference the other runtimes are checked against: its detections are the answer.
REFERENCE = "reference"
EQUAL_VERDICTS = ("equal", REFERENCE)
BUDGET_VERDICTS = EQUAL_VERDICTS + ("within_budget",)
# Each LoadGen scenario is ranked by its own figure: (what, the PointFigures field, higher is better).
SCENARIO_RANKING = {
    "offline": ("LoadGen's samples/s; higher is better", "samples_per_s", True),
    "server": ("LoadGen's samples/s among the points whose result is VALID (the latency bound met): the highest "
               "valid rate; higher is better", "samples_per_s", True),
    "multi_stream": ("LoadGen's p99 query latency; lower is better", "p99_ms", False),
    "cameras": ("frames/s detected over the camera window (latency p99 and the share dropped beside it); higher is "
                "better", "frames_per_s", True),
}
RANKED_BY = ("median pipeline latency per image (load + preprocess + forward + postprocess) over the timed "
             "passes; lower is faster")


@dataclass(frozen=True)
class PointFigures:
    name: str
    values: dict[str, str]
    p50_ms_per_image: float
    images_per_s: Optional[float]
    agreement: str  # equal, within_budget, close, different, reference or unchecked
    samples: tuple[float, ...] = field(default=())  # per-image pipeline ms, one per timed batch
    map_50_95: Optional[float] = None  # the accuracy pass's mAP, where it ran
    map_drop: Optional[float] = None  # its drop against the torch fp32 reference
    scenario: str = SINGLE_STREAM
    scenario_valid: Optional[bool] = None  # LoadGen's verdict, for the other scenarios
    samples_per_s: Optional[float] = None  # LoadGen's
    p99_ms: Optional[float] = None  # LoadGen's latency percentile (per query); a camera run's, from arrival
    frames_per_s: Optional[float] = None  # a camera run's frames detected per second
    drop_share: Optional[float] = None  # a camera run's share of delivered frames dropped
    doubt: Optional[str] = None  # why its verdict cannot pick it (undecided, or a drop interval on the budget)
    pass_p50s: tuple[float, ...] = field(default=())  # per-image pipeline ms, the median of each timed pass
    round_p50s: tuple[float, ...] = field(default=())  # its p50 in each round of `--rounds N`, in round order


def _brief(point: PointFigures) -> dict:
    return {"point": point.name, "values": point.values, "p50_ms_per_image": point.p50_ms_per_image,
            "images_per_s": point.images_per_s, "agreement": point.agreement, "map_50_95": point.map_50_95,
            "map_drop": point.map_drop}


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the (speed, accuracy) pairs no other pair beats on both (higher is better on both)."""
    return [i for i, (speed, accuracy) in enumerate(points)
            if not any(s >= speed and a >= accuracy and (s, a) != (speed, accuracy) for s, a in points)]


def _widest_drift(points: tuple[PointFigures, ...]) -> Optional[tuple[PointFigures, float]]:
    spreads = [(point, spread) for point in points if (spread := pass_spread(point.pass_p50s)) is not None]
    return max(spreads, key=lambda pair: pair[1]) if spreads else None


def margin(best: PointFigures, runner_up: PointFigures, confidence: float = 0.95) -> dict:
    """How much slower the runner-up is: the ratio of its median per-image latency to the best's, with a
    bootstrap interval over the two points' per-batch samples.

    The bootstrap takes batches as exchangeable, so it cannot see the machine change speed between points run
    one after another. What it can see is a point moving between its own timed passes: where either point's
    passes differ by as much as the interval's lower end, the margin is within that drift, not beyond the
    noise (a sweep's keep_heap point read x1.64 slower, its passes 711-1208 ms/image; in interleaved runs it was
    10% faster)."""
    interval = median_ratio_interval(best.samples, runner_up.samples, confidence)
    ratio = runner_up.p50_ms_per_image / best.p50_ms_per_image
    drift = _widest_drift((best, runner_up))
    rounds = len(best.round_p50s)
    paired = rounds >= 2 and len(runner_up.round_p50s) == rounds
    round_ratios = ([slow / fast for fast, slow in zip(best.round_p50s, runner_up.round_p50s)] if paired else None)
    document = {"ratio": ratio, "ci_low": None, "ci_high": None, "confidence": confidence, "beyond_noise": None,
                "pass_spread": drift[1] if drift else None, "round_ratios": round_ratios}
    if interval is None:
        return dict(document, note="too few timed batches for an interval (raise benchmark.repeats)")
    document.update(ratio=interval.ratio, ci_low=interval.low, ci_high=interval.high)
    if interval.low <= 1.0:
        return dict(document, beyond_noise=False,
                    note=f"the {confidence:.0%} interval of the ratio includes 1: the two may be equally fast")
    if round_ratios is not None:
        # Interleaved rounds: each round's pair ran side by side in time, so the machine's drift cancels in
        # its ratio; the runner-up must be slower in every round.
        shown = ", ".join(f"x{value:.3f}" for value in round_ratios)
        if min(round_ratios) <= 1.0:
            return dict(document, beyond_noise=False,
                        note=(f"within the drift: the runner-up was not slower in every interleaved round "
                              f"({shown})"))
        return dict(document, beyond_noise=True,
                    note=(f"the runner-up is slower by a factor the {confidence:.0%} interval places above 1, and "
                          f"in each of the {rounds} interleaved rounds ({shown})"))
    if drift is not None and drift[1] >= interval.low:
        point, spread = drift
        return dict(document, beyond_noise=False,
                    note=(f"within the drift: {point.name}'s own timed passes differ by x{spread:.3f} "
                          f"({min(point.pass_p50s):.1f}-{max(point.pass_p50s):.1f} ms/image), as much as the "
                          f"interval's lower end, so the machine may have changed speed between the points; "
                          f"run the sweep again with the points in the other order, or compare interleaved runs"))
    return dict(document, beyond_noise=True,
                note=f"the runner-up is slower by a factor the {confidence:.0%} interval places above 1")


def _statement(best: Optional[PointFigures], runner_up: Optional[PointFigures], edge: Optional[dict],
               fastest: Optional[PointFigures]) -> str:
    if fastest is None:
        return "No point completed: there is no answer. See the reasons in the table."
    if best is None:
        return (f"No point gave detections equal to the fp32 reference's. The fastest overall is "
                f"{fastest.name} ({fastest.p50_ms_per_image:.1f} ms/image) with {fastest.agreement} detections.")
    text = f"Fastest at equal detections: {best.name} ({best.p50_ms_per_image:.1f} ms/image)."
    if runner_up is None:
        text += " It is the only point with equal detections, so there is no runner-up to beat."
    elif edge["beyond_noise"] is None:
        text += f" The runner-up, {runner_up.name}, takes x{edge['ratio']:.3f} as long; {edge['note']}."
    else:
        low, high = edge["ci_low"], edge["ci_high"]
        verdict = ("beyond the noise" if edge["beyond_noise"] else
                   edge["note"] if edge["note"].startswith("within the drift") else "within the noise")
        rounds = (f"; by round, x{', x'.join(f'{value:.3f}' for value in edge['round_ratios'])}"
                  if edge.get("round_ratios") else "")
        text += (f" The runner-up, {runner_up.name}, takes x{edge['ratio']:.3f} as long "
                 f"({edge['confidence']:.0%} CI {low:.3f}-{high:.3f}{rounds}): {verdict}.")
    if fastest is not best:
        text += (f" Faster still, at {fastest.agreement} detections: {fastest.name} "
                 f"({fastest.p50_ms_per_image:.1f} ms/image).")
    return text


def _budget_statement(budget: Optional[PointFigures], best: Optional[PointFigures], edge: Optional[dict]) -> str:
    if budget is None or budget is best:
        return ""
    drop = f", mAP drop {budget.map_drop:+.4f}" if budget.map_drop is not None else ""
    text = (f" Fastest within the accuracy budget: {budget.name} ({budget.p50_ms_per_image:.1f} ms/image, "
            f"{budget.agreement}{drop})")
    if best is not None:
        text += f", x{best.p50_ms_per_image / budget.p50_ms_per_image:.2f} the speed of the fastest equal point"
    if edge is not None and edge.get("beyond_noise") is not None:
        text += f"; its runner-up within the budget takes x{edge['ratio']:.3f} as long"
    return text + "."
def rank_scenario(scenario: str, points: list[PointFigures]) -> dict:
    """The points of one LoadGen scenario, best first by its own figure. A server point counts only when
    LoadGen found it valid; elsewhere an invalid point is ranked but says so."""
    what, figure, higher = SCENARIO_RANKING[scenario]
    eligible = [p for p in points if getattr(p, figure) is not None
                and (scenario != "server" or p.scenario_valid)]
    ranked = sorted(eligible, key=lambda p: getattr(p, figure), reverse=higher)
    left_out = [p.name for p in points if p not in eligible]
    best = ranked[0] if ranked else None
    statement = (f"{scenario}: best {best.name} ({figure.replace('_', ' ')} {getattr(best, figure):.3g}"
                 f"{', LoadGen result INVALID' if best.scenario_valid is False else ''})." if best else
                 f"{scenario}: no point has a figure to rank" + (" (no server point met its latency bound)."
                                                                 if scenario == "server" else "."))
    return {"ranked_by": what, "statement": statement,
            "ranking": [{"point": p.name, "values": p.values, figure: getattr(p, figure),
                         "valid": p.scenario_valid, "agreement": p.agreement} for p in ranked],
            "left_out": left_out}


def choose(points: list[PointFigures], confidence: float = 0.95) -> dict:
    """`points` are the completed points; ties keep the order of the sweep. single_stream points get the
    answer below; each LoadGen scenario's points are ranked apart, by that scenario's figure."""
    by_scenario = {scenario: rank_scenario(scenario, [p for p in points if p.scenario == scenario])
                   for scenario in SCENARIO_RANKING if any(p.scenario == scenario for p in points)}
    points = [point for point in points if point.scenario == SINGLE_STREAM]
    answer = _choose_single_stream(points, confidence)
    if by_scenario:
        answer["by_scenario"] = by_scenario
        if points:
            answer["statement"] += " " + " ".join(ranking["statement"] for ranking in by_scenario.values())
        else:
            answer["statement"] = " ".join(ranking["statement"] for ranking in by_scenario.values())
    return answer


def _choose_single_stream(points: list[PointFigures], confidence: float) -> dict:
    ranked = sorted(points, key=lambda point: point.p50_ms_per_image)
    equal = [point for point in ranked if point.agreement in EQUAL_VERDICTS]
    best = equal[0] if equal else None
    runner_up = equal[1] if len(equal) > 1 else None
    edge = margin(best, runner_up, confidence) if runner_up is not None else None
    fastest = ranked[0] if ranked else None
    within = [point for point in ranked if point.agreement in BUDGET_VERDICTS and point.doubt is None]
    apart = [{"point": point.name, "agreement": point.agreement, "reason": point.doubt}
             for point in ranked if point.doubt is not None]
    budget = within[0] if within else None
    budget_edge = margin(budget, within[1], confidence) if len(within) > 1 else None
    scored = [point for point in ranked if point.map_50_95 is not None and point.images_per_s is not None]
    front = pareto_front([(point.images_per_s, point.map_50_95) for point in scored])
    return {
        "statement": (_statement(best, runner_up, edge, fastest) + _budget_statement(budget, best, budget_edge)
                      + "".join(f" Set apart, its verdict in doubt: {entry['point']} ({entry['reason']})."
                                for entry in apart)),
        "set_apart": apart,
        "pareto_front": [scored[i].name for i in front],
        "fastest_within_budget": _brief(budget) if budget else None,
        "runner_up_within_budget": _brief(within[1]) if len(within) > 1 else None,
        "margin_within_budget": budget_edge,
        "fastest_equal": _brief(best) if best else None,
        "runner_up_equal": _brief(runner_up) if runner_up else None,
        "margin": edge,
        "fastest_any": _brief(fastest) if fastest else None,
        "ranked_by": RANKED_BY,
        "equal_means": ("agreement verdict `equal` against the fp32 reference (torch fp32 eager, or for model.file "
                        "the file as exported at fp32: strict recall and precision >= 0.99, raw error <= 0.5 px), or "
                        "that reference itself"),
        "within_budget_means": ("agreement verdict `equal` or `within_budget` (mAP@0.5:0.95 drop against the "
                                "reference at most benchmark.accuracy.max_drop), or the reference itself; never a "
                                "point set apart (`undecided`, or a drop interval that contains the budget)"),
    }
