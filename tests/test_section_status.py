"""A recorder's section status, spelled once (utils/record/section_status.py)."""
from utils.record.section_status import MEASURED, measured


def test_only_a_section_whose_status_is_measured_holds_measurements():
    assert measured({"status": MEASURED, "domains": ["package-0"]})
    assert not measured({"status": "unavailable", "reason": "no powercap directory"})
    assert not measured({}) and not measured(None)
    assert not measured({"pss_status": MEASURED})  # another key's status is not the section's
