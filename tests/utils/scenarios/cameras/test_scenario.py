"""The cameras scenario behind the contract (utils/scenarios/cameras/scenario.py): the notes it gives on keys it
does not read, its refusal of per-camera detectors sharing a stream, and what it hands the camera run; the
cameras' sources and the run itself stand in as fakes (their own files test them)."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from utils.config.schema import config_for
from utils.preflight.start_refusals import StartRefused
from utils.record.steps import RUN_STEP
from utils.scenarios.cameras import scenario as module
from utils.scenarios.cameras.scenario import SCENARIO, PreparedCameras
from utils.scenarios.cameras.settings import camera_settings


def sections(cameras=None, dataset=None, streams=1):
    config = config_for("yolov7-tiny", benchmark={"scenario": "cameras"}, cameras=cameras or {},
                        dataset={"path": ".", **(dataset or {})}, runtime={"streams": streams, "threads": 2})
    return SimpleNamespace(cameras=config.cameras, dataset=config.dataset, benchmark=config.benchmark)


def test_copies_of_dataset_path_read_it_and_give_no_note():
    assert SCENARIO.notes(sections()) == []


def test_the_keys_a_camera_run_does_not_read_are_noted():
    notes = SCENARIO.notes(sections(cameras={"sources": ["a.mp4"]}, dataset={"labels": "labels.json"}))
    assert notes == ["dataset.path is not read: cameras.sources names the cameras",
                     "dataset.labels is not read: a camera run scores no accuracy"]


def test_it_reads_its_own_sources_and_counts_around_the_window():
    assert SCENARIO.reads_images is False and SCENARIO.counters_around == RUN_STEP
    assert SCENARIO.reads_sections == frozenset({"cameras"})
    assert SCENARIO.items_root(None) == Path()  # frames are named by their camera, not under a folder


def test_prepare_builds_the_settings_and_one_camera_per_location(monkeypatch):
    built = []
    monkeypatch.setattr(module, "build_cameras", lambda settings: built.append(settings) or ["cam0", "cam1"])
    prepared = SCENARIO.prepare(sections(cameras={"count": 2}), None)
    assert prepared.cameras == ("cam0", "cam1") and built == [prepared.settings]
    assert prepared.settings.locations == (".", ".")


class Ran:
    """Stands in for CameraRun: what the scenario handed it."""

    calls: list = []

    def __init__(self, cameras, settings, run):
        Ran.calls.append((cameras, settings, run))

    def run(self):
        Ran.calls.append("ran")


def scenario_run(detector: str, cameras: int, streams: int):
    parts = sections(cameras={"count": cameras, "detector": detector}, streams=streams if detector != "shared" else 1)
    settings = camera_settings(parts.cameras, parts.dataset, parts.benchmark)
    prepared = PreparedCameras(settings, tuple(f"cam{index}" for index in range(cameras)))
    # runtime.streams as auto resolved it, which the config could not check beforehand.
    return SimpleNamespace(settings=prepared, built=SimpleNamespace(runtime=SimpleNamespace(streams=streams)))


@pytest.mark.parametrize("detector, streams", [("per_stream", 3), ("per_stream", 4), ("shared", 1)])
def test_the_camera_run_gets_the_prepared_cameras(monkeypatch, detector, streams):
    monkeypatch.setattr(module, "CameraRun", Ran)
    Ran.calls = []
    run = scenario_run(detector, 3, streams)
    SCENARIO.run(run)
    assert Ran.calls == [(run.settings.cameras, run.settings.settings, run), "ran"]


def test_per_camera_detectors_on_fewer_streams_are_refused_before_any_camera_starts(monkeypatch):
    monkeypatch.setattr(module, "CameraRun", Ran)
    Ran.calls = []
    run = scenario_run("per_stream", 3, 3)
    run.built.runtime.streams = 2  # what runtime.streams auto gave on this machine
    with pytest.raises(StartRefused, match=r"runs 3 detectors at once, but runtime.streams auto gave 2 stream"):
        SCENARIO.run(run)
    assert Ran.calls == []
