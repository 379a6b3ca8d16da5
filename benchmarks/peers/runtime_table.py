"""The runtime table of issue 61 on this CPU: the shipped YOLO11n at 320, batch 1, fp32, on every runtime detbench
runs (ONNX Runtime; OpenVINO reading the ONNX, and its IR; LiteRT on a float32 .tflite), each runtime's own
minimal loop beside detbench's forward on that runtime, each side in its own process, in interleaved rounds.

    .venv/bin/python benchmarks/peers/runtime_table.py [--rounds 5] [--forwards 300] [--threads 2]
        [--batches 100] [--sides ort ov-onnx ov-ir litert] [--tflite FILE | --onnx2tf-venv DIR [--skip-install]]
        [--ultra ../shared/data/ultra] [--shapes ../shared/data/shapes]

The sides (one runtime and the file it runs):
  - ort: `yolo11n-shapes.onnx` on ONNX Runtime (all graph optimisations, its default);
  - ov-onnx: the same ONNX read directly by OpenVINO; ov-ir: Ultralytics' IR (`yolo11n-shapes_openvino_model/`);
  - litert: a float32 .tflite on LiteRT (XNNPACK, its default): --tflite, or else the ONNX converted by onnx2tf
    (`onnx2tf -i FILE -o DIR`, its `_float32.tflite`; NHWC input), the field's converter, run in a venv of its own
    (--onnx2tf-venv, made by peers/venvs.py with tensorflow-cpu and onnx2tf unless --skip-install) and cached in
    --convert-dir. onnx2tf fetches a sample file from the internet even at fp32; it is written here first, from
    the last 20 shapes scenes. Neither onnx2tf nor TensorFlow is imported by detbench.

Each side runs twice a round, in two processes of its own, one after the other (which first alternates by round):
  - own loop: runtime_table_loop.py, the runtime's plain loop on one prepared input (detbench's letterbox of the
    first shapes scene, NCHW float32, transposed for a channels-last file), --forwards timed forwards after a
    warm-up; its figure the median forward;
  - detbench: one run of `benchmark.py --config configs/files.yaml` with model.file and runtime.backend set, batch
    1, --threads, one timed pass over the first --batches shapes scenes, accuracy, agreement, layer timing and
    outputs off; its figure the forward step's p50 per image (summary.json `forward`), the forward as detbench
    times it.
The runtimes' order rotates from round to round. A ratio is taken within a round: detbench over the own loop of
the same runtime (the goal: at most 1.05), and each own loop over ONNX Runtime's. Each is quoted as the median
over rounds with its 90% interval (from 5 rounds) and printed per round, beside the round's load average (the
machine may be shared). Fidelity: each own loop's output on the prepared input against ONNX Runtime's (boxes and
scores, largest difference, and the argmax class of every candidate ONNX Runtime scores at 0.25 or more).
Figures: benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import cv2  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.common.detbench_runs import benchmark_command  # noqa: E402
from benchmarks.common.machine import cpu_model, flags_among  # noqa: E402
from benchmarks.common.rounds import alternated, rotated  # noqa: E402
from benchmarks.peers import venvs  # noqa: E402
from utils.core.errors import FailedRun, command_status  # noqa: E402
from utils.record.statistics import GOAL_INTERVAL, median_confidence_interval  # noqa: E402

LOOP = Path(__file__).resolve().parent / "runtime_table_loop.py"
CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16")
WARMUP = 20
GOAL = 1.05  # detbench's forward at most this many times the runtime's own loop
SCORE_CUT = 0.25  # the candidates whose argmax class the fidelity check compares
ONNX2TF = venvs.VenvSpec("onnx2tf", (("tensorflow-cpu==2.21.0", "tf-keras==2.21.0", "onnx2tf==1.28.8", "onnx",
                                      "onnx-graphsurgeon", "sng4onnx", "onnxruntime", "psutil",
                                      "simple-onnx-processing-tools", "ai-edge-litert==2.3.0"),))  # onnx2tf imports it
ONNX2TF_SAMPLE = "calibration_image_sample_data_20x128x128x3_float32.npy"  # the file onnx2tf would download


@dataclass(frozen=True)
class Side:
    name: str
    runtime: str  # the own loop's, and detbench's runtime.backend
    file: Path
    label: str  # for the table


def onnx2tf_sample(scenes: list[Path], folder: Path) -> None:
    """What onnx2tf downloads into its working folder (20 RGB images, 128x128, in [0, 1]), from local scenes."""
    images = [cv2.resize(cv2.imread(str(p))[..., ::-1], (128, 128)).astype(np.float32) / 255 for p in scenes[-20:]]
    np.save(folder / ONNX2TF_SAMPLE, np.stack(images))


def converted_tflite(onnx: Path, venv: Path, skip_install: bool, folder: Path, scenes: list[Path]) -> Path:
    """onnx2tf's float32 .tflite of `onnx`, converted once into `folder` (a later call reuses it)."""
    target = folder / f"{onnx.stem}_float32.tflite"
    if target.is_file():
        return target
    python = venvs.ensure_venv(venv, ONNX2TF, skip_install)
    folder.mkdir(parents=True, exist_ok=True)
    onnx2tf_sample(scenes, folder)
    print(f"converting {onnx.name} with onnx2tf ({venv}) into {folder} ...", flush=True)
    done = subprocess.run([str(python.parent / "onnx2tf"), "-i", str(onnx), "-o", str(folder), "-n"], cwd=folder,
                          capture_output=True, text=True, env=venvs.peer_environment(os.environ))
    if done.returncode != 0 or not target.is_file():
        raise FailedRun(f"onnx2tf failed (exit {done.returncode}), no {target}:\n{done.stderr[-3000:]}")
    return target


def prepared_input(onnx: Path, scene: Path, threads: int) -> np.ndarray:
    """detbench's own letterbox of the scene at the file's input size, as the NCHW float batch its forward gets."""
    from benchmarks.peers.runtime_own_loop import detbench_side
    return detbench_side(onnx, "onnxruntime", "fp32", threads, scene)[1]


def own_loop(side: Side, given: Path, threads: int, forwards: int, output: Path) -> float:
    done = subprocess.run([sys.executable, str(LOOP), side.runtime, str(side.file), str(given), str(threads),
                           str(forwards), str(WARMUP), str(output)], capture_output=True, text=True, cwd=ROOT)
    lines = [line for line in done.stdout.splitlines() if line.startswith("LOOP ")]
    if done.returncode != 0 or not lines:
        raise FailedRun(f"{side.name}'s own loop failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(lines[-1][len("LOOP "):])["median_ms"]


def detbench_forward(side: Side, images: Path, threads: int, batches: int, work: Path, run_id: str) -> dict:
    sets = [f"model.file={side.file}", f"dataset.path={images}", "dataset.batch_size=1",
            f"benchmark.timed_batches={batches}", f"runtime.backend={side.runtime}", "runtime.precision=fp32",
            f"runtime.threads={threads}",
            "benchmark.repeats=1", "benchmark.layer_timing=false", "benchmark.profiler=false",
            "benchmark.accuracy.enabled=false", "benchmark.agreement.enabled=false", "outputs.save_images=false",
            "outputs.plots=false", "outputs.report=false", f"run.output_dir={work}", f"run.id={run_id}"]
    done = subprocess.run(benchmark_command(ROOT / "configs" / "files.yaml", sets), capture_output=True, text=True,
                          cwd=ROOT)
    if done.returncode != 0:
        raise FailedRun(f"detbench on {side.name} failed (exit {done.returncode}): {done.stderr[-2000:]}")
    summary = json.loads((work / run_id / "summary.json").read_text())
    shutil.rmtree(work / run_id, ignore_errors=True)
    return {"forward": summary["forward"]["p50_ms_per_image"], "runtime": summary["runtime"]}


def fidelity(ours: np.ndarray, reference: np.ndarray) -> str:
    """An output (1 x (4 + classes) x candidates) against ONNX Runtime's on the same input."""
    ours, reference = ours.reshape(reference.shape)[0], reference[0]
    boxes = float(np.abs(ours[:4] - reference[:4]).max())
    scores = float(np.abs(ours[4:] - reference[4:]).max())
    kept = reference[4:].max(axis=0) >= SCORE_CUT
    same = int((ours[4:, kept].argmax(axis=0) == reference[4:, kept].argmax(axis=0)).sum())
    return f"boxes within {boxes:.2g} px, scores within {scores:.2g}, classes {same}/{int(kept.sum())} equal"


def quoted(values: list[float]) -> str:
    interval = median_confidence_interval(values, GOAL_INTERVAL)
    middle = statistics.median(values)
    if interval:
        return f"x{middle:.3f} [{GOAL_INTERVAL:.0%} interval {interval[0]:.3f}-{interval[1]:.3f}]"
    return f"x{middle:.3f} (range {min(values):.3f}-{max(values):.3f} over {len(values)} round(s))"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; an interval needs 5")
    parser.add_argument("--forwards", type=int, default=300, help="timed forwards of each own loop")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batches", type=int, default=100, help="detbench's timed batches (scenes) per run")
    parser.add_argument("--sides", nargs="*", default=["ort", "ov-onnx", "ov-ir", "litert"],
                        choices=["ort", "ov-onnx", "ov-ir", "litert"])
    parser.add_argument("--tflite", type=Path, help="the float32 .tflite for LiteRT (else onnx2tf converts it)")
    parser.add_argument("--onnx2tf-venv", type=Path, default=venvs.PEERS_HOME / ONNX2TF.name)
    parser.add_argument("--skip-install", action="store_true", help="use --onnx2tf-venv as it is")
    parser.add_argument("--convert-dir", type=Path, default=venvs.PEERS_HOME / "onnx2tf-files")
    parser.add_argument("--ultra", type=Path, default=ROOT.parent / "shared" / "data" / "ultra")
    parser.add_argument("--shapes", type=Path, default=ROOT.parent / "shared" / "data" / "shapes")
    args = parser.parse_args()
    onnx = args.ultra / "yolo11n-shapes.onnx"
    images = args.shapes / "images"
    scenes = sorted(images.glob("*.jpg"))
    if not scenes or not onnx.is_file():
        raise FailedRun(f"no shapes scenes in {images} or no {onnx}: give --shapes and --ultra (the shared data)")
    files = {"ort": ("onnxruntime", onnx, "ONNX Runtime, the ONNX"),
             "ov-onnx": ("openvino", onnx, "OpenVINO, the ONNX read directly"),
             "ov-ir": ("openvino", args.ultra / "yolo11n-shapes_openvino_model" / "yolo11n-shapes.xml",
                       "OpenVINO, Ultralytics' IR")}
    if "litert" in args.sides:
        tflite = args.tflite or converted_tflite(onnx, args.onnx2tf_venv, args.skip_install,
                                                 args.convert_dir / onnx.stem, scenes)
        files["litert"] = ("litert", tflite, f"LiteRT (XNNPACK), {tflite.name}")
    sides = [Side(name, *files[name]) for name in args.sides]
    print(f"CPU: {cpu_model()}, flags {' '.join(flags_among(CPU_FLAGS))}; {args.threads} threads, batch 1, fp32; "
          f"{args.rounds} rounds; own loops {args.forwards} forwards after {WARMUP}; detbench one pass over "
          f"{min(args.batches, len(scenes))} scenes", flush=True)
    own: dict[str, list[float]] = {side.name: [] for side in sides}
    ours: dict[str, list[float]] = {side.name: [] for side in sides}
    told: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="runtime-table-") as folder:
        work = Path(folder)
        given = work / "input.npy"
        np.save(given, prepared_input(onnx, scenes[0], args.threads))
        for number in range(args.rounds):
            load = os.getloadavg()[0]
            for side in rotated(sides, number):
                for kind in alternated(("own", "detbench"), number):
                    if kind == "own":
                        own[side.name].append(own_loop(side, given, args.threads, args.forwards,
                                                       work / f"{side.name}.npy"))
                    else:
                        run = detbench_forward(side, images, args.threads, args.batches, work / "runs",
                                               f"{side.name}-{number}")
                        ours[side.name].append(run["forward"])
                        told.setdefault(side.name, json.dumps({key: run["runtime"].get(key) for key in (
                            "backend", "inference_precision_hint", "allow_spinning", "threads", "xnnpack",
                            "delegate_nodes", "operators")}))
            print(f"round {number + 1} (load average {load:.2f} at its start, {os.getloadavg()[0]:.2f} at its end): "
                  + "; ".join(f"{side.name} own {own[side.name][-1]:.2f} ms, detbench {ours[side.name][-1]:.2f} ms "
                              f"(x{ours[side.name][-1] / own[side.name][-1]:.3f})" for side in sides), flush=True)
        outputs = {side.name: np.load(work / f"{side.name}.npy") for side in sides}
    print("\nwhat detbench's runs read back: " + "; ".join(f"{name} {text}" for name, text in told.items()))
    print(f"\n| runtime | fidelity to ONNX Runtime | own loop, median ms | detbench forward, median ms | "
          f"detbench / own loop, per round | median [{GOAL_INTERVAL:.0%} interval] | own loop / ONNX Runtime's, "
          f"per round |")
    print("|---|---|---|---|---|---|---|")
    missed = []
    for side in sides:
        ratios = [a / b for a, b in zip(ours[side.name], own[side.name])]
        versus = ([a / b for a, b in zip(own[side.name], own["ort"])] if "ort" in own else [])
        fidelity_text = ("—" if side.name == "ort" or "ort" not in outputs else
                         fidelity(outputs[side.name], outputs["ort"]))
        print(f"| {side.label} | {fidelity_text} | {statistics.median(own[side.name]):.2f} | "
              f"{statistics.median(ours[side.name]):.2f} | {', '.join(f'{r:.3f}' for r in ratios)} | "
              f"{quoted(ratios)} | {', '.join(f'{r:.2f}' for r in versus) or '—'} |")
        if statistics.median(ratios) > GOAL:
            missed.append(side.name)
    print(f"\ndetbench's forward within {GOAL - 1:.0%} of the runtime's own loop (median ratio at most {GOAL}): "
          + ("met on every side" if not missed else f"missed on {', '.join(missed)}"))
    return 0


if __name__ == "__main__":
    sys.exit(command_status(main))
