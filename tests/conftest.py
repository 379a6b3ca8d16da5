"""Fixtures shared by the test modules. Plain constants are in tests/paths.py (ROOT, SAMPLES, SHAPES, CONFIGS)
and plain helpers in tests/helpers.py (quick_args, run_benchmark, ...): import those; pytest hands these fixtures
to any test that names them.

The quick loop leaves out the slow tests (whole runs of the command line, subprocesses, exports):
`.venv/bin/python -m pytest -m "not slow"`. `make test` runs everything."""
import pytest


@pytest.fixture(scope="module")
def network():
    """yolov7-tiny on seeded random weights (seed 0), loaded once per test module. A module that needs another
    network (trained weights, another seed) defines its own `network` fixture, which takes precedence."""
    from pipelines.yolo.family import load_network

    return load_network("yolov7-tiny", None, seed=0)

