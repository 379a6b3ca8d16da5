"""What an open perf_event counter costs each page fault of the thread it counts.

    .venv/bin/python benchmarks/overhead/fault_counter_tax.py [--rounds 15] [--megabytes 256]

The thread maps fresh anonymous memory and writes one byte per 4 KiB page, so every write faults and the kernel
zeroes a page; the time per page is the cost of a fault. Rounds interleave four settings on the same thread: no
counter open, a minor-fault counter, every software counter detbench's CPU counters opened before they left
page faults to /proc (task clock, context switches, CPU migrations, minor and major faults), and the software
counters they open now. Prints the median over rounds (each round's figure is the median of 5 passes) and the
range. A measurement, never a test.
"""
from __future__ import annotations

import argparse
import mmap
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from utils.measure.below_layer.perf_events import (COUNTERS, EVENTS, TYPE_SOFTWARE, PerfRefused, enable,  # noqa: E402
                                         open_counter)

PAGE = 4096
SETTINGS = {
    "no counter": (),
    "minor-fault counter": ("minor_faults",),
    "all software counters": ("task_clock_ns", "context_switches", "cpu_migrations", "minor_faults", "major_faults"),
    "detbench's counters now": tuple(name for name in COUNTERS if EVENTS[name][0] == TYPE_SOFTWARE),
}


def ns_per_fault(size: int) -> float:
    region = mmap.mmap(-1, size)
    pages = np.frombuffer(region, dtype=np.uint8)
    start = time.perf_counter_ns()
    pages[::PAGE] = 1
    elapsed = time.perf_counter_ns() - start
    del pages
    region.close()
    return elapsed / (size // PAGE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--megabytes", type=int, default=256)
    args = parser.parse_args()
    size, tid = args.megabytes << 20, threading.get_native_id()
    for _ in range(3):
        ns_per_fault(size)
    figures: dict[str, list[float]] = {name: [] for name in SETTINGS}
    for _ in range(args.rounds):
        for name, counters in SETTINGS.items():
            opened = []
            try:
                for counter in counters:
                    opened.append(open_counter(counter, tid))
                    enable(opened[-1])
            except PerfRefused as refused:
                sys.exit(f"fault_counter_tax: the kernel refused a software counter ({refused}); nothing to measure")
            figures[name].append(statistics.median(ns_per_fault(size) for _ in range(5)))
            for fd in opened:
                os.close(fd)
    bare = statistics.median(figures["no counter"])
    print(f"fault_counter_tax: {args.rounds} interleaved rounds, {size // PAGE} faults per pass")
    for name, values in figures.items():
        median = statistics.median(values)
        print(f"  {name:24s} {median:7.1f} ns per fault (rounds {min(values):.1f}-{max(values):.1f}), "
              f"x{median / bare:.3f} of no counter")


if __name__ == "__main__":
    main()
