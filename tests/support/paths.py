"""Paths the tests use, from the checkout's root: import them (`from tests.support.paths import ROOT, SAMPLES`) rather
than working them out from each test file's own location. Plain constants only: no heavy imports, so scripts and
light tests can use them too."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"
SAMPLES = ROOT / "datasets" / "samples"  # the six bundled photos (dog.jpg among them), no labels
SHAPES = ROOT / "datasets" / "shapes"  # labelled scenes (images/, labels/) and their trained yolov7-tiny
TINY_CONFIG = CONFIGS / "samples_tiny.yaml"  # yolov7-tiny on the bundled photos: the base of every quick run
