"""Hook overhead of ModelTiming, measured apart from any run: interleaved clean and hooked forwards.

    .venv/bin/python benchmarks/overhead/hook_overhead.py --arch yolov7 --img-size 640 --rounds 10

Interleaving (clean, hooked, clean, hooked, ...) spreads the machine's drift over both sides; the figure
is the median of the per-round ratios. Each hooked forward follows one untimed hooked forward, because the
first call of every path also records shapes and MACs. Prints the medians, the ratio and the unattributed share.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("KINETO_LOG_LEVEL", "5")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from benchmarks.common.arguments import model_arguments  # noqa: E402
from models import build_model, fuse_model  # noqa: E402
from utils.core.errors import command_status  # noqa: E402
from utils.measure.layers.model_timing import ModelTiming  # noqa: E402


def timed_forward(model: torch.nn.Module, batch: torch.Tensor) -> float:
    start = time.perf_counter_ns()
    with torch.inference_mode():
        model(batch)
    return (time.perf_counter_ns() - start) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    model_arguments(parser, arch="yolov7", img_size=640, rounds=10)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()

    model = fuse_model(build_model(args.arch, seed=0)).eval()
    batch = torch.rand(args.batch, 3, args.img_size, args.img_size)
    for _ in range(args.warmup):
        timed_forward(model, batch)
    clean, hooked, unattributed, totals = [], [], [], []
    for _ in range(args.rounds):
        clean.append(timed_forward(model, batch))
        with ModelTiming(model) as timing:
            timed_forward(model, batch)  # first hooked call records shapes and MACs, as the run's first batch does
            timing.reset()
            hooked.append(timed_forward(model, batch))
        snapshot = timing.snapshot()
        unattributed.append(snapshot.unattributed_ms)
        totals.append(snapshot.model_total_ms)
    ratios = [h / c for h, c in zip(hooked, clean)]
    calls = sum(r.calls for r in snapshot.records if r.kind == "layer")
    print(f"{args.arch} at {args.img_size}, batch {args.batch}, {torch.get_num_threads()} threads, "
          f"{args.rounds} interleaved rounds after {args.warmup} warm-ups")
    print(f"clean forward   median {statistics.median(clean):9.2f} ms  (min {min(clean):.2f}, max {max(clean):.2f})")
    print(f"hooked forward  median {statistics.median(hooked):9.2f} ms  (min {min(hooked):.2f}, max {max(hooked):.2f})")
    print(f"overhead ratio  median {statistics.median(ratios):9.4f}     (per-round min {min(ratios):.4f}, "
          f"max {max(ratios):.4f})")
    print(f"module calls per forward {calls}; unattributed median {statistics.median(unattributed):.2f} ms "
          f"of {statistics.median(totals):.2f} ms ({statistics.median(unattributed) / statistics.median(totals):.2%})")


if __name__ == "__main__":
    sys.exit(command_status(main))
