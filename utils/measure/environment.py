"""What a run ran on: CPU, threads, library versions, build config and the project's git commit."""
from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import torch

_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "KMP_AFFINITY",
                     "OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY", "KINETO_LOG_LEVEL")
# The allocator decides how often a forward faults its activations in afresh (utils.measure.below_layer.page_faults).
ALLOCATOR_VARIABLES = ("GLIBC_TUNABLES", "LD_PRELOAD", "MALLOC_ARENA_MAX", "MALLOC_TRIM_THRESHOLD_",
                       "MALLOC_MMAP_THRESHOLD_", "MALLOC_MMAP_MAX_", "MALLOC_TOP_PAD_", "MALLOC_CONF")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_commit(repo: Path) -> str | None:
    try:
        result = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, timeout=5).stdout.strip()
    return result.stdout.strip() + ("-dirty" if dirty else "")


def describe_environment(project_root: Path) -> dict:
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "cpu_model": cpu_model(),
        "logical_cores": os.cpu_count(),
        "cpu_affinity": affinity,
        "torch_threads": torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torchvision": metadata.version("torchvision"),
        "thread_variables": {name: os.environ.get(name) for name in _THREAD_VARIABLES},
        "libc": " ".join(part for part in platform.libc_ver() if part) or None,
        "allocator_variables": {name: os.environ.get(name) for name in ALLOCATOR_VARIABLES},
        "git_commit": git_commit(project_root),
        "torch_build_config": torch.__config__.show(),
    }
