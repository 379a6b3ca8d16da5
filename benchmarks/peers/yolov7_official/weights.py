"""The calibrated weights both sides load: our YOLOv7 with seeded random weights, calibrated on the photos as
the package's docstring says, cached under a digest of everything that shapes them."""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Sequence

from benchmarks.peers.yolov7_official.facts import CONF_THRES
from benchmarks.peers.yolov7_official.peer_setup import SetupError
from pipelines.cache_keys import file_sha256

CALIBRATION_VERSION = 2
CALIBRATION_MAX_IMAGES = 16


def calibration_key(arch: str, seed: int, img_size: int, target: int, paths: Sequence[Path]) -> str:
    from models.yolo import definition_path

    digest = hashlib.sha256(f"v{CALIBRATION_VERSION}|{arch}|{seed}|{img_size}|{target}|{CONF_THRES}".encode())
    digest.update(definition_path(arch).read_bytes())
    for path in paths[:CALIBRATION_MAX_IMAGES]:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def calibrate(arch: str, seed: int, img_size: int, target: int, paths: Sequence[Path], threads: int
              ) -> tuple[dict, dict]:
    """(state_dict, info) of the seeded model calibrated as the module docstring says."""
    import numpy as np
    import torch

    from datasets.image_folder import decode_image
    from models import build_model
    from models.random_weights import BOX_LOGIT_STD, calibrate_batchnorm, calibrate_detect_head, candidate_counts
    from pipelines.boxes.letterbox import letterbox

    torch.set_num_threads(threads)
    model = build_model(arch, seed=seed)
    stride = int(max(model.stride))
    used = list(paths[:CALIBRATION_MAX_IMAGES])
    inputs = []
    for path in used:
        loaded = decode_image(path)
        if loaded.image is None:
            raise SetupError(f"calibration image {path} cannot be decoded: {loaded.error}")
        padded, _ = letterbox(loaded.image, img_size, auto=False, stride=stride)
        chw = np.ascontiguousarray(padded[:, :, ::-1].transpose(2, 0, 1))
        inputs.append(torch.from_numpy(chw).float() / 255.0)
    batch = torch.stack(inputs)
    level_maps = calibrate_batchnorm(model, batch)  # Detect in train mode: the raw per-level maps

    shift = calibrate_detect_head(model.model[-1], level_maps, target, CONF_THRES, BOX_LOGIT_STD)
    counts = candidate_counts(level_maps, shift).tolist()
    state = {key: value.detach().clone() for key, value in model.state_dict().items()}
    info = {"arch": arch, "seed": seed, "img_size": img_size, "calibration_letterbox": "square",
            "images": [path.name for path in used], "box_logit_std": BOX_LOGIT_STD, "bias_shift": shift,
            "target_median_candidates": target,
            "candidates_per_image": dict(zip((path.name for path in used), counts)),
            "conf_thres": CONF_THRES, "calibration_version": CALIBRATION_VERSION}
    return state, info


def ensure_weights(cache: Path, arch: str, seed: int, img_size: int, target: int, paths: Sequence[Path],
                   threads: int, recalibrate: bool) -> tuple[Path, dict]:
    key = calibration_key(arch, seed, img_size, target, paths)
    weights = cache / "weights" / f"{arch}-seed{seed}-calibrated-{key}.pt"
    info_path = weights.with_suffix(".json")
    if weights.is_file() and info_path.is_file() and not recalibrate:
        return weights, json.loads(info_path.read_text())
    print(f"calibrating {arch} (seed {seed}) on {min(len(paths), CALIBRATION_MAX_IMAGES)} images ...", flush=True)
    started = time.perf_counter()
    state, info = calibrate(arch, seed, img_size, target, paths, threads)
    import torch

    weights.parent.mkdir(parents=True, exist_ok=True)
    partial = weights.with_name(f".{weights.name}.partial")
    torch.save(state, partial)
    os.replace(partial, weights)
    info["calibration_s"] = round(time.perf_counter() - started, 1)
    info["sha256"] = file_sha256(weights)
    info_path.write_text(json.dumps(info, indent=1))
    return weights, info
