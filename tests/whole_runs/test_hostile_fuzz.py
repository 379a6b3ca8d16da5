"""Property-based: whatever a config, a --set or an image file holds, the answer is a validated config, exit 2
with a bounded message, or a skipped image with a reason; never a traceback, never a hang.

Profiles: `ci` (the default, few examples, keeps this module well under a minute) and `fuzz` for a long
hunt: HYPOTHESIS_PROFILE=fuzz python -m pytest tests/whole_runs/test_hostile_fuzz.py -p no:cacheprovider
"""
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from datasets.image_folder import IMAGE_SUFFIXES, decode_image
from pipelines.yolo.stages import Preprocess
from tests.support.paths import ROOT
from utils.config.schema import DEFAULT_MAX_PIXELS, Config, ConfigError, load_config

settings.register_profile("ci", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("fuzz", max_examples=20_000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
MAX_MESSAGE = 8_000  # at most 20 problems of a bounded line each
MAX_LINE = 600
MAX_SECONDS = 5.0  # of CPU time: a hang shows as far more, and CPU time is not stretched by other jobs


def known_keys() -> list[str]:
    keys = []

    def walk(model, prefix):
        for name, field in model.model_fields.items():
            annotation = field.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                walk(annotation, f"{prefix}{name}.")
            keys.append(f"{prefix}{name}")
    walk(Config, "")
    return keys


KEYS = known_keys()
scalars = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=300)
           | st.binary(max_size=50))
yaml_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=6)
                           | st.dictionaries(st.text(max_size=20), inner, max_size=6), max_leaves=40)


# A printed traceback: its head starts a line, and each frame is a line of its own. An input the message quotes
# back stays inside a line (Hypothesis draws strings from this module's own literals: it sent --set 'Traceback').
TRACEBACK_HEAD = "Traceback (most recent call last):"
TRACEBACK_FRAME = re.compile(r'^\s*File "[^"\n]*", line \d+, in ')


def assert_bounded(message: str) -> None:
    assert len(message) < MAX_MESSAGE, len(message)
    assert all(len(line) < MAX_LINE for line in message.splitlines()), max(map(len, message.splitlines()))
    assert not any(line.startswith(TRACEBACK_HEAD) or TRACEBACK_FRAME.match(line)
                   for line in message.splitlines()), message


def children_cpu_s() -> float:
    """CPU seconds of the finished child processes: a refusal's cost that other jobs on the cores do not stretch."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def validate_or_refuse(path: Path, overrides: list[str]) -> None:
    started = time.process_time()
    try:
        load_config(path, overrides)
    except ConfigError as error:
        assert_bounded(str(error))
    assert time.process_time() - started < MAX_SECONDS


def nest(key: str, value) -> dict:
    data = value
    for part in reversed(key.split(".")):
        data = {part: data}
    return data


def merged(pairs: list[tuple[str, object]]) -> dict:
    data: dict = {"dataset": {"path": "datasets/samples"}}
    for key, value in pairs:
        node = data
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            node[parts[-1]] = value
    return data


@pytest.mark.slow
@PROFILE
@given(st.lists(st.tuples(st.sampled_from(KEYS), yaml_values), max_size=8))
def test_any_values_for_known_keys(tmp_path, pairs):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(merged(pairs)))
    validate_or_refuse(path, [])


@PROFILE
@given(st.text(max_size=2000))
def test_any_text_as_a_config_file(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    validate_or_refuse(path, [])


@PROFILE
@given(st.lists(st.one_of(st.text(max_size=200),
                          st.tuples(st.sampled_from(KEYS), st.text(max_size=200)).map("=".join)), max_size=5))
def test_any_set_strings(tmp_path, overrides):
    assume(all("\0" not in override for override in overrides))
    path = tmp_path / "c.yaml"
    path.write_text("dataset:\n  path: datasets/samples\n")
    validate_or_refuse(path, overrides)


def alias_bomb(levels: int) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + f"\ndataset:\n  path: *a{levels - 1}\nwhat: *a{levels - 1}\n"


@pytest.mark.slow
def test_cli_refuses_hostile_configs_quickly(tmp_path):
    cases = {"bomb.yaml": alias_bomb(9), "bomb6.yaml": alias_bomb(6),
             "twice.yaml": "model:\n  arch: yolov7-tiny\ndataset:\n  path: x\nmodel:\n  fuse: false\n",
             "garbage.yaml": "\x7f: [\n" * 50, "deep.yaml": "a: " + "[" * 5000 + "]" * 5000 + "\n"}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        started = children_cpu_s()
        result = subprocess.run([sys.executable, str(ROOT / "benchmark.py"), "--config", str(tmp_path / name)],
                                capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert result.returncode == 2, (name, result.stderr[-2000:])
        assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
        assert len(result.stderr) < MAX_MESSAGE
        assert children_cpu_s() - started < 30  # a hang that blocks ends at the timeout


@pytest.mark.slow
def test_cli_refuses_hostile_set_values_quickly(tmp_path):
    config = tmp_path / "ok.yaml"
    config.write_text("dataset:\n  path: datasets/samples\n")
    for override in ["dataset={a: &a [1, *a]}", "=", "dataset.batch_size=" + "[" * 3000, "run.id=" + "r" * 20000,
                     "model.weights=" + "w/" * 3000, "a.b.c.d=1", "dataset.path.x=1"]:
        started = children_cpu_s()
        result = subprocess.run([sys.executable, str(ROOT / "benchmark.py"), "--config", str(config),
                                 "--set", override], capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert result.returncode == 2, (override[:50], result.stderr[-2000:])
        assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
        assert_bounded(result.stderr)
        assert children_cpu_s() - started < 30  # a hang that blocks ends at the timeout


def sample_encodings() -> list[bytes]:
    photo = cv2.resize(cv2.imread(str(ROOT / "datasets" / "samples" / "dog.jpg")), (48, 36))
    return [cv2.imencode(suffix, photo)[1].tobytes() for suffix in (".jpg", ".png", ".bmp", ".tiff", ".webp")]


ENCODED = sample_encodings()
PREPROCESS = {rect: Preprocess(64, rect, 114, 32) for rect in (False, True)}


@st.composite
def mutated_images(draw) -> bytes:
    data = bytearray(draw(st.sampled_from(ENCODED)))
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(data) - 1))
        action = draw(st.sampled_from(["flip", "cut", "insert", "truncate"]))
        if action == "flip":
            data[at] = draw(st.integers(0, 255))
        elif action == "cut":
            del data[at: at + draw(st.integers(1, 64))]
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        else:
            del data[max(at, 1):]
        if not data:
            break
    return bytes(data)


def decoded_or_skipped(path: Path) -> None:
    started = time.process_time()
    loaded = decode_image(path, DEFAULT_MAX_PIXELS)
    assert time.process_time() - started < MAX_SECONDS
    if loaded.image is None:
        assert isinstance(loaded.error, str) and loaded.error
    else:
        assert loaded.error is None
        assert loaded.image.dtype == np.uint8 and loaded.image.ndim == 3 and loaded.image.shape[2] == 3
        for rect in (False, True):  # and the YOLO preprocessing takes whatever shape it decoded to
            assert PREPROCESS[rect]([loaded.image]).tensor.shape[:2] == (1, 3)


@PROFILE
@given(st.binary(max_size=4096), st.sampled_from(IMAGE_SUFFIXES))
def test_any_bytes_as_an_image(tmp_path, data, suffix):
    path = tmp_path / f"x{suffix}"
    path.write_bytes(data)
    decoded_or_skipped(path)


@PROFILE
@given(mutated_images(), st.sampled_from(IMAGE_SUFFIXES))
def test_mutated_real_images(tmp_path, data, suffix):
    path = tmp_path / f"x{suffix}"
    path.write_bytes(data)
    decoded_or_skipped(path)


LABEL_IMAGES = ROOT / "datasets" / "shapes" / "images"
LABEL_PATHS = [LABEL_IMAGES / "synth0000.jpg", LABEL_IMAGES / "synth0001.jpg"]
NUMBERED = [str(i) for i in range(80)]
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
                           lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner,
                                                                                        max_size=5), max_leaves=30)
ids = st.integers(-3, 3) | st.text(max_size=3) | st.none() | st.lists(st.integers(), max_size=2)
file_names = st.sampled_from(["synth0000.jpg", "synth0001.jpg", "images/synth0001.jpg", "x.jpg", ""]) | st.integers()
boxes = st.lists(st.integers(-5, 10**400) | st.floats() | st.text(max_size=3), min_size=3, max_size=5)
coco_documents = st.fixed_dictionaries({
    "images": st.lists(st.fixed_dictionaries({"id": ids, "file_name": file_names}) | json_values, max_size=4),
    "annotations": st.lists(st.fixed_dictionaries({"image_id": ids, "category_id": ids, "bbox": boxes,
                                                   "iscrowd": st.booleans()}) | json_values, max_size=4),
    "categories": st.lists(st.fixed_dictionaries({"id": ids, "name": st.text(max_size=3)}) | json_values, max_size=3),
}) | json_values


def read_or_refuse(labels: Path) -> None:
    from datasets.labels import GroundTruth, LabelError, load_ground_truth

    started = time.process_time()
    try:
        truth = load_ground_truth(labels, LABEL_IMAGES, LABEL_PATHS, NUMBERED)
    except LabelError as error:
        assert_bounded(str(error))
    else:
        assert isinstance(truth, GroundTruth) and len(truth.images) == len(LABEL_PATHS)
    assert time.process_time() - started < MAX_SECONDS


@PROFILE
@given(coco_documents)
def test_any_coco_document(tmp_path, document):
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(document))
    read_or_refuse(path)


@PROFILE
@given(st.binary(max_size=3000))
def test_any_bytes_as_coco_json(tmp_path, data):
    path = tmp_path / "labels.json"
    path.write_bytes(data)
    read_or_refuse(path)


yolo_lines = st.lists(st.one_of(st.text(max_size=60),
                                st.tuples(st.integers(-2, 100) | st.text(max_size=4),
                                          *[st.floats() | st.integers(-2, 2) | st.just("1e400")] * 4)
                                .map(lambda parts: " ".join(map(str, parts)))), max_size=8).map("\n".join)


@PROFILE
@given(yolo_lines, yolo_lines)
def test_any_yolo_label_files(tmp_path, first, second):
    folder = tmp_path / "labels"
    folder.mkdir(exist_ok=True)
    (folder / "synth0000.txt").write_text(first, encoding="utf-8", errors="surrogatepass")
    (folder / "synth0001.txt").write_text(second, encoding="utf-8", errors="surrogatepass")
    read_or_refuse(folder)
