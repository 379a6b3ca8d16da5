"""benchmark.py with one slow step injected, for the regression gate's tests only: before every NMS the YOLO
pipeline sleeps SLOW_STEP_MS (default 250) milliseconds, so the run is reliably slower than the same
configuration without it, whatever else the machine is doing.

    python tests/support/slow_step_run.py --config ... [--set ...]
"""
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmark import main  # noqa: E402
from pipelines.yolo.pipeline import YoloPipeline  # noqa: E402

DELAY_S = float(os.environ.get("SLOW_STEP_MS", "250")) / 1000.0
_suppress = YoloPipeline.suppress


def slow_suppress(self, forwarded):
    time.sleep(DELAY_S)
    return _suppress(self, forwarded)


if __name__ == "__main__":
    YoloPipeline.suppress = slow_suppress
    sys.exit(main(sys.argv[1:]))
