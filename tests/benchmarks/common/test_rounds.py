"""benchmarks/common/rounds.py: the orders rounds run their sides in."""
from benchmarks.common.rounds import alternated, rotated


def test_alternated_reverses_every_other_round_and_leaves_the_sides_as_they_were():
    sides = ("peer", "detbench", "other")
    assert [alternated(sides, number) for number in range(3)] == [
        ["peer", "detbench", "other"], ["other", "detbench", "peer"], ["peer", "detbench", "other"]]
    assert sides == ("peer", "detbench", "other")


def test_rotated_starts_each_round_one_side_later():
    sides = ["a", "b", "c"]
    assert [rotated(sides, number) for number in range(4)] == [
        ["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]
