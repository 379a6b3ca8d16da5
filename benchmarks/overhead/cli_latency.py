"""How long the command line takes to answer when nothing heavy is needed: `--help` and mistakes in the config.

    .venv/bin/python benchmarks/overhead/cli_latency.py [--repeats 9] [--baseline DIR]

Each case runs `python benchmark.py ...` as a new process, as a user would. The cases run interleaved (one
round runs every case once, in turn), so the machine's drift spreads over all of them; with --baseline (another
checkout of detbench, e.g. `git archive COMMIT | tar -x -C DIR`) the same cases of that tree join every round.
Prints the median, min and max wall time of each case, its ratio to the baseline, the median CPU time (user +
system, which a loaded machine stretches far less than the wall time) and the load average.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from utils.core.errors import ExitStatus, FailedRun, UsageError, command_status  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = "configs/samples.yaml"


def cases(scratch: Path) -> dict[str, tuple[list[str], int]]:
    """Name -> (arguments of benchmark.py, the exit status it must end with)."""
    unknown_key = scratch / "unknown_key.yaml"
    unknown_key.write_text("model:\n  archh: yolov7-tiny\n")
    broken_yaml = scratch / "broken.yaml"
    broken_yaml.write_text("model: [yolov7\n")
    return {
        "--help": (["--help"], ExitStatus.OK),
        "unknown key": (["--config", str(unknown_key)], ExitStatus.USAGE),
        "bad value": (["--config", SAMPLES, "--set", "dataset.batch_size=0"], ExitStatus.USAGE),
        "YAML error": (["--config", str(broken_yaml)], ExitStatus.USAGE),
        "missing dataset.path": (["--config", SAMPLES, "--set", f"dataset.path={scratch / 'absent'}"],
                                 ExitStatus.USAGE),
    }


def child_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(python: str, tree: Path, arguments: list[str], expected: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one `python benchmark.py ARGUMENTS` in `tree`."""
    cpu_before, start = child_cpu_seconds(), time.perf_counter()
    done = subprocess.run([python, "benchmark.py", *arguments], cwd=tree, capture_output=True, text=True,
                          timeout=300)
    seconds, cpu = time.perf_counter() - start, child_cpu_seconds() - cpu_before
    if done.returncode != expected:
        raise FailedRun(f"{tree}: benchmark.py {' '.join(arguments)} exited {done.returncode}, not {expected}; "
                         f"its stderr ends: {done.stderr.strip()[-300:]}")
    return seconds, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=9, help="rounds; each runs every case once (default 9)")
    parser.add_argument("--baseline", type=Path, help="another detbench checkout, measured in the same rounds")
    parser.add_argument("--python", default=sys.executable, help="the interpreter (default: this one)")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.baseline is not None and not (args.baseline / "benchmark.py").is_file():
        raise UsageError(f"--baseline {args.baseline} holds no benchmark.py; pass a detbench checkout")
    trees = {"this tree": ROOT} if args.baseline is None else {"baseline": args.baseline, "this tree": ROOT}
    load_before = " ".join(f"{value:.2f}" for value in os.getloadavg())
    with tempfile.TemporaryDirectory() as scratch:
        plan = cases(Path(scratch))
        seconds: dict[tuple[str, str], list[float]] = {(tree, case): [] for tree in trees for case in plan}
        cpu: dict[tuple[str, str], list[float]] = {(tree, case): [] for tree in trees for case in plan}
        for _ in range(args.repeats):
            for case, (arguments, expected) in plan.items():
                for tree, folder in trees.items():
                    wall, used = timed_run(args.python, folder, arguments, expected)
                    seconds[tree, case].append(wall)
                    cpu[tree, case].append(used)
    load_after = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"benchmark.py wall time, {args.repeats} interleaved rounds, {args.python}")
    print(f"load average before: {load_before}; after: {load_after}")
    header = f"{'case':<22} {'tree':<10} {'median s':>9} {'min s':>7} {'max s':>7} {'CPU s':>7}"
    print(header + ("  vs baseline" if args.baseline else ""))
    for case in plan:
        for tree in trees:
            values = seconds[tree, case]
            line = (f"{case:<22} {tree:<10} {statistics.median(values):9.3f} {min(values):7.3f} {max(values):7.3f} "
                    f"{statistics.median(cpu[tree, case]):7.3f}")
            if args.baseline is not None and tree == "this tree":
                ratio = statistics.median(values) / statistics.median(seconds["baseline", case])
                line += f"  x{ratio:.2f}"
            print(line)
    return ExitStatus.OK


if __name__ == "__main__":
    sys.exit(command_status(main))
