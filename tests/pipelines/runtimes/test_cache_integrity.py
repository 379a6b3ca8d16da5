"""The cache of exported models heals: a truncated, corrupt or foreign file is rebuilt with one line saying
so; a cache_dir that cannot hold the cache is refused naming the key; two runs sharing a cache never read a
half-written file (one builds, the other waits and uses it)."""
from __future__ import annotations

import json
import logging
import multiprocessing
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import onnx
import pytest
import torch

from pipelines.runtimes import cache_integrity
from pipelines.runtimes.cache_integrity import CacheUnusable, record, usable, usable_directory
from pipelines.runtimes.onnx_export import export_onnx
from tests.support.paths import ROOT, SHAPES


@pytest.fixture
def artefact(tmp_path):
    files = [tmp_path / "m.xml", tmp_path / "m.bin"]
    files[0].write_bytes(b"<net/>" * 100)
    files[1].write_bytes(bytes(range(256)) * 40)
    record(files, "key-a")
    return files


def healed(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "detbench.cache"]


def test_a_whole_artefact_is_used_silently(artefact, caplog):
    assert usable(artefact, "key-a") and healed(caplog) == []


def test_nothing_cached_is_a_plain_miss(tmp_path, caplog):
    assert not usable([tmp_path / "x.onnx"], "k") and healed(caplog) == []


@pytest.mark.parametrize("damage, says", [
    (lambda files: files[1].write_bytes(files[1].read_bytes()[:1000]), "is truncated (m.bin: 1,000 of 10,240 bytes)"),
    (lambda files: files[1].write_bytes(b"\xff" + files[1].read_bytes()[1:]), "is corrupt (m.bin no longer matches"),
    (lambda files: files[1].unlink(), "is incomplete (m.bin missing)"),
    (lambda files: cache_integrity.record_path(files[0]).unlink(), "has no readable checksum record"),
    (lambda files: cache_integrity.record_path(files[0]).write_text("{"), "has no readable checksum record"),
])
def test_a_damaged_artefact_is_announced_once_as_rebuilt(artefact, caplog, damage, says):
    damage(artefact)
    assert not usable(artefact, "key-a")
    lines = healed(caplog)
    assert len(lines) == 1 and says in lines[0] and lines[0].endswith("; rebuilding it")


def test_a_foreign_artefact_is_rebuilt(artefact, caplog):
    assert not usable(artefact, "key-b")
    assert "was built for another key" in healed(caplog)[0]


def test_cache_dir_naming_a_file_is_refused_naming_the_key(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(CacheUnusable, match=r"runtime.cache_dir .*file is a file, not a folder; point runtime.cache_dir"):
        usable_directory(tmp_path / "file")


def test_read_only_cache_dir_is_refused_naming_the_key(tmp_path):
    if os.geteuid() == 0:  # root writes through permission bits; sysfs refuses new files even to root
        folder = Path("/sys/fs")
    else:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o555)
    with pytest.raises(CacheUnusable, match=r"runtime.cache_dir .* is read-only"):
        usable_directory(folder)


def test_an_unusable_default_cache_runs_without_it_and_says_so(tmp_path, monkeypatch, caplog):
    (tmp_path / "not-a-folder").write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "not-a-folder"))
    folder = usable_directory(None)
    assert folder.is_dir() and os.access(folder, os.W_OK)
    assert "nothing is kept for the next run" in healed(caplog)[0]


@pytest.mark.slow
def test_a_truncated_export_is_rebuilt_and_then_hit(network, tmp_path, caplog):
    example = torch.zeros(1, 3, 64, 64)
    first = export_onnx(network, example, tmp_path)
    size = first.path.stat().st_size
    with open(first.path, "r+b") as handle:
        handle.truncate(size // 3)
    again = export_onnx(network, example, tmp_path)
    assert not again.cache_hit and again.path.stat().st_size == size
    onnx.checker.check_model(str(again.path))
    assert f"cache: {first.path} is truncated" in healed(caplog)[0]
    assert export_onnx(network, example, tmp_path).cache_hit


def truncated_int8_heals(cache_dir: Path) -> dict:
    """In a process of its own, as tests/pipelines/runtimes/test_quantization.py does: NNCF quantizes, the cached IR's .bin is cut,
    and a second runtime rebuilds it and runs."""
    from datasets.image_folder import DatasetBatches, find_images
    from pipelines.runtimes.registry import build_runtime
    from pipelines.yolo import family
    from utils.config.schema import CalibrationSection, config_for
    from utils.checks.int8.calibration_inputs import calibration_inputs

    lines: list[str] = []
    logging.getLogger("detbench.cache").addHandler(type("H", (logging.Handler,), {
        "emit": lambda self, record: lines.append(record.getMessage())})())
    network = family.load_network("yolov7-tiny", str(SHAPES / "yolov7-tiny-shapes.pt"), seed=0)
    calibration = calibration_inputs(family, network, config_for("yolov7-tiny", preprocess={"img_size": 96}).preprocess,
                                     config_for("yolov7-tiny").postprocess,
                                     DatasetBatches(find_images(SHAPES / "images"), 1),
                                     CalibrationSection(images=4, keep_float=["Detect"]))
    batch = torch.from_numpy(next(iter(calibration.inputs())))
    first = build_runtime("openvino", precision="int8", threads=1, cache_dir=cache_dir, calibration=calibration,
                          input_precision="f32")  # float batches fed below
    output = first.prepare(network, batch)(batch)
    quantized = Path(first.settings()["preparation"]["quantized_file"])
    weights = quantized.with_suffix(".bin")
    with open(weights, "r+b") as handle:
        handle.truncate(weights.stat().st_size // 2)
    second = build_runtime("openvino", precision="int8", threads=1, cache_dir=cache_dir, calibration=calibration,
                           input_precision="f32")
    repeated = second.prepare(network, batch)(batch)
    return {"hit": second.settings()["preparation"]["quantized_cache_hit"], "lines": lines,
            "equal": torch.equal(output, repeated)}


@pytest.mark.slow
def test_a_truncated_int8_model_is_rebuilt_with_one_line(tmp_path):
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        found = pool.submit(truncated_int8_heals, tmp_path).result(timeout=900)
    assert found["hit"] is False and found["equal"]
    assert len(found["lines"]) == 1 and "is truncated" in found["lines"][0] and ".int8-" in found["lines"][0]


EXPORT = """
import json, sys, torch
from pipelines.runtimes.onnx_export import export_onnx
from pipelines.runtimes.registry import build_runtime
from pipelines.yolo.family import load_network
result = export_onnx(load_network("yolov7-tiny", None, seed=0), torch.zeros(1, 3, 64, 64), sys.argv[1])
print(json.dumps({"hit": result.cache_hit, "path": str(result.path)}))
"""


@pytest.mark.slow
def test_two_processes_sharing_a_cache_build_once_and_both_read_a_whole_file(tmp_path):
    runs = [subprocess.Popen([sys.executable, "-c", EXPORT, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = []
    for run in runs:
        out, err = run.communicate(timeout=600)
        assert run.returncode == 0, err[-2000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert sorted(result["hit"] for result in results) == [False, True]
    assert results[0]["path"] == results[1]["path"]
    onnx.checker.check_model(results[0]["path"])
    assert not list(tmp_path.glob(".*partial"))


@pytest.mark.slow
def test_cli_exits_2_naming_the_key_when_cache_dir_is_a_file(tmp_path, capsys):
    from benchmark import main

    (tmp_path / "cache").write_text("x")
    code = main(["--config", str(ROOT / "configs" / "samples_tiny.yaml"), "--set", "preprocess.img_size=64",
                 "--set", "runtime.backend=onnxruntime", "--set", f"runtime.cache_dir={tmp_path / 'cache'}",
                 "--set", f"run.output_dir={tmp_path / 'out'}", "--set", "run.id=r"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: runtime.cache_dir") and "is a file, not a folder" in err
    assert "Traceback" not in err and not (tmp_path / "out" / "r").exists()
