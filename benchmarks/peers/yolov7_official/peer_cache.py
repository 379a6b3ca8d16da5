"""The peer's cache: the official wheel (downloaded once, sha256 checked), its unpacked code and the extra
modules its imports need that detbench's venv lacks."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

from benchmarks.peers.yolov7_official.facts import (PEER_DISTRIBUTION, PEER_EXTRA_MODULES, PEER_LICENSE, PEER_REQUIREMENT,
                                     PEER_VERSION, PEER_WHEEL, PEER_WHEEL_SHA256)
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


def ensure_peer_code(cache: Path, wheel: Path) -> Path:
    """The wheel unpacked once into <cache>/yolov7-wky-package-<version> (renamed into place when complete)."""
    peer_dir = cache / f"{PEER_DISTRIBUTION}-{PEER_VERSION}"
    if (peer_dir / "models" / "yolo.py").is_file():
        return peer_dir
    partial = cache / f".{peer_dir.name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(partial)  # zipfile drops absolute paths and '..' from member names
    shutil.rmtree(peer_dir, ignore_errors=True)
    partial.rename(peer_dir)
    return peer_dir


def missing_modules(python: str) -> list[str]:
    """Distributions of PEER_EXTRA_MODULES whose module this python cannot find."""
    probe = ("import importlib.util, json, sys; "
             "print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]))")
    modules = [module for module, _ in PEER_EXTRA_MODULES]
    result = subprocess.run([python, "-c", probe, *modules], capture_output=True, text=True, check=True,
                            cwd="/")
    absent = set(json.loads(result.stdout))
    return [dist for module, dist in PEER_EXTRA_MODULES if module in absent]


def ensure_peer_deps(cache: Path, logs: Path) -> Path:
    """<cache>/deps: the official code's extra imports that this venv lacks, installed once with --no-deps."""
    deps = cache / "deps"
    marker = deps / ".complete.json"
    if marker.is_file():
        return deps
    needed = missing_modules(sys.executable)
    if needed:
        print(f"installing the peer's extra modules into {deps}: {', '.join(needed)}", flush=True)
        result = run_logged([sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check",
                              "--target", str(deps), *needed], logs / "pip_install_deps.log")
        if result.returncode != 0:
            said = [line for line in result.stderr.splitlines() if line.strip()]
            raise SetupError(f"cannot install the official code's extra modules ({', '.join(needed)}) into {deps}: "
                             f"{said[-1] if said else result.returncode}; see {logs / 'pip_install_deps.log'}")
    deps.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"installed": needed}))
    return deps
