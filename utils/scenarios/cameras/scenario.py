"""cameras behind the scenario contract: its sources built and looked at at start-up (sources.py), then one
camera run (run.py) in place of the timed passes."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from utils.config.schema import PER_STREAM
from utils.preflight.start_refusals import StartRefused
from utils.record.steps import RUN_STEP
from utils.scenarios.cameras.run import CameraRun
from utils.scenarios.cameras.settings import CameraSettings, camera_settings
from utils.scenarios.cameras.sources import Camera, build_cameras
from utils.record.built_run import RunSections
from utils.scenarios.contract import FoundImages, Scenario, ScenarioRun


@dataclass(frozen=True)
class PreparedCameras:
    settings: CameraSettings
    cameras: tuple[Camera, ...]


class Cameras(Scenario):
    reads_images = False  # its frames come from its sources, decoded in the measured loop
    counters_around = RUN_STEP  # cameras decode while the detector runs: the counters bracket the window
    reads_sections = frozenset({"cameras"})

    def prepare(self, sections: RunSections, images: FoundImages) -> PreparedCameras:
        settings = camera_settings(sections.cameras, sections.dataset, sections.benchmark)
        return PreparedCameras(settings, tuple(build_cameras(settings)))

    def items_root(self, found: FoundImages) -> Path:
        return Path()  # frames are named by their camera (Camera.label)

    def notes(self, sections: RunSections) -> list[str]:
        notes = []
        if sections.cameras.sources:
            notes.append("dataset.path is not read: cameras.sources names the cameras")
        if sections.dataset.labels:
            notes.append("dataset.labels is not read: a camera run scores no accuracy")
        return notes

    def run(self, run: ScenarioRun) -> None:
        prepared: PreparedCameras = run.settings
        cameras = len(prepared.cameras)
        streams = run.built.runtime.streams
        if prepared.settings.detector == PER_STREAM and streams < cameras:
            raise StartRefused(f"cameras.detector per_stream runs {cameras} detectors at once, but runtime.streams "
                               f"auto gave {streams} stream(s) on this machine: detectors would share a "
                               f"stream's threads; set runtime.streams {cameras}, or cameras.detector shared")
        CameraRun(prepared.cameras, prepared.settings, run).run()


SCENARIO = Cameras()
