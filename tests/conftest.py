"""Fixtures shared by the test modules. Plain constants are in tests/paths.py (ROOT, SAMPLES, SHAPES, CONFIGS)
and plain helpers in tests/helpers.py (quick_args, run_benchmark, ...): import those; pytest hands these fixtures
to any test that names them.

The quick loop leaves out the slow tests (whole runs of the command line, subprocesses, exports):
`.venv/bin/python -m pytest -m "not slow"`. `make test` runs everything."""
import pytest


@pytest.fixture(scope="session", autouse=True)
def cache_of_this_session(tmp_path_factory):
    """Exports, int8 models and their accuracy-aware choices are cached in a folder of this session's, never the
    user's ~/.cache/detbench: a suite on a fresh clone and one on a used machine then do the same work. Runs in
    subprocesses inherit it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        yield


@pytest.fixture(scope="module")
def network():
    """yolov7-tiny on seeded random weights (seed 0), loaded once per test module. A module that needs another
    network (trained weights, another seed) defines its own `network` fixture, which takes precedence."""
    from pipelines.yolo.family import load_network

    return load_network("yolov7-tiny", None, seed=0)



@pytest.fixture
def cli(tmp_path):
    """Starts benchmark.py in processes of their own (tests.helpers.Cli): `cli(*overrides, holds=..., taps=...,
    nohup=...)`. Whatever a test left going is killed with its process group in teardown."""
    from tests.helpers import Cli

    runs = []

    def start(*overrides: str, **options):
        runs.append(Cli(tmp_path, *overrides, **options))
        return runs[-1]

    yield start
    for run in runs:
        run.kill()
