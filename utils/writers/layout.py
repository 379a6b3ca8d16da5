"""The layout of outputs/<run_id>/: every file name of a run directory is defined here and nowhere else."""
from __future__ import annotations

CONFIG = "config.yaml"
ENV = "env.json"
SUMMARY = "summary.json"
DETECTIONS = "detections.csv"
SKIPPED = "skipped.csv"
STEPS_TIMER = "steps_timer.csv"
STEPS_SUMMARY = "steps_summary.csv"
LAYER_TIMER = "layer_timer.csv"
LAYER_TYPES = "layer_types.csv"
LAYER_TREE = "layer_tree.txt"
TRACE = "trace.json"
PROFILER_OPS = "profiler_ops.csv"
ENERGY = "energy.csv"
MEMORY = "memory.csv"
MEMORY_STEPS = "memory_steps.csv"
IMAGES_DIR = "images"
PLOTS_DIR = "plots"

LAYER_TYPES_PLOT = f"{PLOTS_DIR}/layer_types.png"
TOP_LAYERS_PLOT = f"{PLOTS_DIR}/top_layers.png"
STEP_LATENCY_PLOT = f"{PLOTS_DIR}/step_latency.png"
MEMORY_PLOT = f"{PLOTS_DIR}/memory_timeline.png"
ENERGY_PLOT = f"{PLOTS_DIR}/energy.png"

LAYER_FILES = (LAYER_TIMER, LAYER_TYPES, LAYER_TREE)

# Instance masks of segmenting families (Mask R-CNN): one 16-bit PNG label map per image, values = rows.
MASKS_DIR = "masks"
