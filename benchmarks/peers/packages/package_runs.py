"""What the package comparisons share: a package's own virtual environment (created once, outside the repo), its
driver run there on the images, detbench's command line on the package's file, `benchmark.py match` against the
package's detections, and recall and precision of detbench's boxes against the package's (IoU 0.5, same class).
The package is never imported here: its driver (drivers/) runs in its own environment and writes JSON."""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
DRIVERS = Path(__file__).resolve().parent / "drivers"
LOW_CUT = 0.05


def ensure_venv(venv: Path, packages: list[str]) -> Path:
    """The package's own environment (python3.11 -m venv), the packages installed into it once."""
    python = venv / "bin" / "python"
    if not python.exists():
        venv.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["python3.11", "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *packages], check=True)
    return python


def run_driver(python: Path, driver: str, arguments: dict) -> dict:
    """The driver's JSON answer: {"version": ..., "file": ..., "cuts": {cut: {image name: [[class, score, x1, y1,
    x2, y2], ...]}}, ...}."""
    done = subprocess.run([str(python), str(DRIVERS / driver), json.dumps(arguments)], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{driver} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def detbench(file: Path, images: Path, out: Path, run_id: str, *sets: str) -> dict[str, list]:
    """detbench's detections of the file on the images, by image name (configs/files.yaml; nothing else said but
    what `sets` say)."""
    command = [sys.executable, str(ROOT / "benchmark.py"), "--config", str(ROOT / "configs" / "files.yaml")]
    for item in (f"model.file={file}", f"dataset.path={images}", f"run.output_dir={out}", f"run.id={run_id}",
                 "benchmark.repeats=1", "benchmark.layer_timing=false", "benchmark.profiler=false",
                 "benchmark.accuracy.enabled=false", "benchmark.agreement.enabled=false", "outputs.save_images=false",
                 "outputs.plots=false", "outputs.report=false", *sets):
        command += ["--set", item]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"detbench exit {done.returncode}: {done.stderr.strip()[-1500:]}")
    found: dict[str, list] = {}
    with (out / run_id / "detections.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            found.setdefault(row["image"], []).append(
                [int(row["class_id"]), float(row["score"]), *(float(row[k]) for k in ("x1", "y1", "x2", "y2"))])
    summary = json.loads((out / run_id / "summary.json").read_text())
    return {"detections": found, "recipe": summary.get("recipe", {})}


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
    """`benchmark.py match`'s flags, and all it printed."""
    command = [sys.executable, str(ROOT / "benchmark.py"), "match", "--config", str(ROOT / "configs" / "files.yaml"),
               "--set", f"model.file={file}", "--set", f"dataset.path={images}", "--against", str(against),
               "--tries", str(tries)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"match exit {done.returncode}: {done.stderr.strip()[-1500:]}")
    flags = done.stdout.split("as flags:\n", 1)[1].splitlines()[0].split()
    return [flag for flag in flags if flag != "--set"], done.stdout


def agreement(theirs: dict[str, list], ours: dict[str, list]):
    """MatchCounts of detbench's rows against the package's, image by image."""
    import torch

    from pipelines.contract import Detections
    from utils.checks.agreement.matching import MatchCounts, match_detections

    def detections(rows: list) -> Detections:
        table = torch.tensor(rows, dtype=torch.float32).reshape(-1, 6)
        return Detections(table[:, 2:6], table[:, 1], table[:, 0].long())

    counts = MatchCounts()
    for image, rows in theirs.items():
        counts = counts + match_detections(detections(rows), detections(ours.get(image, [])))
    return counts


def row(label: str, cut: float, counts) -> str:
    return (f"| {label} | {cut:g} | {counts.reference} | {counts.candidate} | {counts.loose_recall:.3f} | "
            f"{counts.loose_precision:.3f} |")


HEADER = "| detbench told | cut | package's boxes | detbench's | recall | precision |\n|---|---|---|---|---|---|"
