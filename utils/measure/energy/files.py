"""Energy's files in the run directory (utils/storage/layout.py names the harness's own)."""
from __future__ import annotations

from utils.storage.layout import PLOTS_DIR

ENERGY = "energy.csv"  # joules per step and RAPL domain, the `run` row one bracket per timed pass
ENERGY_PLOT = f"{PLOTS_DIR}/energy.png"
