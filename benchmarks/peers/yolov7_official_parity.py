"""detbench against the official YOLOv7 detect.py loop: speed and detections, on the same calibrated weights.

    .venv/bin/python benchmarks/peers/yolov7_official_parity.py [--rounds 3] [--threads 2]
        [--runtime onnxruntime:fp32] ...

The program lives in the package benchmarks/peers/yolov7_official/ (its docstring, printed by --help, says what it
measures).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.peers.yolov7_official.command import main  # noqa: E402
from utils.core.errors import command_status  # noqa: E402

if __name__ == "__main__":
    sys.exit(command_status(main))
