"""The answer respects doubt: a point whose verdict is undecided, or whose drop interval contains the budget,
is never picked; it is listed apart with its reason and marked on the plot."""
from __future__ import annotations

from utils.checks.verdict import doubt
from utils.commands.sweep.answer import PointFigures, choose
from utils.commands.sweep.files import plot_sweep


def point(name, ms, agreement, reason=None, map_50_95=0.6):
    return PointFigures(name, {"runtime.precision": name}, ms, 1000.0 / ms, agreement, (ms, ms * 1.01, ms * 0.99),
                        map_50_95=map_50_95, map_drop=0.002, doubt=reason)


def test_doubt_names_undecided_and_an_interval_on_the_budget():
    interval = {"low": 0.004, "high": 0.012, "confidence": 0.95}
    crossing = {"verdict": "within_budget", "accuracy_drop": {"max_drop": 0.01, "interval": interval}}
    assert doubt(crossing) == "its mAP drop's 95% interval [+0.0040, +0.0120] contains the budget 0.01"
    clear = {"verdict": "within_budget", "accuracy_drop": {"max_drop": 0.01, "interval": dict(interval, high=0.009)}}
    assert doubt(clear) is None
    assert doubt({"verdict": "undecided", "label_free": {"statement": "undecided: because"}}) == "undecided: because"
    assert doubt({"verdict": "equal"}) is None and doubt(None) is None


def test_the_answer_skips_points_in_doubt_and_lists_them_apart(tmp_path):
    points = [point("int8", 10.0, "undecided", "undecided: the interval contains the budget"),
              point("bf16", 12.0, "within_budget", "its mAP drop's 95% interval contains the budget 0.01"),
              point("ov-fp32", 15.0, "within_budget"), point("fp32", 20.0, "reference")]
    answer = choose(points)
    assert answer["fastest_within_budget"]["point"] == "ov-fp32"
    assert [entry["point"] for entry in answer["set_apart"]] == ["int8", "bf16"]
    assert answer["set_apart"][0]["reason"] == "undecided: the interval contains the budget"
    assert "Set apart, its verdict in doubt: int8" in answer["statement"]
    rows = [{"point": p.name, "runtime.precision": p.name, "status": "complete", "images_per_s": p.images_per_s,
             "p50_ms_per_image": p.p50_ms_per_image, "agreement": p.agreement, "map_50_95": p.map_50_95,
             "doubt": p.doubt} for p in points]
    path = plot_sweep(rows, ["runtime.precision"], tmp_path / "sweep.png", None, answer["pareto_front"])
    assert path.stat().st_size > 10_000
