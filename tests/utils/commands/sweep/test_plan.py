"""Parsing --sweep arguments, the product of points, and the pure choice of the sweep's answer."""
import pytest

from utils.record.statistics import pass_spread
from utils.commands.sweep.answer import PointFigures, choose, pareto_front
from utils.commands.sweep.driver import exit_reason, stderr_reason
from utils.commands.sweep.driver import PointResult, RoundRun
from utils.commands.sweep.figures import combine_rounds
from utils.commands.sweep.plan import SweepError, expand, round_name, round_order, split_values


def test_product_in_argument_order_with_readable_names():
    axes, points = expand(["runtime.backend=torch,onnxruntime", "dataset.batch_size=1,2"])
    assert [axis.key for axis in axes] == ["runtime.backend", "dataset.batch_size"]
    assert [point.name for point in points] == [
        "runtime.backend=torch,dataset.batch_size=1", "runtime.backend=torch,dataset.batch_size=2",
        "runtime.backend=onnxruntime,dataset.batch_size=1", "runtime.backend=onnxruntime,dataset.batch_size=2"]
    assert points[3].overrides == ["runtime.backend=onnxruntime", "dataset.batch_size=2"]


def test_values_split_outside_brackets_and_names_are_filesystem_safe():
    assert split_values("[0,2],[1], null") == ["[0,2]", "[1]", "null"]
    assert split_values('"a,b",c') == ['"a,b"', "c"]
    _, points = expand(["model.weights=w/a b.pt,w/a:b.pt"])
    assert [point.name for point in points] == ["model.weights=w_a_b.pt", "model.weights=w_a_b.pt-2"]
    assert all("/" not in point.name for point in points)


@pytest.mark.parametrize("arguments, named", [
    (["dataset.batch_size"], "expected KEY=V1,V2"),
    (["dataset.batch_size=1,,2"], "empty value"),
    (["dataset.batch_size=1,1"], "more than once"),
    (["dataset.batch_size=1", "dataset.batch_size=2"], "dataset.batch_size more than once"),
    (["run.id=a,b"], "run.id is set by the sweep"),
])
def test_mistakes_name_the_argument(arguments, named):
    with pytest.raises(SweepError, match=named):
        expand(arguments)


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


def test_pass_spread_is_the_slowest_pass_over_the_fastest():
    assert pass_spread([10.0, 12.0, 11.0]) == pytest.approx(1.2)
    assert pass_spread([10.0]) is None and pass_spread([]) is None


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


def test_a_failed_point_keeps_the_end_of_its_error_output():
    stderr = "loading...\nTraceback (most recent call last):\n  File x\n  File y\n  File z\nRuntimeError: boom\n"
    assert stderr_reason(stderr) == "RuntimeError: boom"
    assert stderr_reason("noise\nerror: invalid configuration:\n  dataset.limit: bad\n") == (
        "error: invalid configuration: dataset.limit: bad")
    assert exit_reason(-9, "") == "killed by SIGKILL: no error output"
    assert exit_reason(2, "error: missing file").startswith("cannot run (exit 2): error: missing file")


def test_node_places_a_point_and_is_not_a_config_override():
    axes, points = expand(["dataset.batch_size=1,2", "node=epyc-1,xeon-1"])
    assert [axis.key for axis in axes] == ["dataset.batch_size", "node"]
    assert points[1].name == "dataset.batch_size=1,node=xeon-1" and points[1].node == "xeon-1"
    assert points[1].overrides == ["dataset.batch_size=1"] and points[1].values["node"] == "xeon-1"
    assert expand(["dataset.batch_size=1"])[1][0].node is None


def test_rounds_run_every_other_one_in_reverse_order():
    _, points = expand(["k=a,b,c"])
    order = [(point.values["k"], number) for point, number in round_order(points, 3)]
    assert order == [("a", 1), ("b", 1), ("c", 1), ("c", 2), ("b", 2), ("a", 2), ("a", 3), ("b", 3), ("c", 3)]
    assert [(p.values["k"], n) for p, n in round_order(points, 1)] == [("a", 1), ("b", 1), ("c", 1)]
    assert round_name(points[0], 2, 3) == "k=a,round=2" and round_name(points[0], 1, 1) == "k=a"
    with pytest.raises(SweepError, match="--rounds 0"):
        round_order(points, 0)


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


def _row(p50, images_per_s):
    return {"images_per_s": images_per_s, "p50_ms_per_image": p50, "p90_ms_per_image": p50, "pass_p50_spread": 1.0,
            "forward_p50_ms_per_image": p50 - 1, "agreement": "reference", "scenario_samples_per_s": None,
            "scenario_p99_ms": None, "scenario_valid": None, "peak_pss_mib": 100.0}


def test_rounds_combine_into_one_row_by_hand():
    first = PointFigures("p", {}, 10.0, 100.0, "reference", (9.0, 10.0, 11.0), pass_p50s=(10.0, 10.5))
    second = PointFigures("p", {}, 14.0, 70.0, "reference", (13.0, 14.0, 15.0), pass_p50s=(14.0, 13.0))
    third = PointFigures("p", {}, 12.0, 80.0, "reference", (12.0, 12.0, 12.0), pass_p50s=(12.0, 12.0))
    row, combined = combine_rounds([_row(10.0, 100.0), _row(14.0, 70.0), _row(12.0, 80.0)],
                                   [first, second, third])
    assert row["rounds"] == 3 and row["p50_ms_per_image"] == 12.0 and row["images_per_s"] == 80.0
    assert row["forward_p50_ms_per_image"] == 11.0 and row["peak_pss_mib"] == 100.0
    assert row["pass_p50_spread"] == pytest.approx(14.0 / 10.0)
    assert combined.round_p50s == (10.0, 14.0, 12.0) and len(combined.samples) == 9
    assert row["p90_ms_per_image"] == pytest.approx(14.2)  # numpy's linear percentile of the 9 pooled batches
    assert combine_rounds([_row(10.0, 100.0)], [first]) == (dict(_row(10.0, 100.0), rounds=1), first)


def test_a_point_fails_when_one_of_its_rounds_failed(tmp_path):
    _, points = expand(["k=a"])
    result = PointResult(points[0], [RoundRun(1, tmp_path / "r1"), RoundRun(2, tmp_path / "r2")])
    result.runs[0].status = "complete"
    result.settle()
    assert result.status == "pending"  # round 2 has not run yet
    result.runs[1].status, result.runs[1].reason = "failed", "crashed (exit 139)"
    result.settle()
    assert result.status == "failed" and result.reason == "round 2: crashed (exit 139)"
    assert result.figures is None


def test_a_sweep_too_large_to_run_is_refused_before_it_is_expanded():
    huge = ",".join(str(value) for value in range(1, 2001))
    with pytest.raises(SweepError, match=r"200,000 runs \(2000 x 100\), more than 10,000"):
        expand([f"dataset.batch_size={huge}", f"preprocess.img_size={','.join(str(v) for v in range(100))}"])
    _, points = expand(["k=a,b"])
    with pytest.raises(SweepError, match=r"20,000 runs \(2 x 10000 rounds\)"):
        round_order(points, 10_000)
    assert len(round_order(points, 5_000)) == 10_000
