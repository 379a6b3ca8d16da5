"""The layout of outputs/<run_id>/: every file name of the harness's is defined here and nowhere else; a
measurement of utils/measure/registry.py names its own in its folder (utils/measure/<name>/files.py)."""
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
IMAGES_DIR = "images"
# What the libraries detbench drives log (NNCF, OpenVINO, ONNX Runtime, Ray, LoadGen), kept off the console.
DEPENDENCY_LOG = "logs/dependencies.log"
PLOTS_DIR = "plots"

LAYER_TYPES_PLOT = f"{PLOTS_DIR}/layer_types.png"
TOP_LAYERS_PLOT = f"{PLOTS_DIR}/top_layers.png"
STEP_LATENCY_PLOT = f"{PLOTS_DIR}/step_latency.png"

LAYER_FILES = (LAYER_TIMER, LAYER_TYPES, LAYER_TREE)

# TensorBoard: event files, and the profiled batch's trace under the name the profiler plugin looks for.
TENSORBOARD_DIR = "tensorboard"
TENSORBOARD_TRACE = f"{TENSORBOARD_DIR}/profiled_batch.pt.trace.json"

# The operators each call path ran in the profiled batch.
LAYER_OPS = "layer_ops.csv"

# report.html: the run on one self-contained page
REPORT = "report.html"

# Sweep directories (<run.output_dir>/<sweep id>/, one run directory per point) and compare's output folder.
SWEEP_CSV = "sweep.csv"
SWEEP_JSON = "sweep.json"
SWEEP_PLOT = "sweep.png"
SWEEP_REPORT = "report.html"
SWEEP_LOGS_DIR = "logs"  # each point's console output: <point>.stdout.txt, <point>.stderr.txt
COMPARE_CSV = "compare.csv"
COMPARE_HTML = "compare.html"

# Below the layer (profiling.*): py-spy's timed stacks for speedscope (on the steps' clock), where each step's
# time went (Python, native torch/oneDNN, OpenVINO, ONNX Runtime, other native, waiting), the CPU's counters per
# timed pass and thread, and oneDNN's verbose output of the kernels batch.
SAMPLES_SPEEDSCOPE = "samples.speedscope.json"
NATIVE_TIME = "native_time.csv"
CPU_COUNTERS = "cpu_counters.csv"
ONEDNN_VERBOSE = "onednn_verbose.txt"

# Per-class accuracy of the accuracy pass (summary.json `accuracy` holds the totals).
ACCURACY = "accuracy.csv"

# Instance masks of segmenting families (Mask R-CNN): one 16-bit PNG label map per image, values = rows.
MASKS_DIR = "masks"

# MLPerf LoadGen's own logs of a scenario run (benchmark.scenario other than single_stream), under the names
# LoadGen gives them (its default prefix mlperf_log_).
LOADGEN_DIR = "loadgen"
LOADGEN_SUMMARY = f"{LOADGEN_DIR}/mlperf_log_summary.txt"
LOADGEN_DETAIL = f"{LOADGEN_DIR}/mlperf_log_detail.txt"
LOADGEN_ACCURACY = f"{LOADGEN_DIR}/mlperf_log_accuracy.json"
LOADGEN_TRACE = f"{LOADGEN_DIR}/mlperf_log_trace.json"

# benchmark.scenario cameras: one row per camera, and one per frame a camera handed on (grown as frames end).
CAMERAS = "cameras.csv"
CAMERA_FRAMES = "cameras_frames.csv"
CAMERAS_PLOT = f"{PLOTS_DIR}/cameras.png"
CAMERAS_CLIP = "cameras.mp4"  # the first camera's annotated frames; without an encoder, PNGs in cameras/
