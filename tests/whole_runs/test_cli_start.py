"""The command line answers `--help` and a mistake in the config before the heavy libraries load, a YOLO run
loads only the heavy libraries it uses, and a Python without the project's dependencies gets a setup
instruction instead of a traceback.

Structure, not time: each case runs benchmark.py as a program in a fresh interpreter and reports which
modules it had imported when it exited (benchmarks/overhead/cli_latency.py measures the seconds).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT, SAMPLES
from utils.core.errors import ExitStatus

HEAVY = ("torch", "torchvision", "cv2", "numpy", "pandas", "matplotlib", "PIL", "onnxruntime", "openvino", "onnx")

# Runs benchmark.py as `python benchmark.py ARGS` would (its __main__ block included), then lists the heavy
# modules that were imported on the way.
PROBE = """import json, runpy, sys
sys.argv = ["benchmark.py", *json.loads(sys.argv[1])]
sys.path.insert(0, {root!r})
try:
    runpy.run_path({script!r}, run_name="__main__")
    status = 0
except SystemExit as stop:
    status = stop.code
print(json.dumps({{"status": status, "heavy": sorted(m for m in {heavy!r} if m in sys.modules)}}))
"""


def probe(arguments: list[str], cwd: Path) -> tuple[dict, str]:
    code = PROBE.format(root=str(ROOT), script=str(ROOT / "benchmark.py"), heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code, json.dumps(arguments)], cwd=cwd, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_help_loads_no_heavy_library(tmp_path):
    result, _ = probe(["--help"], tmp_path)
    assert result == {"status": 0, "heavy": []}


@pytest.mark.parametrize("case", ["unknown key", "bad value", "yaml error", "missing config", "missing dataset",
                                  "dataset is a file", "launcher without sweep"])
def test_config_mistakes_are_answered_before_heavy_libraries_load(tmp_path, case):
    samples = str(ROOT / "configs" / "samples.yaml")
    arguments = {
        "unknown key": ["--config", write(tmp_path / "c.yaml", "model:\n  archh: yolov7-tiny\n")],
        "bad value": ["--config", samples, "--set", "dataset.batch_size=0"],
        "yaml error": ["--config", write(tmp_path / "c.yaml", "model: [yolov7\n")],
        "missing config": ["--config", str(tmp_path / "absent.yaml")],
        "missing dataset": ["--config", samples, "--set", f"dataset.path={tmp_path / 'absent'}"],
        "dataset is a file": ["--config", samples, "--set", f"dataset.path={write(tmp_path / 'f.jpg', 'x')}"],
        "launcher without sweep": ["--config", samples, "--launcher", "ray"],
    }[case]
    result, stderr = probe(arguments, tmp_path)
    assert result == {"status": ExitStatus.USAGE, "heavy": []}, stderr
    assert stderr.startswith("error: ") and "Traceback" not in stderr


@pytest.mark.slow
def test_a_yolo_run_without_plots_loads_neither_torchvision_nor_matplotlib(tmp_path):
    # torchvision's import brings torch._dynamo (NMS comes from its compiled kernel instead, pipelines/boxes/kernels.py)
    # and matplotlib is for the plots: together most of a second of every start, tune's runs included. onnx (0.6 s,
    # ml_dtypes' mostly) is for exporting and quantizing, which a torch run does neither of.
    result, stderr = probe(["--config", str(ROOT / "configs" / "samples_tiny.yaml"), "--set", "preprocess.img_size=64",
                            "--set", f"dataset.path={SAMPLES}", "--set", "dataset.limit=2",
                            "--set", f"run.output_dir={tmp_path}",
                            "--set", "outputs.plots=false", "--set", "outputs.save_images=false"], tmp_path)
    assert result["status"] == 0, stderr
    assert "torch" in result["heavy"] and "pandas" in result["heavy"]  # the run did run, and wrote its tables
    assert "torchvision" not in result["heavy"] and "matplotlib" not in result["heavy"]
    assert "onnx" not in result["heavy"]


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> Path:
    """A real interpreter with none of the project's dependencies: a fresh venv without packages."""
    folder = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    python = folder / "bin" / "python"
    missing = subprocess.run([str(python), "-c", "import yaml"], capture_output=True)
    assert missing.returncode != 0, "the bare venv can import yaml: it is not bare"
    return python


@pytest.mark.parametrize("arguments, module", [
    (["--config", "configs/samples.yaml"], "yaml"),
    (["compare", "outputs/a", "outputs/b"], "pandas"),
])
def test_a_python_without_the_dependencies_is_told_how_to_set_up(bare_python, arguments, module):
    done = subprocess.run([str(bare_python), "benchmark.py", *arguments], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == ExitStatus.FAILED
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("error: ") and len(done.stderr.strip().splitlines()) == 1
    assert f"cannot import {module!r}" in done.stderr
    assert str(bare_python) in done.stderr  # which interpreter was used
    assert ".venv/bin/python" in done.stderr
    # Where the checkout has no environment yet, the message also says how to make one.
    assert ("make install" in done.stderr) == (not (ROOT / ".venv" / "bin" / "python").exists())


def test_a_python_without_the_dependencies_still_shows_help(bare_python):
    done = subprocess.run([str(bare_python), "benchmark.py", "--help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == ExitStatus.OK and "--config" in done.stdout, done.stderr
