"""The sweep's answer (utils/commands/sweep/answer.py): the fastest point at equal detections and within the accuracy
budget, with a margin beyond the noise only where its interval, its points' own passes and every interleaved round
agree; the Pareto front of speed and mAP."""
import pytest

from utils.commands.sweep.answer import PointFigures, choose, pareto_front


def _point(name, p50, agreement, samples):
    return PointFigures(name, {"k": name}, p50, 1000.0 / p50, agreement, tuple(samples))


def test_answer_fastest_at_equal_detections_with_a_margin_beyond_the_noise():
    points = [_point("slow", 20.0, "reference", [19, 20, 21, 20, 20]),
              _point("fast", 10.0, "equal", [9, 10, 11, 10, 10]),
              _point("fastest", 5.0, "different", [5, 5, 5, 5, 5])]
    answer = choose(points)
    assert answer["fastest_equal"]["point"] == "fast"
    assert answer["runner_up_equal"]["point"] == "slow"
    assert answer["margin"]["ratio"] == pytest.approx(2.0) and answer["margin"]["beyond_noise"] is True
    assert answer["fastest_any"] == {"point": "fastest", "values": {"k": "fastest"}, "p50_ms_per_image": 5.0,
                                     "images_per_s": 200.0, "agreement": "different", "map_50_95": None,
                                     "map_drop": None}
    assert "fast (10.0 ms/image)" in answer["statement"] and "different detections" in answer["statement"]


def test_answer_says_when_the_margin_is_within_the_noise():
    answer = choose([_point("a", 10.0, "equal", [8, 10, 12, 9, 11]), _point("b", 10.5, "reference",
                                                                           [8.5, 10.5, 12.5, 9.5, 11.5])])
    assert answer["fastest_equal"]["point"] == "a"
    assert answer["margin"]["beyond_noise"] is False and "within the noise" in answer["statement"]


def test_a_margin_no_wider_than_a_points_own_passes_is_within_the_drift():
    # keep_heap's batches read twice the inherit point's, but its own passes ran 711 and 1208 ms/image: x1.70,
    # above the interval's lower end, so the machine may have slowed between the points.
    inherit = PointFigures("inherit", {}, 730.0, 1.37, "reference", (720, 730, 740, 725, 735, 730),
                           pass_p50s=(728.0, 732.0))
    kept = PointFigures("keep_heap", {}, 1200.0, 0.83, "reference", (1190, 1200, 1210, 1195, 1205, 1200),
                        pass_p50s=(711.0, 1208.0))
    edge = choose([inherit, kept])["margin"]
    assert edge["ci_low"] > 1.5 and edge["pass_spread"] == pytest.approx(1208 / 711)
    assert edge["beyond_noise"] is False and "keep_heap's own timed passes differ by x1.699" in edge["note"]
    assert "within the drift" in choose([inherit, kept])["statement"]
    # Steady passes (x1.01) leave the same margin beyond the noise.
    steady = PointFigures("keep_heap", {}, 1200.0, 0.83, "reference", kept.samples, pass_p50s=(1195.0, 1205.0))
    assert choose([inherit, steady])["margin"]["beyond_noise"] is True


def test_answer_without_equal_points_or_without_points():
    answer = choose([_point("bf16", 5.0, "close", [5, 5, 5])])
    assert answer["fastest_equal"] is None and answer["margin"] is None
    assert answer["fastest_any"]["point"] == "bf16" and "No point gave detections equal" in answer["statement"]
    assert choose([])["fastest_any"] is None


def test_answer_names_the_fastest_within_the_accuracy_budget():
    points = [PointFigures("fp32", {}, 20.0, 50.0, "reference", (19, 20, 21, 20, 20), 0.60, None),
              PointFigures("ov", {}, 15.0, 66.7, "equal", (14, 15, 16, 15, 15), 0.60, 0.0),
              PointFigures("int8", {}, 8.0, 125.0, "within_budget", (7, 8, 9, 8, 8), 0.595, 0.005),
              PointFigures("int8-all", {}, 6.0, 166.7, "different", (6, 6, 6, 6, 6), 0.40, 0.2)]
    answer = choose(points)
    assert answer["fastest_equal"]["point"] == "ov"
    assert answer["fastest_within_budget"]["point"] == "int8"
    assert answer["runner_up_within_budget"]["point"] == "ov"
    assert answer["margin_within_budget"]["ratio"] == pytest.approx(15 / 8) and answer["margin_within_budget"]["beyond_noise"]
    assert "Fastest within the accuracy budget: int8" in answer["statement"] and "drop +0.0050" in answer["statement"]
    # fp32 is beaten on both speed and mAP by ov (same mAP, faster): off the front
    assert answer["pareto_front"] == ["int8-all", "int8", "ov"]


def test_pareto_front_by_hand():
    assert pareto_front([(1.0, 0.9), (2.0, 0.8), (1.5, 0.7), (2.0, 0.8), (0.5, 0.95)]) == [0, 1, 3, 4]


def _rounds(name, p50s, samples_per_round=((1, 1, 1),)):
    return PointFigures(name, {}, sorted(p50s)[len(p50s) // 2], 1000 / p50s[0], "reference",
                        tuple(v for per_round in samples_per_round for v in per_round), round_p50s=tuple(p50s))


def test_an_interleaved_margin_must_hold_in_every_round():
    fast = _rounds("fast", (10.0, 10.0, 10.0), ((9.9, 10.0, 10.1),) * 3)
    slow = _rounds("slow", (12.0, 11.0, 12.5), ((11.9, 12.0, 12.1),) * 3)
    edge = choose([fast, slow])["margin"]
    assert edge["round_ratios"] == pytest.approx([1.2, 1.1, 1.25]) and edge["beyond_noise"] is True
    assert "in each of the 3 interleaved rounds" in edge["note"]
    # One round where the runner-up was as fast: the pooled interval is above 1, the rounds say drift.
    mixed = _rounds("slow", (12.0, 9.8, 12.5), ((11.9, 12.0, 12.1),) * 3)
    answer = choose([fast, mixed])
    assert answer["margin"]["ci_low"] > 1 and answer["margin"]["beyond_noise"] is False
    assert "not slower in every interleaved round (x1.200, x0.980, x1.250)" in answer["statement"]
