"""capacity's answer against every N run one by one: N = 1 .. answer + 1 cameras, each a plain camera run of the way
capacity chose, judged as capacity judges a point.

    .venv/bin/python benchmarks/studies/capacity_one_by_one.py --capacity outputs/<capacity_id> [--repeats 1]

It reads the finished capacity directory (capacity.json): the request (config, --set items, bounds, the point's
window and warm-up), the source, and the best way's values and largest N. Each N then runs as capacity's own point
runs it (utils/commands/capacity/plan.py `point_sets`: the same keys, realtime, the request's window), in its own
process, N = 1 upwards, `--repeats` times over in rounds (1, 2, ..., 1, 2, ...); each run is judged by the same
judgement (utils/commands/capacity/point.py: p99 from arrival within the budget, drops within the bound, with
their 95% block-bootstrap intervals). An N passes when the majority of its runs is served. The script prints every
run with the load average before it, which N pass, the largest N that passes with every N below it passing, and
whether that lies within 1 of capacity's answer. The runs are kept under outputs/one_by_one_<capacity_id>/.
Figures measured so far: benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.detbench_runs import benchmark_command  # noqa: E402


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def run_count(document: dict, count: int, output: Path, run_id: str):
    """One run of `count` cameras of the best way, read back and judged; None when it failed."""
    from utils.commands.capacity.plan import CapacityRequest, point_sets
    from utils.commands.capacity.readings import camera_point
    from utils.storage.finished_run import FinishedRun

    request = CapacityRequest.from_document(document["state"]["request"])
    way = [f"{key}={value}" for key, value in document["answer"]["best"]["values"].items()]
    sets = [*point_sets(request, document["source"], way, count, request.point_s),
            f"run.output_dir={output}", f"run.id={run_id}"]
    done = subprocess.run(benchmark_command(request.config_file, sets), capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        print(f"  {run_id}: exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
        return None
    return camera_point(FinishedRun(output / run_id), request.bounds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacity", type=Path, required=True, help="a finished capacity directory")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each N, in rounds")
    args = parser.parse_args()
    document = json.loads((args.capacity / "capacity.json").read_text())
    best = document["answer"]["best"]
    if best is None:
        print(f"{args.capacity}: capacity named no way to run")
        return 2
    largest = best["largest"]
    output = ROOT / "outputs" / f"one_by_one_{document['capacity_id']}"
    print(f"capacity {document['capacity_id']}: {best['label']}, {largest} camera(s) of {document['source']} within "
          f"p99 {document['budget_ms']:g} ms, at most {document['max_drop']:.1%} dropped; running N = 1..{largest + 1}"
          f" one by one, {args.repeats} time(s) each")
    served: dict[int, list[bool]] = {}
    for repeat in range(args.repeats):
        for count in range(1, largest + 2):
            load = load_average()
            point = run_count(document, count, output, f"n{count}_r{repeat + 1}")
            if point is None:
                served.setdefault(count, []).append(False)
                continue
            reading = point.reading
            served.setdefault(count, []).append(reading.served)
            interval = (f" [{reading.p99_interval.low:.1f}-{reading.p99_interval.high:.1f}]"
                        if reading.p99_interval else "")
            p99 = "nothing detected" if reading.p99_ms is None else f"p99 {reading.p99_ms:.1f} ms{interval}"
            print(f"N={count} run {repeat + 1} (load {load}): {p99}, dropped {reading.drop_share:.1%}, "
                  f"{point.figures['fps_detected']:.2f} frames/s detected: "
                  f"{'served' if reading.served else 'not served'}{'' if reading.sure else ' (not sure)'}; "
                  f"{reading.steadiness}", flush=True)
    passing = {count: 2 * sum(runs) > len(runs) for count, runs in served.items()}
    print("pass: " + ", ".join(f"N={count} {'yes' if ok else 'no'}" for count, ok in passing.items()))
    one_by_one = 0
    while passing.get(one_by_one + 1):
        one_by_one += 1
    print(f"one by one: {one_by_one} camera(s) served (every N up to it passes); capacity said {largest}: "
          f"{'within 1' if abs(one_by_one - largest) <= 1 else 'more than 1 apart'}")
    print(f"load average at the end: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
