"""What a run says of accuracy-aware int8 (utils/checks/int8/repair_statement.py), from hand-made summary entries."""
from __future__ import annotations

from utils.checks.int8.repair_statement import control_entry, statement, warnings

BASE = {"budget": 0.01, "figure": "mAP@0.5:0.95 drop against the labels",
        "judged_on": "50 calibration images (never scored by the run's verdict)", "operations": 217}


def entry(**values):
    return dict(BASE, **values)


def test_control_entry_is_read_from_the_runtimes_preparation():
    assert control_entry({"preparation": {"accuracy_control": {"outcome": "x"}}}) == {"outcome": "x"}
    assert control_entry({"preparation": {}}) is None and control_entry({}) is None


def test_a_repair_states_the_drop_before_and_after_the_operations_and_the_speed_given_up():
    text = statement(entry(outcome="within_budget", drop_before=0.0174, drop_after=0.0052,
                           reverted=[{"name": "/model.23/Sub_1", "cost": 0.0198, "operations": 1},
                                     {"name": "/model.23", "cost": 0.0197, "operations": 46}],
                           forward_ms={"fp32": 8.0, "int8_plain": 6.0, "int8_chosen": 6.5}))
    assert "plain int8 +0.0174 against the budget 0.01" in text
    assert "47 of 217 operations returned to float (/model.23/Sub_1 (+0.020), /model.23 (+0.020)): +0.0052" in text
    # (6.5 - 6.0) / (8.0 - 6.0): a quarter of int8's gain
    assert "forward 6.00 ms plain, 6.50 ms now, fp32 8.00 ms (25% of int8's gain given up)" in text
    assert warnings(entry(outcome="within_budget", drop_before=0.0174, drop_after=0.0052, reverted=[])) == []


def test_within_the_budget_as_quantized_says_nothing_was_returned():
    text = statement(entry(outcome="within_budget", drop_before=0.004, drop_after=0.004, reverted=[]))
    assert text.endswith("plain int8 +0.0040 against the budget 0.01; nothing returned to float")


def test_a_collapse_is_a_warning_that_names_the_costliest_operations():
    found = warnings(entry(outcome="not_faster", drop_before=0.64, drop_after=0.64, reverted=[],
                           worst=[{"name": "/model.23/Concat_3", "cost": 0.6, "operations": 1},
                                  {"name": "output output0", "cost": 0.5, "operations": 1}]))
    assert found[0].startswith("int8 lost 0.64 mAP on the calibration images")
    assert "/model.23/Concat_3 (+0.600), output output0 (+0.500)" in found[0]
    assert "ran no faster than fp32" in found[1] and "Deploy fp32 or bf16" in found[1]


def test_a_slip_over_the_budget_is_not_called_a_collapse():
    assert warnings(entry(outcome="within_budget", drop_before=0.05, drop_after=0.005, reverted=[])) == []


def test_not_judged_says_why():
    text = statement(entry(outcome="not_judged", drop_before=None, drop_after=None))
    assert "not judged" in text and "none" in text
    assert warnings(entry(outcome="not_judged", drop_before=None, drop_after=None)) == []


def test_a_repair_faster_than_the_plain_int8_gave_nothing_up():
    text = statement(entry(outcome="not_faster", drop_before=0.64, drop_after=0.04,
                           reverted=[{"name": "/model.23/Concat_3", "cost": 0.69, "operations": 1}],
                           forward_ms={"fp32": 35.0, "int8_plain": 25.0, "int8_chosen": 22.0}))
    assert "(none of int8's gain given up)" in text
    assert "the faster step that came closest is deployed" in text
