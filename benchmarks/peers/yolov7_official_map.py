"""detbench's mAP beside the official test.py's json scored by pycocotools
(benchmarks/peers/yolov7_official/map_check.py).

    .venv/bin/python benchmarks/peers/yolov7_official_map.py [--data ../shared/data/shapes] [--img-size 320]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.peers.yolov7_official.map_check import main  # noqa: E402
from utils.core.errors import command_status  # noqa: E402

if __name__ == "__main__":
    sys.exit(command_status(main))
