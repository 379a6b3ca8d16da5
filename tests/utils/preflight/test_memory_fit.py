"""The memory estimate's refusal shows the estimate and what it is made of, and benchmark.memory.check lifts it."""
import json

import pytest

from tests.support.helpers import quick_args, run_benchmark
from utils.assembly import composition
from utils.preflight.memory_fit import MemoryFit, MemoryRefused, check_fits

MiB = 2**20


def test_refusal_shows_the_estimate_its_parts_and_the_key():
    with pytest.raises(MemoryRefused) as info:
        check_fits(MemoryFit(2 * MiB, 100.0), {"preprocess.img_size": 640}, 640 * 640, 2, 64 * MiB, "available")
    message = str(info.value)
    # 2 x (1.5 x (2,097,152 + 100 x 409,600) + 12 x 409,600) = 139,001,856 bytes = 132.6 MiB
    assert "needs about 132.6 MiB" in message
    assert "2 x (1.5 x (2.0 MiB fixed + 100.0 bytes/pixel x 409,600 pixels of layer outputs) + 12 bytes/pixel of " \
           "input)" in message
    assert "set benchmark.memory.check: false (--set benchmark.memory.check=false)" in message


QUICK = quick_args(64, "dataset.limit=2", "benchmark.repeats=1", "benchmark.layer_timing=false", "outputs.plots=false",
                   "outputs.save_images=false", "outputs.report=false")


def run(tmp_path, capsys, *overrides):
    code, _ = run_benchmark(QUICK, tmp_path, *overrides, run_id="r")
    return code, capsys.readouterr().err


@pytest.mark.slow
def test_the_key_lifts_the_refusal(tmp_path, capsys, monkeypatch):
    # The machine is said to have 1 MiB left: the estimate refuses even yolov7-tiny at 64 pixels.
    monkeypatch.setattr(composition, "available_memory", lambda: (MiB, "available on this machine"))
    code, err = run(tmp_path, capsys)
    assert code == 2 and "benchmark.memory.check: false" in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()
    code, err = run(tmp_path, capsys, "benchmark.memory.check=false")
    assert code == 0, err
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["status"] == "complete"
