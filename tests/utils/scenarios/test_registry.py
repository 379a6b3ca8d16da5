"""Every scenario the config accepts has its folder behind the contract, and only those."""
from utils.config.schema import SCENARIOS
from utils.scenarios.contract import Scenario
from utils.scenarios.registry import FOLDERS, readers_of, scenario_for


def test_the_registry_and_the_schema_name_the_same_scenarios():
    assert tuple(FOLDERS) == SCENARIOS
    assert all(isinstance(scenario_for(name), Scenario) for name in SCENARIOS)


def test_the_sections_only_scenarios_read_are_read_by_the_right_ones():
    assert readers_of("benchmark.loadgen") == ["multi_stream", "server", "offline"]
    assert readers_of("cameras") == ["cameras"]
    assert scenario_for("single_stream").reads_images and not scenario_for("cameras").reads_images
