"""Parsing --sweep arguments (utils/commands/sweep/plan.py): the product of points in argument order with readable
names, node as a placement, rounds in alternating order, and a sweep too large to run refused before it is expanded."""
import pytest

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


def test_a_sweep_too_large_to_run_is_refused_before_it_is_expanded():
    huge = ",".join(str(value) for value in range(1, 2001))
    with pytest.raises(SweepError, match=r"200,000 runs \(2000 x 100\), more than 10,000"):
        expand([f"dataset.batch_size={huge}", f"preprocess.img_size={','.join(str(v) for v in range(100))}"])
    _, points = expand(["k=a,b"])
    with pytest.raises(SweepError, match=r"20,000 runs \(2 x 10000 rounds\)"):
        round_order(points, 10_000)
    assert len(round_order(points, 5_000)) == 10_000
