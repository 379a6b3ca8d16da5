"""Measurements by folder. A new measurement is a folder beside these whose `measurement.py` holds its
MEASUREMENT (utils/measure/contract.py), and one line here naming the folder; the harness asks `measurements()`.

The order is the summary's and the console's: each measurement's key and lines in turn. report.html places a
measurement's section by its `after`, and draws the plots in the page's order.
"""
from __future__ import annotations

import importlib

from utils.measure.contract import Measurement

FOLDERS = (
    "energy",
    "memory",
    "contention",
)

MEASUREMENTS: tuple[Measurement, ...] = tuple(
    importlib.import_module(f"utils.measure.{folder}.measurement").MEASUREMENT for folder in FOLDERS)


def measurements() -> tuple[Measurement, ...]:
    """Every registered measurement, in registry order (read at each call, so a test may register one)."""
    return MEASUREMENTS
