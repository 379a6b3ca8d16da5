"""The one way a peer's or an author's own virtual environment is made and found.

A peer's code (Ultralytics, the official YOLOv7, rfdetr, D-FINE, YOLOX, super-gradients, transformers) is never
imported by detbench: each runs in a virtual environment of its own, as a subprocess, with a driver program from
benchmarks/peers/drivers/ run by that environment's Python (`<venv>/bin/python drivers/<driver>.py ARGS`).

Which Python: CPython 3.11, the interpreter `python3.11` found on PATH (or the one DETBENCH_PEER_PYTHON names),
the same for every peer, whatever Python detbench itself runs on. Not detbench's own interpreter (sys.executable):
that would tie a peer's figures to how detbench happens to be installed (pyproject allows 3.10 and later), and
two peers' environments would differ by more than their packages. 3.11 because the pair both sides run,
torch==2.14.1 and torchvision==0.29.1, is installed here from cp311 wheels, and the peers' pinned old releases
(yolox 0.3.0 built against that torch, super-gradients 3.7.1, ultralytics 8.4.190) install on 3.11.

How: `<python3.11> -m venv <folder>`; then `pip install torch==2.14.1 torchvision==0.29.1` first (unless the
spec says its peer runs no torch: a package that only drives ONNX Runtime, as NudeNet and rapid_layout do, is
not given a gigabyte it never imports), then the peer's own steps in their order (VenvSpec.steps), each once:
the steps done are recorded in <folder>/detbench-steps.json, so a second run installs nothing and a step added
later runs alone (a folder made before any record takes every step once; pip finds what is installed satisfied).
pip's output goes to <folder>-install.log beside the folder. A delete of the folder starts it over. With skip_install, a
folder whose Python exists is used as it is (made by hand, or left half installed on purpose).

Standard library and utils.core.errors only: imported before any setup.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from utils.core.errors import EnvironmentFault

DRIVERS = Path(__file__).resolve().parent / "drivers"  # the programs a peer's Python runs
PEERS_HOME = Path.home() / ".cache" / "detbench-peers"  # where a peer's venv lives unless its script says otherwise
PYTHON_COMMAND = "python3.11"
PYTHON_VARIABLE = "DETBENCH_PEER_PYTHON"
PYTHON_VERSION = "3.11"
TORCH = ("torch==2.14.1", "torchvision==0.29.1")
STEPS_FILE = "detbench-steps.json"


class PeerSetupError(EnvironmentFault):
    """A peer's environment cannot be made; the message names the interpreter or the pip log."""


@dataclass(frozen=True)
class VenvSpec:
    """What goes into a peer's environment: `name` for messages (and the folder's name under PEERS_HOME);
    `steps`, the pip install arguments of each step after torch, in order; `torch`, whether torch's pair comes
    first."""

    name: str
    steps: tuple[tuple[str, ...], ...]
    torch: bool = True

    def all_steps(self) -> list[tuple[str, ...]]:
        return [TORCH, *self.steps] if self.torch else list(self.steps)


# Ultralytics' own environment, shared by ultralytics_benchmark.py, ultralytics_predict.py and author_exports.py:
# the release every figure in RESULTS.md was measured with; nncf and onnxslim are what its int8 and ONNX exports
# would otherwise install themselves.
ULTRALYTICS = VenvSpec("ultralytics", (("ultralytics==8.4.190", "onnx", "onnxruntime", "openvino", "nncf",
                                        "onnxslim"),))


def venv_python(folder: Path) -> Path:
    return folder / "bin" / "python"


def peer_interpreter() -> str:
    """The interpreter every peer's venv is made from, checked to be CPython 3.11."""
    named = os.environ.get(PYTHON_VARIABLE)
    found = shutil.which(named or PYTHON_COMMAND)
    source = f"{PYTHON_VARIABLE}={named}" if named else f"`{PYTHON_COMMAND}` on PATH"
    if found is None:
        raise PeerSetupError(f"no Python {PYTHON_VERSION} for the peer's environment: {source} is not found. "
                             f"Install Python {PYTHON_VERSION} (with its venv module), or name one with "
                             f"{PYTHON_VARIABLE}=/path/to/python{PYTHON_VERSION}")
    said = subprocess.run([found, "--version"], capture_output=True, text=True).stdout.split()
    if said[:1] != ["Python"] or not said[1:2] or not said[1].startswith(PYTHON_VERSION + "."):
        raise PeerSetupError(f"{source} ({found}) says {' '.join(said) or 'nothing'} to --version; every peer's "
                             f"environment is Python {PYTHON_VERSION}: name one with {PYTHON_VARIABLE}")
    return found


def steps_to_run(folder: Path, spec: VenvSpec) -> list[tuple[str, ...]]:
    """The spec's steps (torch's first where it has it), less those the folder's record says are done."""
    record = folder / STEPS_FILE
    done = {tuple(step) for step in json.loads(record.read_text())} if record.is_file() else set()
    return [step for step in spec.all_steps() if step not in done]


def ensure_venv(folder: Path, spec: VenvSpec, skip_install: bool) -> Path:
    """The Python of the peer's environment in `folder`, made and installed into as the module says."""
    python = venv_python(folder)
    if skip_install and python.exists():
        return python
    wanted = steps_to_run(folder, spec) if python.exists() else spec.all_steps()
    if not wanted:
        return python
    folder.parent.mkdir(parents=True, exist_ok=True)
    log = folder.parent / f"{folder.name}-install.log"
    with log.open("a") as sink:
        if not python.exists():
            interpreter = peer_interpreter()
            print(f"{spec.name}: creating its virtual environment {folder} ({interpreter} -m venv) ...", flush=True)
            made = subprocess.run([interpreter, "-m", "venv", str(folder)], stdout=sink, stderr=sink)
            if made.returncode != 0:
                raise PeerSetupError(f"{interpreter} -m venv {folder} failed (exit {made.returncode}); see {log}")
            (folder / STEPS_FILE).unlink(missing_ok=True)  # a record left by an environment deleted by hand
        for step in wanted:
            print(f"{spec.name}: pip install {' '.join(step)} (log {log}) ...", flush=True)
            done = subprocess.run([str(python), "-m", "pip", "install", *step], stdout=sink, stderr=sink)
            if done.returncode != 0:
                raise PeerSetupError(f"{spec.name}: pip install {' '.join(step)} failed (exit {done.returncode}); "
                                     f"see {log}")
            record = folder / STEPS_FILE
            recorded = json.loads(record.read_text()) if record.is_file() else []
            record.write_text(json.dumps(recorded + [list(step)], indent=1))
    return python


def existing_venv(folder: Path, made_by: str) -> Path:
    """The Python of a peer's environment that must already exist; `made_by` says which script makes one."""
    python = venv_python(folder)
    if not python.exists():
        raise PeerSetupError(f"no peer environment at {folder}: {made_by} makes one (or give another folder)")
    return python


def peer_environment(base: Mapping[str, str], extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a peer's driver runs in: `base` without PYTHONPATH (an inherited one could put detbench's
    own `models` and `utils` before the peer's packages of those names), a display-free matplotlib, torch's
    profiler quiet, and `extra` last."""
    env = {key: value for key, value in base.items() if key != "PYTHONPATH"}
    env["MPLBACKEND"] = "Agg"
    env.setdefault("KINETO_LOG_LEVEL", "5")
    return {**env, **(extra or {})}
