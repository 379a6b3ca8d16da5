"""The run record's sections, typed once (utils/record/sections.py): the status that says whether a section holds
measurements, and the shapes recorders build and writers read."""
from typing import get_args

from tests.support.helpers import section_shape_errors
from utils.record import sections
from utils.measure.memory.section import MemorySection
from utils.record.sections import MEASURED, SectionStatus, measured


def test_only_a_section_whose_status_is_measured_holds_measurements():
    assert measured({"status": MEASURED, "domains": ["package-0"]})
    assert not measured({"status": "unavailable", "reason": "no powercap directory"})
    assert not measured({}) and not measured(None)
    assert not measured({"pss_status": MEASURED})  # another key's status is not the section's


def test_every_status_constant_is_a_declared_status():
    constants = {sections.MEASURED, sections.UNAVAILABLE, sections.PARTIAL, sections.DISABLED,
                 sections.NOT_MEASURED_YET}
    assert constants == set(get_args(SectionStatus))


def test_a_key_or_status_declared_nowhere_is_named():
    section = {"status": "measured", "peak_rss_mib": 1.0, "peak_rss_mb": 1.05, "peak_vms_mib": 2.0}
    assert section_shape_errors(section, MemorySection) == ["MemorySection declares no key 'peak_vms_mib'"]
    assert section_shape_errors({"status": "done"}, MemorySection) == ["status 'done' is no SectionStatus"]


def test_a_missing_required_key_and_an_unknown_verdict_are_named():
    from utils.record.sections import AgreementSection
    assert section_shape_errors({"verdict": "fine"}, AgreementSection) == ["verdict 'fine' is no Verdict"]
    assert section_shape_errors({"images": 3}, AgreementSection) == ["AgreementSection requires 'verdict'"]


def test_the_verdict_type_holds_every_verdict_the_checks_give():
    from utils.checks.agreement import matching as agreement
    from utils.checks.accuracy import label_free
    given = {agreement.EQUAL, agreement.CLOSE, agreement.DIFFERENT, label_free.WITHIN_BUDGET, label_free.DIFFERENT,
             label_free.UNDECIDED}
    assert given == set(get_args(sections.Verdict))
