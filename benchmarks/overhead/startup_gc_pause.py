"""What a run's start costs with the garbage collector paused while it loads (utils/assembly/collector.py, as
benchmark.py does) against the collector left on.

    .venv/bin/python benchmarks/overhead/startup_gc_pause.py [--pairs 8] [--config configs/samples_tiny.yaml]
        [--set KEY=VALUE ...]

Each pair is two fresh processes, in alternating order, that import the harness and prepare a run of the config
(the network built and its runtime prepared: everything before the first timed batch): one inside
loading_without_collection(), one with the collector on. Prints each pair's seconds and full collections, the
median of each way and the median ratio paused/on with its lowest and highest pair. Figures measured so far:
benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.rounds import alternated  # noqa: E402

CHILD = Path(__file__).resolve().parent / "startup_gc_pause_child.py"  # one start, in a fresh process


def start(paused: bool, config: str, overrides: list[str]) -> dict:
    done = subprocess.run([sys.executable, str(CHILD), "paused" if paused else "on", config, json.dumps(overrides)],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--config", default=str(ROOT / "configs" / "samples_tiny.yaml"))
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    ratios, seconds = [], {True: [], False: []}
    with tempfile.TemporaryDirectory() as folder:
        overrides = [*args.overrides, f"run.output_dir={folder}"]
        for pair in range(args.pairs):
            order = alternated((True, False), pair)
            figures = {paused: start(paused, args.config, overrides) for paused in order}
            for paused in order:
                seconds[paused].append(figures[paused]["seconds"])
            ratios.append(figures[True]["seconds"] / figures[False]["seconds"])
            print(f"pair {pair + 1}: paused {figures[True]['seconds']:.2f} s "
                  f"({figures[True]['full_collections']} full collections), on {figures[False]['seconds']:.2f} s "
                  f"({figures[False]['full_collections']}), x{ratios[-1]:.3f}", flush=True)
    print(f"start, median of {args.pairs}: paused {statistics.median(seconds[True]):.2f} s, "
          f"on {statistics.median(seconds[False]):.2f} s")
    print(f"paused/on: median x{statistics.median(ratios):.3f} (pairs x{min(ratios):.3f} to x{max(ratios):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
