"""tune against the exhaustive sweep on the same space: both times, both answers, and the two winners judged
against each other in interleaved rounds.

    .venv/bin/python benchmarks/studies/tune_vs_sweep.py [--batch 1,2,4] [--threads 1,2] [--runtimes R1,R2]
        [--minutes M]
        [--rounds 3]
        [--set KEY=VALUE ...] [--data DIR [--labels PATH] [--weights FILE] [--img-size N]]
    .venv/bin/python benchmarks/studies/tune_vs_sweep.py --data ../shared/data/shapes/images \
        --labels ../shared/data/shapes/instances.json --weights ../shared/data/shapes/yolov7-tiny-shapes.pt \
        --img-size 320 --threads 2 --minutes 10

The space is the issue's: yolov7-tiny at 320 on the bundled photos (configs/samples_tiny.yaml), or on --data with
its --labels (without them, every verdict is the label-free one) and --weights, every runtime x precision pair
this CPU runs natively (tune's own space: installed runtimes, or those of --runtimes, bf16 only with its flags),
the batch sizes and thread counts given, pinning off. The exhaustive sweep is what a user runs today: one `--sweep`
per runtime (a sweep crosses its axes, and not every runtime offers every precision), every point with its own
accuracy check; its answer is the fastest point within the accuracy budget over the runtimes' sweeps (beside it,
OpenVINO's int8+bf16 against int8 at each point both ran). tune then races the same space with a budget of
--minutes (default: a quarter of the sweep's time, the issue's goal).

The two winners, when they differ, then run as plain runs in --rounds interleaved rounds (A B, B A, ...): the
ratio of tune's winner's p50 per image to the sweep's, per round and its median, says whether tune's winner is
within 5% of the sweep's best. --set adds a setting to every run of all three (e.g. benchmark.accuracy.enabled=
false, where the label-free accuracy pass would make every point minutes long). Prints the figures; the runs are
kept under outputs/tune_vs_sweep_<time>/.

When tune says its budget cannot pay for round 1, the script prints that and resumes the same race with twice the
floor tune names, counting every sitting's time. --sweeps-from DIR reuses that folder's sweeps (sweeps.json) and
races tune again; with --tune-from TUNE_DIR as well it only judges that finished race. Figures measured so far:
benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.detbench_runs import as_sets  # noqa: E402
from benchmarks.common.rounds import alternated  # noqa: E402
from pipelines.runtimes.registry import SPECS  # noqa: E402
from utils.measure.below_layer.kernels import DECIDING_FLAGS  # noqa: E402
from utils.commands.tune.space import precision_refusal, this_machine  # noqa: E402

CONFIG = ROOT / "configs" / "samples_tiny.yaml"
GOAL_RATIO = 1.05


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", default="1,2,4", help="batch sizes of the space")
    parser.add_argument("--threads", default="1,2", help="thread counts of the space")
    parser.add_argument("--runtimes", help="the runtimes of the space, e.g. onnxruntime,openvino (default: every "
                                           "installed one)")
    parser.add_argument("--minutes", type=float, help="tune's budget (default: a quarter of the sweep's time)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the two winners")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--data", type=Path, help="a folder of images (dataset.path) instead of the bundled photos")
    parser.add_argument("--labels", type=Path, help="--data's labels (dataset.labels): a YOLO folder or COCO json")
    parser.add_argument("--weights", type=Path, help="model.weights, trained for --data's scenes")
    parser.add_argument("--img-size", type=int, help="preprocess.img_size")
    parser.add_argument("--tune-from", metavar="DIR",
                        help="with --sweeps-from: a finished tune directory to judge (its tune.json's time) instead "
                             "of racing again")
    parser.add_argument("--sweeps-from", metavar="DIR",
                        help="reuse the sweeps of an earlier run of this script (its sweeps.json) and race tune only")
    args = parser.parse_args()
    data = [f"dataset.path={args.data.resolve()}"] if args.data else []
    data += [f"dataset.labels={args.labels.resolve()}"] if args.labels else []
    data += [f"model.weights={args.weights.resolve()}"] if args.weights else []
    data += [f"preprocess.img_size={args.img_size}"] if args.img_size else []
    args.overrides = data + args.overrides  # the user's own --set after, so they win
    return args


def benchmark(*arguments: str) -> tuple[int, float, str]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(ROOT / "benchmark.py"), *arguments], capture_output=True, text=True)
    if done.returncode not in (0, 2):
        print(done.stderr[-2000:], file=sys.stderr)
    return done.returncode, time.monotonic() - started, done.stdout + done.stderr


def runtimes(args: argparse.Namespace) -> list[str]:
    installed = this_machine().installed
    return [name for name in installed if not args.runtimes or name in args.runtimes.split(",")]


def run_sweeps(folder: Path, args: argparse.Namespace) -> tuple[float, dict]:
    """One sweep per installed runtime over its native precisions; the best within the budget over all."""
    machine, total, best = this_machine(), 0.0, None
    for name in runtimes(args):
        precisions = [p for p in SPECS[name].precisions if precision_refusal(p, machine) is None]
        status, seconds, output = benchmark(
            "--config", str(CONFIG), *as_sets(args.overrides + [f"run.output_dir={folder}", f"run.id=sweep_{name}",
                                                               f"runtime.backend={name}", "runtime.pinning=false"]),
            "--sweep", f"runtime.precision={','.join(precisions)}", "--sweep", f"dataset.batch_size={args.batch}",
            "--sweep", f"runtime.threads={args.threads}")
        total += seconds
        document = folder / f"sweep_{name}" / "sweep.json"
        if not document.is_file():
            print(f"sweep {name}: exit {status}, nothing written:\n{output[-1000:]}")
            continue
        answer = json.loads(document.read_text())["answer"]
        found = answer["fastest_within_budget"]
        print(f"sweep {name}: exit {status}, {seconds:.0f} s; fastest within the budget: "
              f"{found['point'] if found else 'none'}"
              + (f" ({found['p50_ms_per_image']:.2f} ms/image)" if found else ""))
        if found and (best is None or found["p50_ms_per_image"] < best["p50_ms_per_image"]):
            best = dict(found, values={"runtime.backend": name, **found["values"], "runtime.pinning": "false"})
    return total, best


def ratio(row: dict, other: dict, key: str) -> str:
    return f"{row[key] / other[key]:.3f}" if row.get(key) and other.get(key) else "?"


def int8_pairs(folder: Path) -> list[str]:
    """OpenVINO's int8 with its float layers at bf16 against plain int8, point by point of the sweep (the same
    batch size and threads), with each one's verdict."""
    document = folder / "sweep_openvino" / "sweep.json"
    if not document.is_file():
        return []
    rows = json.loads(document.read_text())["rows"]
    by_key = {}
    for row in rows:
        if row.get("status") == "complete" and row.get("runtime.precision") in ("int8", "int8+bf16"):
            key = (row.get("dataset.batch_size"), row.get("runtime.threads"))
            by_key.setdefault(key, {})[row["runtime.precision"]] = row
    lines = []
    for (batch, threads), pair in sorted(by_key.items()):
        if len(pair) == 2:
            plain, mixed = pair["int8"], pair["int8+bf16"]
            lines.append(f"batch {batch}, {threads} threads: int8+bf16 {mixed['p50_ms_per_image']:.2f} against int8 "
                         f"{plain['p50_ms_per_image']:.2f} ms/image (x{ratio(mixed, plain, 'p50_ms_per_image')}); "
                         f"forward x{ratio(mixed, plain, 'forward_p50_ms_per_image')}; verdicts "
                         f"{mixed.get('agreement')} and {plain.get('agreement')}, mAP drops {mixed.get('map_drop')} "
                         f"and {plain.get('map_drop')}")
    return lines


def run_tune(folder: Path, args: argparse.Namespace, minutes: float, run_id: str) -> tuple[int, float, dict, str]:
    status, seconds, output = benchmark(
        "tune", "--config", str(CONFIG), "--minutes", f"{minutes:.2f}",
        *as_sets(args.overrides + [f"run.output_dir={folder}", f"run.id={run_id}", "runtime.pinning=false"]),
        "--sweep", f"dataset.batch_size={args.batch}", "--sweep", f"runtime.threads={args.threads}",
        *(["--sweep", f"runtime.backend={','.join(runtimes(args))}"] if args.runtimes else []))
    document = folder / run_id / "sweep.json"
    return status, seconds, json.loads(document.read_text()) if document.is_file() else {}, output


def resume_tune(directory: Path, minutes: float) -> tuple[int, float, dict, str]:
    status, seconds, output = benchmark("tune", "--resume", str(directory), "--minutes", f"{minutes:g}")
    document = directory / "sweep.json"
    return status, seconds, json.loads(document.read_text()) if document.is_file() else {}, output


def fitting_minutes(output: str) -> float | None:
    """The budget tune's refusal of a too-short one names (`Give --minutes N or more`)."""
    found = re.search(r"Give --minutes (\d+) or more", output)
    return float(found.group(1)) if found else None


def p50(run_dir: Path) -> float:
    return json.loads((run_dir / "summary.json").read_text())["pipeline_latency"]["p50_ms_per_image"]


def head_to_head(folder: Path, args: argparse.Namespace, tuned: dict, swept: dict, stamp: str) -> list[float]:
    """tune's winner's p50 over the sweep's, per interleaved round."""
    ratios = []
    for number in range(1, args.rounds + 1):
        pair = [("tune", tuned), ("sweep", swept)]
        figures = {}
        for label, values in alternated(pair, number - 1):
            run_id = f"head_{stamp}_{label}_{number}"
            benchmark("--config", str(CONFIG), *as_sets(args.overrides + [f"{k}={v}" for k, v in values.items()]
                                                     + [f"run.output_dir={folder}", f"run.id={run_id}"]))
            figures[label] = p50(folder / run_id)
        ratios.append(figures["tune"] / figures["sweep"])
        print(f"round {number}: tune's winner {figures['tune']:.2f}, the sweep's {figures['sweep']:.2f} ms/image "
              f"(x{ratios[-1]:.3f})")
    return ratios


def main() -> int:
    args = parse_args()
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    folder = Path(args.sweeps_from) if args.sweeps_from else ROOT / "outputs" / f"tune_vs_sweep_{stamp}"
    machine = this_machine()
    print(f"CPU flags: {' '.join(flag for flag in DECIDING_FLAGS if flag in machine.flags)}; {machine.cores} cores")
    if args.sweeps_from:
        kept = json.loads((folder / "sweeps.json").read_text())
        sweep_s, swept = kept["seconds"], kept["best"]
    else:
        sweep_s, swept = run_sweeps(folder, args)
        (folder / "sweeps.json").write_text(json.dumps({"seconds": sweep_s, "best": swept}, indent=2) + "\n")
    for line in int8_pairs(folder):
        print(f"openvino {line}")
    minutes = args.minutes or sweep_s / 4 / 60
    print(f"exhaustive sweep: {sweep_s:.0f} s; best within the budget: {swept['point'] if swept else 'none'}")
    if args.tune_from:
        raced = Path(args.tune_from)
        status, output = 0, ""
        tune_s = json.loads((raced / "tune.json").read_text())["spent_s"]
        document = json.loads((raced / "sweep.json").read_text())
    else:
        run_id = f"tune_{stamp}"
        status, tune_s, document, output = run_tune(folder, args, minutes, run_id)
        print(f"tune (budget {minutes:.1f} min): exit {status}, {tune_s:.0f} s")
    for _ in range(0 if args.tune_from else 3):
        more = fitting_minutes(output) if status == 2 else None
        if more is None:
            break
        # The budget cannot pay for round 1: say so, then resume the same race with twice the floor tune names
        # (the floor leaves out the accuracy checks), counting every sitting's time.
        print(output.strip().splitlines()[-1])
        status, seconds, document, output = resume_tune(folder / run_id, 2 * more)
        tune_s += seconds
        print(f"tune resumed with {2 * more:g} more minutes: exit {status}, {seconds:.0f} s")
    print(f"tune: {tune_s:.0f} s in all = x{tune_s / sweep_s:.2f} of the sweep's time")
    if status != 0 or not document.get("answer", {}).get("winner"):
        print(output[-3000:])
        return 1
    answer = document["answer"]
    print(answer["statement"])
    for line in document.get("ways", []):
        print(f"  way {line}")
    for entry in answer["rounds"]:
        print(f"  round {entry['number']}: {len(entry['field'])} candidates, {len(entry['capped'])} left out by the "
              f"budget, {len(entry['dropped'])} dropped after it, {entry['seconds']:.0f} s")
    tuned = dict(answer["winner"]["values"])
    if swept is None:
        print("the sweep found no point within the budget: nothing to judge tune's winner against")
        return 1
    if tuned == swept["values"]:
        print("the winners are the same configuration: within 5% by construction")
        return 0
    ratios = head_to_head(folder, args, tuned, swept["values"], stamp)
    ratio = statistics.median(ratios)
    print(f"tune's winner over the sweep's best, median of {len(ratios)} interleaved rounds: x{ratio:.3f} "
          f"({'within' if ratio <= GOAL_RATIO else 'NOT within'} 5%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
