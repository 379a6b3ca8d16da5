"""benchmarks/peers/drivers/run_yolov7_detect.py: the official YOLOv7 loop's program, as far as it runs without the
official code (its arguments); the loop itself runs only in the official code's venv."""
import os
import subprocess
import sys

from benchmarks.peers import venvs
from benchmarks.peers.yolov7_official.facts import PEER_DISTRIBUTION
from utils.core.errors import ExitStatus

PEER = venvs.DRIVERS / "run_yolov7_detect.py"


def test_the_peer_program_imports_no_package_named_models_or_utils_before_it_runs(tmp_path):
    """Its `models` and `utils` must be the official code's: with packages of those names that refuse to be
    imported first on its path, the peer program still parses its arguments."""
    for name in ("models", "utils"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"raise ImportError('{name} imported at start-up')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    shown = subprocess.run([sys.executable, str(PEER), "--help"], capture_output=True, text=True, env=env, timeout=60)
    assert shown.returncode == ExitStatus.OK and "--image-list" in shown.stdout, shown.stderr
    refused = subprocess.run([sys.executable, str(PEER), "--threads", "2"], capture_output=True, text=True, env=env,
                             timeout=60)
    assert refused.returncode == ExitStatus.USAGE and "required" in refused.stderr


def test_it_looks_for_the_official_code_under_the_pinned_distribution_name():
    assert f'OFFICIAL = "{PEER_DISTRIBUTION}"' in PEER.read_text()
