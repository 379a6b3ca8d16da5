"""What the package comparisons share: the package's driver run in the package's own environment (made and found
by benchmarks/peers/venvs.py; the driver in benchmarks/peers/drivers/), detbench's command line on the package's
file, `benchmark.py match` against the package's detections, and recall and precision of detbench's boxes against
the package's (IoU 0.5, same class, benchmarks/common/author_agreement.py as every peer comparison scores them),
per runtime, told nothing but model.file and then match's recipe, at the package's cut and at LOW_CUT. The
package is never imported here: its driver runs in its own environment and prints JSON."""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common.author_agreement import agreement, detbench_detections  # noqa: E402
from benchmarks.common.detbench_runs import benchmark_command  # noqa: E402
from benchmarks.peers import venvs  # noqa: E402

LOW_CUT = 0.05
RUNTIMES = ("onnxruntime", "openvino")
FILES_CONFIG = ROOT / "configs" / "files.yaml"
DETBENCH_TIMEOUT = 1800  # seconds for one detbench run
HEADER = ("| runtime | detbench told | cut | package's boxes | detbench's | recall | precision |\n"
          "|---|---|---|---|---|---|---|")


def arguments(description: str, spec: venvs.VenvSpec) -> argparse.ArgumentParser:
    """The options every package script takes: its venv, --skip-install, its work folder and the runtimes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--venv", type=Path, default=venvs.PEERS_HOME / spec.name,
                        help="the package's own environment (made there by benchmarks/peers/venvs.py)")
    parser.add_argument("--skip-install", action="store_true", help="use the package's venv as it is when it exists")
    parser.add_argument("--work", type=Path, help="where images and runs go (default: a temporary folder)")
    parser.add_argument("--runtimes", nargs="+", default=list(RUNTIMES), choices=RUNTIMES)
    return parser


def run_driver(python: Path, driver: str, driver_arguments: dict) -> dict:
    """The driver's JSON answer: {"version": ..., "file": ..., "cuts": {cut: {image name: [[class, score, x1, y1,
    x2, y2], ...]}}, ...}."""
    done = subprocess.run([str(python), str(venvs.DRIVERS / driver), json.dumps(driver_arguments)],
                          capture_output=True, text=True, check=False, env=venvs.peer_environment(os.environ))
    if done.returncode != 0:
        raise SystemExit(f"{driver} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def detbench(file: Path, images: Path, out: Path, run_id: str, sets: list[str]) -> dict[str, list]:
    """detbench's detections of the file on the images, by image name (configs/files.yaml; nothing else said but
    what `sets` say)."""
    found, status = detbench_detections(FILES_CONFIG, [f"model.file={file}", f"dataset.path={images}",
                                                       f"run.output_dir={out}", f"run.id={run_id}", *sets],
                                        out / run_id, DETBENCH_TIMEOUT)
    if status != "exit 0":
        raise SystemExit(f"detbench {status}")
    return found


def as_csv(rows_by_image: dict[str, list], path: Path) -> Path:
    """The package's detections as detections.csv's columns, for `match --against`."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["image", "class_id", "score", "x1", "y1", "x2", "y2"])
        for image, rows in rows_by_image.items():
            for class_id, score, *box in rows:
                writer.writerow([image, class_id, score, *box])
    return path


def match(file: Path, images: Path, against: Path, tries: int = 60) -> tuple[list[str], str]:
    """`benchmark.py match`'s flags (KEY=VALUE items), and all it printed."""
    command = benchmark_command(FILES_CONFIG, [f"model.file={file}", f"dataset.path={images}"], command=("match",))
    done = subprocess.run([*command, "--against", str(against), "--tries", str(tries)], capture_output=True,
                          text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"match exit {done.returncode}: {done.stderr.strip()[-1500:]}")
    flags = done.stdout.split("as flags:\n", 1)[1].splitlines()[0].split()
    return [flag for flag in flags if flag != "--set"], done.stdout


def compare(file: Path, work: Path, theirs: dict, own_cut: float, runtimes: list[str]) -> None:
    """Prints what match says from the package's detections at LOW_CUT (at the package's own cut they can be too
    few to tell recipes apart), then the table: each runtime, told nothing but model.file and then match's flags
    (its cut replaced by each), at the package's cut and at LOW_CUT."""
    images = work / "images"
    low = as_csv(theirs["cuts"][f"{LOW_CUT:g}"], work / f"package-{LOW_CUT:g}.csv")
    flags, said = match(file, images, low)
    print(said)
    recipe = [flag for flag in flags if not flag.startswith("postprocess.conf_thres=")]
    print(HEADER)
    for runtime in runtimes:
        for label, sets in (("nothing but model.file", []), ("match's flags", recipe)):
            for cut in (own_cut, LOW_CUT):
                ours = detbench(file, images, work / "runs", f"{runtime}-{len(sets)}-{cut:g}",
                                [f"runtime.backend={runtime}", *sets, f"postprocess.conf_thres={cut}"])
                counts = agreement(theirs["cuts"][f"{cut:g}"], ours)
                print(f"| {runtime} | {label} | {cut:g} | {counts.reference} | {counts.candidate} | "
                      f"{counts.loose_recall:.3f} | {counts.loose_precision:.3f} |", flush=True)
