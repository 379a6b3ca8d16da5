"""Scenarios by name (benchmark.scenario): each a folder of utils/scenarios/ whose `scenario.py` holds its SCENARIO
(utils/scenarios/contract.py), one line here. The composition root asks `scenario_for` and names none; the config
schema lists the same names (utils.config.schema.SCENARIOS), and a test holds the two together."""
from __future__ import annotations

import importlib

from utils.scenarios.contract import Scenario

FOLDERS = {
    "single_stream": "single_stream",
    "multi_stream": "loadgen",
    "server": "loadgen",
    "offline": "loadgen",
    "cameras": "cameras",
}


def scenario_for(name: str) -> Scenario:
    """The scenario benchmark.scenario names (the config refused any other name)."""
    return importlib.import_module(f"utils.scenarios.{FOLDERS[name]}.scenario").SCENARIO


def readers_of(section: str) -> list[str]:
    """The scenarios that read a config section only scenarios read (benchmark.loadgen, cameras)."""
    return [name for name in FOLDERS if section in scenario_for(name).reads_sections]
