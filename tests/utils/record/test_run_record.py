"""A warning joins a run one way, RunRecord.warn: each once, in the order first given."""
from utils.record.run_record import RunRecord


def test_each_warning_once_in_the_order_first_given():
    record = RunRecord.__new__(RunRecord)
    record.warnings = []
    record.warn("threads above the CPUs", "noisy")
    record.warn("noisy", "", "cold batch")
    assert record.warnings == ["threads above the CPUs", "noisy", "cold batch"]
