"""Memory's files in the run directory (utils/storage/layout.py names the harness's own). The two tables grow
through the run's journal as the passes end, so a killed run keeps them."""
from __future__ import annotations

from utils.storage.layout import PLOTS_DIR

MEMORY = "memory.csv"  # the samples: RSS and, where read, PSS, each labelled by its step
MEMORY_STEPS = "memory_steps.csv"  # when each step ran, on the samples' clock
MEMORY_PLOT = f"{PLOTS_DIR}/memory_timeline.png"
