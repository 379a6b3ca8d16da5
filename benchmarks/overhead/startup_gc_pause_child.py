"""One fresh start of a run for benchmarks/overhead/startup_gc_pause.py: import the harness and prepare a run of the
config (the network built and its runtime prepared), with the garbage collector paused while it loads or left on.

    .venv/bin/python benchmarks/overhead/startup_gc_pause_child.py paused|on CONFIG OVERRIDES_JSON

Prints one JSON line: the seconds from the first import of the harness to the prepared run, and the full
collections the process made. Only what the interpreter has loaded already is imported before the clock starts, so
the figure is the harness's start alone.
"""
import contextlib
import gc
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
paused, config_file, overrides = sys.argv[1] == "paused", sys.argv[2], json.loads(sys.argv[3])
started = time.perf_counter()
from utils.assembly.collector import loading_without_collection  # noqa: E402

with (loading_without_collection() if paused else contextlib.nullcontext()):
    from utils.config.schema import load_config
    from utils.assembly.composition import Benchmark

    benchmark = Benchmark(load_config(config_file, overrides), config_file)
    benchmark.prepare()
print(json.dumps({"seconds": time.perf_counter() - started, "full_collections": gc.get_stats()[2]["collections"]}))
