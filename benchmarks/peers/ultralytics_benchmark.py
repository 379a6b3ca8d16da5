"""detbench against Ultralytics' own `benchmark`, as a peer, on the shipped YOLO11n (shared/data/ultra) on this CPU.

    .venv/bin/python benchmarks/peers/ultralytics_benchmark.py [--rounds 5]
        [--peer-venv ~/.cache/detbench-peers/ultralytics]
        [--ultra ../shared/data/ultra] [--shapes ../shared/data/shapes] [--calibration 50] [--budget 0.01]
        [--detbench DIR] [--tune-minutes M | --no-tune]

What it measures, from one run:
  - the peer's rows: Ultralytics' `ultralytics.utils.benchmarks.benchmark()` on the checkpoint the files were
    exported from (`yolo11n-shapes.pt`), one call per row, at 320 on the CPU: ONNX (ONNX Runtime), ONNX int8,
    OpenVINO ("fp32": no quantize) and OpenVINO int8 (`quantize=8`). Each row is what `benchmark` itself does:
    export from the checkpoint, one predict, then its `val` at batch 1, conf 0.001, with its own mAP@0.5:0.95 (not
    COCOeval) and its mean inference time per image (`Inference time (ms/im)`; the forward alone, as its val times
    it). The script also reads the preprocess and postprocess times of the same val from its `Speed:` line.
  - what each peer row really ran, read in the peer's environment from its exported file: for an IR, the model
    compiled as the peer's OpenVINO backend compiles it on a Linux x86 CPU (`PERFORMANCE_HINT` LATENCY and no
    precision hint), its `INFERENCE_PRECISION_HINT`, threads and streams, and the runtime precision of each
    convolution in the executed graph. On a CPU with native bf16 OpenVINO's default inference precision is bf16,
    so the "fp32" OpenVINO row runs bf16 and the int8 row's float layers run bf16 too. For an ONNX file, the
    graph ONNX Runtime's CPU provider optimises it into: how many convolutions became int8 `QLinearConv` and how
    many stayed float between QuantizeLinear/DequantizeLinear pairs.
  - detbench on the shipped static ONNX (`yolo11n-shapes.onnx`, `model.file`), one whole run per runtime x
    precision it offers for a file: onnxruntime fp32 (the reference) and int8, openvino fp32, bf16 (where the CPU
    has native bf16) and int8; batch 1, 2 threads, single stream, 3 timed passes over the 200 shapes scenes. Its
    figure is the forward's p50 per image (the same span the peer's inference time covers) beside the whole
    pipeline's p50 and its mean without the image decoding. The first round's runs carry the accuracy pass with
    labels (the verdict: mAP@0.5:0.95 drop against the onnxruntime fp32 reference, its 95% interval over images,
    budget --budget); later rounds time only (accuracy and agreement passes off; neither runs inside the timed
    passes, so the timings are the same kind).
  - raw OpenVINO in the peer's environment, no harness around it: the peer's "fp32" IR and the shipped ONNX, each
    compiled as the peer compiles (LATENCY, default precision), 300 synchronous inferences on random input; it
    separates a difference of files from a difference of harnesses.
  - the answer: detbench's fastest configuration whose verdict is within the budget (`equal`, `within_budget` or
    the reference), by the median over rounds of its forward p50, and the ratio of the peer's fastest row whose
    mAP is within the budget of its ONNX row (the only row that runs fp32; a point estimate, the peer gives no
    interval) to detbench's answer, per round, as a median with its 90% interval over rounds. Goal: at least
    1.25x. Met or missed only when the interval lies wholly on one side of it, otherwise not resolved; from 5
    rounds on there is an interval.
  - tune on the same file, scenes, labels, calibration and budget, given the time the peer's benchmark took in
    round 0 (or --tune-minutes, and then the races come before round 0): one race under `--goal latency` at
    batch 1 (the peer's rows are batch 1) and one under `--goal throughput` (LoadGen offline, every batch size
    and stream count). Each answer then runs in every later round beside the rest, a plain run: the latency
    answer's forward p50 and the throughput answer's LoadGen offline ms per sample (10 s), each against the
    peer's fastest row within the budget. Goals: x1.0 or better at batch 1, x1.25 or better under throughput.

The data, the same on both sides: the 200 shapes scenes sorted by name; the last --calibration (50) calibrate
every int8 model (detbench's default: the dataset's last images; the peer's export is given the dataset YAML's
`train` split for it, `split=train`), and the others (150) are scored (the YAML's `val`). The scenes are linked
into a temporary folder in the layout Ultralytics expects (`images/` beside `labels/`), so its label cache is
written there, never beside the data; the checkpoint is copied there too, since its exports land beside it.

Ultralytics is AGPL-3.0: it is never imported here. It is installed at run time into its own virtual environment
(--peer-venv, made as benchmarks/peers/venvs.py makes every peer's: Python 3.11, `pip install torch==2.14.1
torchvision==0.29.1`, then `ultralytics==8.4.190 onnx onnxruntime openvino nncf onnxslim`: nncf and onnxslim are
what its int8 and ONNX exports would otherwise install themselves) and run there as a subprocess
(`<venv>/bin/python benchmarks/peers/drivers/run_ultralytics_benchmark.py ARGS_JSON`), offline: YOLO_OFFLINE=1,
YOLO_AUTOINSTALL=False and a temporary YOLO_CONFIG_DIR, with the dataset YAML written locally; its font check fails quietly offline and no plot uses it.
`benchmark()` is called as a function (the `yolo benchmark` command line drops `split`, so the int8 exports would
calibrate on the scored images).

Ultralytics' own predict loop (its speed dict and wall time) beside detbench's pipeline and forward on the same
files: benchmarks/peers/ultralytics_predict.py.

Rounds interleave the two sides (the peer first in even rounds, detbench first in odd ones, detbench's runs in
reversed order too), so neither always runs right after the other. The machine may be shared: the load average
of each side's measurements is printed beside its figures. Quote the CPU flags with every figure. Prints its
figures; a measurement, never a test.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.detbench_runs import benchmark_command, undecoded_ms_per_image  # noqa: E402
from benchmarks.common.machine import cpu_model, flags_among  # noqa: E402
from benchmarks.common.rounds import alternated  # noqa: E402
from benchmarks.peers import venvs  # noqa: E402
from benchmarks.studies.tune_vs_sweep import fitting_minutes  # noqa: E402
from utils.core.errors import FailedRun, command_status  # noqa: E402
from utils.record.statistics import GOAL_INTERVAL, judge_against, median_confidence_interval  # noqa: E402

GOAL = 1.25
IMG_SIZE = 320
DETBENCH_CONFIGS = (("onnxruntime", "fp32"), ("onnxruntime", "int8"), ("openvino", "fp32"), ("openvino", "bf16"),
                    ("openvino", "int8"), ("openvino", "int8+bf16"))
THROUGHPUT_GOAL = 1.25  # tune's --goal throughput answer against the peer's fastest row
LATENCY_GOAL = 1.0  # tune's answer at batch 1 against the peer's fastest row
OFFLINE_SECONDS = 10  # LoadGen offline duration of each timed run of tune's throughput answer
PEER_ROWS = ({"name": "ONNX", "format": "onnx", "quantize": None, "file": "{stem}.onnx"},
             {"name": "ONNX int8", "format": "onnx", "quantize": 8, "file": "{stem}_int8.onnx"},
             {"name": "OpenVINO", "format": "openvino", "quantize": None, "file": "{stem}_openvino_model"},
             {"name": "OpenVINO int8", "format": "openvino", "quantize": 8, "file": "{stem}_int8_openvino_model"})
FP32_ROW = "ONNX"
WITHIN = ("equal", "within_budget", "reference itself")
CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8",
             "amx_bf16")


def prepare_data(shapes: Path, ultra: Path, work: Path, calibration: int) -> tuple[Path, Path, int]:
    """The scenes in Ultralytics' layout (symlinked images, copied labels), its dataset YAML and the checkpoint."""
    import onnx

    images = sorted(p for p in (shapes / "images").iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    if calibration >= len(images):
        raise FailedRun(f"--calibration {calibration} leaves no scene to score of the {len(images)} in {shapes}")
    scored, calibrating = images[:-calibration], images[-calibration:]
    for split, chosen in (("val", scored), ("calibration", calibrating)):
        (work / split / "images").mkdir(parents=True)
        (work / split / "labels").mkdir(parents=True)
        for image in chosen:
            (work / split / "images" / image.name).symlink_to(image)
            label = shapes / "labels" / f"{image.stem}.txt"
            if label.exists():
                shutil.copy(label, work / split / "labels" / label.name)
    metadata = {p.key: p.value for p in onnx.load(str(ultra / "yolo11n-shapes.onnx"), load_external_data=False)
                .metadata_props}
    names = ast.literal_eval(metadata["names"])  # a Python literal as text, as Ultralytics writes it
    data = work / "shapes.yaml"  # JSON is YAML
    data.write_text(json.dumps({"path": str(work), "train": "calibration/images", "val": "val/images",
                                "names": {int(k): v for k, v in names.items()}}))
    model = work / "yolo11n-shapes.pt"
    shutil.copy(ultra / "yolo11n-shapes.pt", model)
    return data, model, len(scored)


def run_peer(python: Path, work: Path, data: Path, model: Path, ultra: Path, what_ran: bool,
             timeout: int) -> tuple[dict, list[dict], dict]:
    stem = model.stem
    rows = [{**row, "file": row["file"].format(stem=stem)} for row in PEER_ROWS]
    arguments = {"model": str(model), "data": str(data), "imgsz": IMG_SIZE, "folder": str(work), "rows": rows,
                 "what_ran": what_ran,
                 "raw": {"the peer's OpenVINO IR": str(work / f"{stem}_openvino_model"),
                         "the shipped ONNX (detbench's file)": str(ultra / "yolo11n-shapes.onnx")}}
    environment = venvs.peer_environment(os.environ, {"YOLO_OFFLINE": "1", "YOLO_AUTOINSTALL": "False",
                                                      "YOLO_CONFIG_DIR": str(work / "ultralytics-config")})
    done = subprocess.run([str(python), str(venvs.DRIVERS / "run_ultralytics_benchmark.py"), json.dumps(arguments)],
                          capture_output=True, text=True, cwd=work, env=environment, timeout=timeout)
    if done.returncode != 0:
        raise FailedRun(f"the peer failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    env, found, raw = {}, [], {}
    for line in done.stdout.splitlines():
        if line.startswith("PEER_ENV "):
            env = json.loads(line[len("PEER_ENV "):])
        elif line.startswith("PEER_ROW "):
            found.append(json.loads(line[len("PEER_ROW "):]))
        elif line.startswith("PEER_RAW "):
            raw = json.loads(line[len("PEER_RAW "):])
    (work / "peer-last.log").write_text(done.stdout + done.stderr)
    return env, found, raw


def ran_label(runtime: dict) -> str:
    """What detbench's run ran, read back from the runtime (summary.json runtime)."""
    hint = runtime.get("inference_precision_hint")
    hint = {"f32": "fp32"}.get(hint, hint)
    if runtime["precision"] == "int8":
        return "int8" + (f", float layers {hint}" if hint else "")
    return hint or runtime["precision"]


def common_sets(file: Path, shapes: Path, args: argparse.Namespace) -> list[str]:
    """What every detbench run and both races share: the file, the scenes and labels, int8's calibration scenes
    and the accuracy budget."""
    return [f"model.file={file}", "preprocess.img_size=null", f"dataset.path={shapes / 'images'}",
            f"dataset.labels={shapes / 'labels'}", f"runtime.calibration.images={args.calibration}",
            f"benchmark.accuracy.max_drop={args.budget}", "benchmark.layer_timing=false", "benchmark.profiler=false",
            "outputs.save_images=false", "outputs.plots=false", "outputs.report=false"]


def detbench_run(values: dict, file: Path, shapes: Path, out: Path, run_id: str, args: argparse.Namespace,
                 with_accuracy: bool) -> dict:
    """One plain run of `values` (runtime.backend, runtime.precision and any other keys; batch 1 and --threads
    unless they say otherwise). Under LoadGen offline (benchmark.scenario), its samples/s as ms per sample."""
    values = {"dataset.batch_size": 1, "runtime.threads": args.threads, **values}
    sets = common_sets(file, shapes, args) + [f"{key}={value}" for key, value in values.items()] + [
        f"benchmark.repeats={args.repeats}", f"run.output_dir={out}", f"run.id={run_id}"]
    if values.get("benchmark.scenario") == "offline":
        sets += [f"benchmark.loadgen.min_duration_s={OFFLINE_SECONDS}"]
    if not with_accuracy:
        sets += ["benchmark.accuracy.enabled=false", "benchmark.agreement.enabled=false"]
    command = benchmark_command(args.detbench / "configs" / "samples_tiny.yaml", sets, root=args.detbench)
    done = subprocess.run(command, capture_output=True, text=True, cwd=args.detbench, timeout=args.timeout)
    load = os.getloadavg()[0]
    if done.returncode != 0:
        return {"error": f"exit {done.returncode}: {(done.stderr.strip().splitlines() or [''])[-1]}", "load": load}
    summary = json.loads((out / run_id / "summary.json").read_text())
    if values.get("benchmark.scenario") == "offline":
        rate = ((summary.get("scenario") or {}).get("result") or {}).get("samples_per_s")
        shutil.rmtree(out / run_id, ignore_errors=True)
        return {"ms_per_sample": 1000.0 / rate, "load": load} if rate else {"error": "no samples/s", "load": load}
    row = {"forward_ms": summary["forward"]["p50_ms_per_image"],
           "pipeline_ms": summary["pipeline_latency"]["p50_ms_per_image"],
           "undecoded_ms": undecoded_ms_per_image(summary),
           "ran": ran_label(summary["runtime"]),
           "others_share": (summary.get("contention") or {}).get("other_processes_cpu_share"), "load": load}
    if with_accuracy:
        accuracy = summary.get("accuracy") or {}
        drop = accuracy.get("drop") or {}
        row.update(verdict=(summary.get("agreement") or {}).get("verdict", "reference itself"),
                   map_50_95=accuracy.get("map_50_95"), scored=accuracy.get("images"), drop=drop.get("map_50_95"),
                   interval=[(drop.get("interval") or {}).get("low"), (drop.get("interval") or {}).get("high")])
    shutil.rmtree(out / run_id, ignore_errors=True)
    return row


def race(goal: str, minutes: float, file: Path, out: Path, args: argparse.Namespace) -> dict:
    """`benchmark.py tune` on the file with the peer's budget: under latency at batch 1 (the peer's rows are batch
    1), under throughput over every batch size and stream count. A budget too short for a first look at every way
    is refused by tune naming the shortest that would do: the race then resumes with that much more, and says so.
    Returns the winner (its values as a plain run takes them, its figure) and the minutes spent."""
    run_id = f"tune-{goal}"
    sets = common_sets(file, args.shapes, args) + [f"run.output_dir={out}", f"run.id={run_id}"]
    sets += ["dataset.batch_size=1"] if goal == "latency" else []
    command = benchmark_command(args.detbench / "configs" / "samples_tiny.yaml", sets, root=args.detbench,
                                command=("tune", "--goal", goal, "--minutes", f"{minutes:.1f}"))
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, cwd=args.detbench)
    floor = fitting_minutes(done.stdout + done.stderr)
    if done.returncode == 2 and floor:
        print(f"tune --goal {goal} refused {minutes:.1f} min: {(done.stdout + done.stderr).strip().splitlines()[-1]}; "
              f"resumed with {floor:g} min more", flush=True)
        resume = [sys.executable, str(args.detbench / "benchmark.py"), "tune", "--resume", str(out / run_id),
                  "--minutes", f"{floor:g}"]
        done = subprocess.run(resume, capture_output=True, text=True, cwd=args.detbench)
    spent = (time.monotonic() - started) / 60
    document = out / run_id / "sweep.json"
    answer = json.loads(document.read_text()).get("answer", {}) if document.is_file() else {}
    if done.returncode != 0 or not answer.get("winner"):
        said = (done.stdout + done.stderr)[-3000:]
        raise FailedRun(f"tune --goal {goal} gave no answer (exit {done.returncode}):\n{said}")
    values = dict(answer["winner"]["values"])
    if goal == "throughput":
        values["benchmark.scenario"] = "offline"
    print(f"tune --goal {goal} ({spent:.1f} min): {answer['statement']}", flush=True)
    return {"values": values, "shown": answer["winner"]["shown"], "minutes": spent,
            "verdict": answer["winner"].get("verdict")}


def spread(values: list[float]) -> str:
    interval = median_confidence_interval(values, GOAL_INTERVAL)
    if interval:
        return f"{statistics.median(values):.2f} [{interval[0]:.2f}, {interval[1]:.2f}]"
    return f"{statistics.median(values):.2f} (range {min(values):.2f}-{max(values):.2f})" if len(values) > 1 else \
        f"{values[0]:.2f}"


def against_goal(ratios: list[float], goal: float) -> str:
    """Peer over detbench per round: the median, its interval over rounds (or why none) and the goal's judgement."""
    value, interval = statistics.median(ratios), median_confidence_interval(ratios, GOAL_INTERVAL)
    shown = (f"{GOAL_INTERVAL:.0%} interval over rounds x{interval[0]:.3f}-{interval[1]:.3f}" if interval else
             f"{len(ratios)} round(s): too few for an interval")
    return f"x{value:.3f} ({shown}); goal >= {goal}x: {judge_against(value, interval, goal, higher_is_better=True)}"


def describe_ran(row: dict, cpu_default: str) -> str:
    ran = row.get("ran") or {}
    if "error" in ran or not ran:
        return ran.get("error", "not read")
    if ran["runtime"] == "openvino":
        convs = ", ".join(f"{n} {p}" for p, n in sorted(ran["convolutions"].items(), key=lambda kv: -kv[1]))
        others = ", ".join(f"{n} {p}" for p, n in sorted(ran["other_layers"].items(), key=lambda kv: -kv[1]))
        return (f"OpenVINO, inference precision {ran['inference_precision']} (the CPU's default {cpu_default}; "
                f"no hint given), {ran['threads']} threads, {ran['streams']} stream; convolutions {convs}; "
                f"other layers {others}")
    if ran["int8_convolutions"]:
        return (f"ONNX Runtime CPU, QDQ: {ran['int8_convolutions']} convolutions int8 (QLinearConv), "
                f"{ran['float_convolutions']} float between {ran['quantize_nodes']} QuantizeLinear / "
                f"{ran['dequantize_nodes']} DequantizeLinear")
    return f"ONNX Runtime CPU, fp32 ({ran['float_convolutions']} float convolutions)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; an interval needs 5")
    parser.add_argument("--peer-venv", type=Path, default=venvs.PEERS_HOME / venvs.ULTRALYTICS.name)
    parser.add_argument("--skip-install", action="store_true", help="use the peer's venv as it is when it exists")
    parser.add_argument("--ultra", type=Path, default=ROOT.parent / "shared" / "data" / "ultra")
    parser.add_argument("--shapes", type=Path, default=ROOT.parent / "shared" / "data" / "shapes")
    parser.add_argument("--calibration", type=int, default=50, help="the last N scenes calibrate int8; default 50")
    parser.add_argument("--budget", type=float, default=0.01, help="mAP@0.5:0.95 drop allowed; default 0.01")
    parser.add_argument("--threads", type=int, default=2, help="detbench's runtime.threads; default 2")
    parser.add_argument("--repeats", type=int, default=3, help="detbench's timed passes per run; default 3")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds for one run or one peer round")
    parser.add_argument("--detbench", type=Path, default=ROOT,
                        help="the detbench checkout whose benchmark.py runs, e.g. a `git archive` of a commit; "
                             "default: this one")
    parser.add_argument("--output-dir", type=Path, default=None, help="where the work folder goes (default: temp)")
    parser.add_argument("--tune-minutes", type=float, default=None,
                        help="each race's budget; the races then come before round 0 (default: the time the "
                             "peer's benchmark took in round 0, raced after it)")
    parser.add_argument("--no-tune", action="store_true", help="leave tune's two races out")
    args = parser.parse_args()
    model_name, flags = cpu_model(), flags_among(CPU_FLAGS)
    python = venvs.ensure_venv(args.peer_venv.expanduser(), venvs.ULTRALYTICS, args.skip_install)
    work = Path(tempfile.mkdtemp(prefix="detbench-ultralytics-peer-", dir=args.output_dir))
    data, model, scored = prepare_data(args.shapes, args.ultra, work, args.calibration)
    file = args.ultra / "yolo11n-shapes.onnx"
    bf16 = any(flag in flags for flag in ("avx512_bf16", "amx_bf16"))
    configs = [c for c in DETBENCH_CONFIGS if "bf16" not in c[1] or bf16]
    print(f"CPU {model_name}; flags {' '.join(flags)}; {os.cpu_count()} cores; detbench from {args.detbench}; work "
          f"folder {work}", flush=True)

    peer_env: dict = {}
    peer_rounds: list[dict[str, dict]] = []
    raw_rounds: list[dict] = []
    ours: list[dict[str, dict]] = []
    tuned: dict[str, dict] = {}  # goal -> tune's answer, timed in every round after its race
    peer_seconds: list[float] = []
    if args.tune_minutes and not args.no_tune:  # a budget given: the races come first, so every round times them
        for goal in ("latency", "throughput"):
            tuned[goal] = race(goal, args.tune_minutes, file, work / "runs", args)
    for index in range(args.rounds):
        first = index == 0
        peer_row: dict[str, dict] = {}
        our_row: dict[str, dict] = {}

        def peer() -> None:
            started = time.monotonic()
            env, found, raw = run_peer(python, work, data, model, args.ultra, first, args.timeout)
            peer_seconds.append(time.monotonic() - started)
            peer_env.update(env)
            peer_row.update({row["name"]: row for row in found})
            raw_rounds.append(raw)

        def detbench() -> None:
            for backend, precision in alternated(configs, index):
                our_row[f"{backend} {precision}"] = detbench_run(
                    {"runtime.backend": backend, "runtime.precision": precision}, file, args.shapes, work / "runs",
                    f"r{index}-{backend}-{precision}", args, first)
            for goal, answer in tuned.items():
                our_row[f"tune {goal}"] = detbench_run(answer["values"], file, args.shapes, work / "runs",
                                                       f"r{index}-tune-{goal}", args, False)

        for measure in alternated((peer, detbench), index):
            measure()
        peer_rounds.append(peer_row)
        ours.append(our_row)
        if first and not args.no_tune and not tuned:
            for goal in ("latency", "throughput"):
                tuned[goal] = race(goal, peer_seconds[0] / 60, file, work / "runs", args)
        print(f"round {index}: peer ({peer_seconds[-1]:.0f} s) " + ", ".join(
            f"{name} {row['inference_ms']} ms (mAP {row['map_50_95']})" for name, row in peer_row.items()) +
            "; detbench forward p50 " + ", ".join(
            f"{name} {row['forward_ms']:.2f} ms" if "forward_ms" in row else
            f"{name} {row['ms_per_sample']:.2f} ms/sample" if "ms_per_sample" in row else f"{name} {row['error']}"
            for name, row in our_row.items()) + "; raw OpenVINO " + ", ".join(
            f"{name} {value['p50_ms']:.2f} ms" for name, value in raw_rounds[-1].items()), flush=True)

    # --- the peer's rows
    cpu_default = peer_env.get("cpu_inference_precision", "?")
    loads = [row["load"] for rnd in peer_rounds for row in rnd.values()]
    print(f"\nultralytics_benchmark: YOLO11n (shared/data/ultra) at {IMG_SIZE}, {args.rounds} interleaved round(s); "
          f"CPU {model_name}, flags {' '.join(flags)}; {scored} scored scenes, {args.calibration} calibrating int8")
    print(f"peer: Ultralytics {peer_env.get('ultralytics')} benchmark(), OpenVINO {peer_env.get('openvino')}, ONNX "
          f"Runtime {peer_env.get('onnxruntime')}, torch {peer_env.get('torch')} ({peer_env.get('torch_threads')} "
          f"threads); the CPU plugin's default INFERENCE_PRECISION_HINT: {cpu_default} (capabilities "
          f"{' '.join(peer_env.get('cpu_capabilities', []))}); load average during its rows "
          f"{min(loads, default=0):.1f}-{max(loads, default=0):.1f}")
    names = [row["name"] for row in PEER_ROWS]
    medians: dict[str, float] = {}
    maps: dict[str, float] = {}
    for name in names:
        values = [r[name]["inference_ms"] for r in peer_rounds if r.get(name, {}).get("inference_ms")]
        found = [r[name]["map_50_95"] for r in peer_rounds if r.get(name, {}).get("map_50_95") is not None]
        if values and found:
            medians[name], maps[name] = statistics.median(values), statistics.median(found)
    reference = maps.get(FP32_ROW)
    print(f"| peer row | what it ran | mAP@0.5:0.95 (its own AP) | within {args.budget} of its {FP32_ROW} row | "
          f"inference ms/image, median [{GOAL_INTERVAL:.0%} interval] | preprocess + inference + postprocess |")
    print("|---|---|---|---|---|---|")
    within_peer = []
    for name in names:
        if name not in medians:
            status = peer_rounds[0].get(name, {}).get("status", "not run")
            print(f"| {name} | {describe_ran(peer_rounds[0].get(name, {}), cpu_default)} | - | - | failed ({status}) "
                  "| - |")
            continue
        whole = [sum(r[name]["speed"].get(k, 0.0) for k in ("preprocess", "inference", "postprocess"))
                 for r in peer_rounds if r.get(name, {}).get("speed")]
        ok = reference is not None and reference - maps[name] <= args.budget
        if ok:
            within_peer.append(name)
        print(f"| {name} | {describe_ran(peer_rounds[0][name], cpu_default)} | {maps[name]:.4f} | "
              f"{'yes' if ok else 'no'} ({maps[name] - (reference or 0):+.4f}) | "
              f"{spread([r[name]['inference_ms'] for r in peer_rounds if r.get(name, {}).get('inference_ms')])} | "
              f"{spread(whole) if whole else '-'} |")

    # --- detbench's configurations
    our_loads = [row["load"] for rnd in ours for row in rnd.values()]
    print(f"\ndetbench {', '.join(f'{b} {p}' for b, p in configs)} on {file.name}: batch 1, {args.threads} threads, "
          f"{args.repeats} timed passes over {scored + args.calibration} scenes per run; verdicts from round 0 against "
          f"the labels of {scored} scenes; load average during its runs {min(our_loads, default=0):.1f}-"
          f"{max(our_loads, default=0):.1f}")
    print(f"| detbench | ran | verdict | mAP@0.5:0.95 (COCOeval) | drop [95% over images] | forward p50 ms/image, "
          f"median [{GOAL_INTERVAL:.0%} interval] | pipeline p50 ms/image | pipeline without decoding, mean ms/image |")
    print("|---|---|---|---|---|---|---|---|")
    our_medians: dict[str, float] = {}
    for backend, precision in configs:
        name = f"{backend} {precision}"
        first = ours[0].get(name, {})
        runs = [r[name] for r in ours if "forward_ms" in r.get(name, {})]
        if "error" in first or not runs:
            print(f"| {name} | - | {first.get('error', 'failed')} | - | - | - | - | - |")
            continue
        our_medians[name] = statistics.median(r["forward_ms"] for r in runs)
        drop = (f"{first['drop']:+.4f} [{first['interval'][0]:+.4f}, {first['interval'][1]:+.4f}]"
                if first.get("drop") is not None else "-")
        mapped = f"{first['map_50_95']:.4f}" if first.get("map_50_95") is not None else "-"
        print(f"| {name} | {first['ran']} | {first['verdict']} | {mapped} | {drop} | "
              f"{spread([r['forward_ms'] for r in runs])} | {spread([r['pipeline_ms'] for r in runs])} | "
              f"{spread([r['undecoded_ms'] for r in runs])} |")

    # --- the answer and the ratio
    within_ours = [n for n in our_medians if ours[0][n].get("verdict") in WITHIN]
    if not within_ours or not within_peer:
        print("\nno answer: " + ("no detbench configuration is within the budget" if not within_ours else
                                 "no peer row is within the budget"))
        return 0
    answer = min(within_ours, key=our_medians.__getitem__)
    fastest_peer = min(within_peer, key=medians.__getitem__)

    def peer_over(name: str, key: str) -> list[float]:
        """The peer's fastest row's inference time over detbench row `name`'s figure `key`, round by round."""
        return [r[fastest_peer]["inference_ms"] / o[name][key] for r, o in zip(peer_rounds, ours)
                if r.get(fastest_peer, {}).get("inference_ms") and key in o.get(name, {})]

    print(f"\ndetbench's answer: {answer} (verdict {ours[0][answer]['verdict']}), forward p50 "
          f"{our_medians[answer]:.2f} ms/image; the peer's fastest row within the budget: {fastest_peer} "
          f"({describe_ran(peer_rounds[0][fastest_peer], cpu_default).split(';')[0]}), {medians[fastest_peer]:.2f} "
          f"ms/image")
    print(f"peer / detbench, single-stream latency per image (forward): "
          f"{against_goal(peer_over(answer, 'forward_ms'), GOAL)}")
    whole = [sum(r[fastest_peer]["speed"].get(k, 0.0) for k in ("preprocess", "inference", "postprocess")) /
             o[answer]["undecoded_ms"] for r, o in zip(peer_rounds, ours)
             if r.get(fastest_peer, {}).get("speed") and "undecoded_ms" in o.get(answer, {})]
    if whole:
        print(f"peer / detbench, whole pipeline without decoding (the peer's preprocess + inference + postprocess at "
              f"conf 0.001 against detbench's letterbox + forward + NMS at its deployed conf): "
              f"x{statistics.median(whole):.3f} (rounds {min(whole):.3f}-{max(whole):.3f})")
    for goal, raced in tuned.items():
        name, key = f"tune {goal}", ("forward_ms" if goal == "latency" else "ms_per_sample")
        ratios = peer_over(name, key)
        if not ratios:
            print(f"tune --goal {goal}: its answer did not run in any round ({ours[-1].get(name, {}).get('error')})")
            continue
        figure = "forward p50 ms/image" if goal == "latency" else "LoadGen offline ms/sample"
        print(f"tune --goal {goal} in {raced['minutes']:.1f} min: {raced['values']} ({raced['verdict']}; "
              f"{raced['shown']} in the race); the peer's {fastest_peer} inference over its {figure}: "
              f"{against_goal(ratios, LATENCY_GOAL if goal == 'latency' else THROUGHPUT_GOAL)}")
    for name in (raw_rounds[0] if raw_rounds else {}):
        values = [r[name]["p50_ms"] for r in raw_rounds if name in r]
        print(f"raw OpenVINO in the peer's environment, {name}: p50 {spread(values)} ms per inference "
              f"({raw_rounds[0][name]['inference_precision']}, LATENCY, random input)")
    print(f"work folder (exports, the peer's last log): {work}")
    return 0


if __name__ == "__main__":
    sys.exit(command_status(main))
