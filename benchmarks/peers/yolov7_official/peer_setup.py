"""The peer's setup: the official wheel in the cache (downloaded once, sha256 checked), and the official code's own
virtual environment beside it, made as benchmarks/peers/venvs.py makes every peer's, with the wheel installed."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from benchmarks.peers import venvs
from benchmarks.peers.yolov7_official.facts import (PEER_IMPORTS, PEER_LICENSE, PEER_REQUIREMENT, PEER_SAME_AS_DETBENCH,
                                                    PEER_WHEEL, PEER_WHEEL_SHA256)
from pipelines.cache_keys import file_sha256
from utils.core.errors import EnvironmentFault, UsageError


class SetupError(EnvironmentFault):
    """The peer (wheel, its modules) or the weights cannot be prepared; the message says what to do."""


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "detbench" / "official_parity"


def run_logged(command: list[str], log: Path, **kwargs: Any) -> subprocess.CompletedProcess:
    log.parent.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    log.write_text(f"$ {' '.join(command)}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
    return result


def ensure_wheel(cache: Path, wheel: Path | None, logs: Path) -> Path:
    """The official wheel in <cache>/wheel: copied from --wheel, else downloaded once; its sha256 checked."""
    target = cache / "wheel" / PEER_WHEEL
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        if wheel is not None:
            if not wheel.is_file():
                raise UsageError(f"--wheel {wheel}: no such file")
            shutil.copyfile(wheel, target)
        else:
            print(f"downloading the official YOLOv7 code ({PEER_REQUIREMENT}, {PEER_LICENSE}) into {target.parent}",
                  flush=True)
            result = run_logged([sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                                  PEER_REQUIREMENT, "-d", str(target.parent)], logs / "pip_download.log")
            if result.returncode != 0 or not target.exists():
                said = [line for line in result.stderr.splitlines() if line.strip()]
                raise SetupError(
                    f"cannot download the official YOLOv7 wheel {PEER_REQUIREMENT} from PyPI "
                    f"(pip said: {said[-1] if said else 'exit status ' + str(result.returncode)}). This script "
                    f"needs it at run time. Without PyPI access, download {PEER_WHEEL} elsewhere "
                    f"(pip download --no-deps {PEER_REQUIREMENT}) and pass it with --wheel PATH. Full pip output: "
                    f"{logs / 'pip_download.log'}")
    digest = file_sha256(target)
    if digest != PEER_WHEEL_SHA256:
        target.unlink()
        raise SetupError(f"{PEER_WHEEL} has sha256 {digest}, not the pinned {PEER_WHEEL_SHA256}; removed it from "
                         "the cache. Check where it came from and run again.")
    return target


def ensure_official_venv(cache: Path, wheel: Path) -> Path:
    """The Python of <cache>/venv: the official wheel (without its declared requirements, facts.PEER_IMPORTS), what
    its steps import, and numpy and OpenCV at detbench's own versions."""
    same = tuple(f"{name}=={version(name)}" for name in PEER_SAME_AS_DETBENCH)
    spec = venvs.VenvSpec(f"the official YOLOv7 code ({PEER_REQUIREMENT})",
                          (("--no-deps", str(wheel)), same + PEER_IMPORTS))
    return venvs.ensure_venv(cache / "venv", spec, skip_install=False)
