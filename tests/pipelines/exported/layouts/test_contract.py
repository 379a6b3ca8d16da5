"""pipelines/exported/layouts/contract.py: the helpers every layout's read() is built from."""
from pipelines.exported.layouts.contract import (ASSUMED, SIGNED, Reading, anchor_count, fixed, named,
                                                 named_as_exported, names_fit)
from tests.support.exported_files import exported


def test_only_a_positive_int_is_a_fixed_size():
    assert [fixed(size) for size in (7, 0, -1, "N", "?")] == [7, None, None, None, None]


def test_outputs_are_found_by_name_all_or_none_and_by_an_exporters_prefix():
    file = exported([("boxes", (1, 10, 4)), ("graph2_scores", (1, 10, 3))])
    assert named(file, "boxes") == [0] and named(file, "boxes", "scores") is None
    assert named_as_exported(file, ["scores", "boxes"]) == [1, 0]
    assert named_as_exported(file, ["boxes", "labels"]) is None


def test_names_fit_where_the_metadata_counts_these_classes_or_names_none():
    assert names_fit(exported([]), 80)
    assert names_fit(exported([], metadata={"names": {0: "a", 1: "b"}}), 2)
    assert not names_fit(exported([], metadata={"names": {0: "a", 1: "b"}}), 3)


def test_anchor_count_counts_partial_cells_of_every_stride():
    assert anchor_count(64, 64, (8, 16, 32)) == 64 + 16 + 4
    assert anchor_count(70, 64, (32,), per_cell=2) == 2 * 3 * 2  # 70 / 32 rounds up to 3 rows


def test_a_reading_is_assumed_only_at_the_assumed_confidence():
    assert Reading("x", 1, "why", ASSUMED).assumed and not Reading("x", 1, "why", SIGNED).assumed
