"""What differs between the machines and settings of two runs, from their env.json, summary.json and
config.yaml: the first thing to read before believing a timing difference."""
from __future__ import annotations

import hashlib
from typing import Any

from utils.storage.finished_run import FinishedRun

# Read first: what most often explains a difference in speed.
FIRST = ("env.cpu_model", "env.logical_cores", "env.cpu_affinity", "summary.threads", "env.torch_threads",
         "env.torch_interop_threads", "env.torch", "env.torchvision", "env.python", "env.git_commit",
         "summary.runtime.backend", "summary.runtime.precision", "summary.weights", "summary.model",
         "summary.img_size", "summary.batch_size", "env.allocator_variables.GLIBC_TUNABLES",
         "env.allocator_variables.LD_PRELOAD")
LONG_TEXT = 200  # longer values (the torch build configuration) are compared by digest
# Identity and timing fields of a run, different in every run and no cause of a difference.
SKIPPED = ("config.run.id", "config.run.output_dir", "summary.runtime.preparation", "env.runtime")


def flatten(data: Any, prefix: str) -> dict[str, Any]:
    """Nested mappings as dotted keys; lists and scalars stay values."""
    if not isinstance(data, dict):
        return {prefix: data}
    flat: dict[str, Any] = {}
    for key, value in data.items():
        flat.update(flatten(value, f"{prefix}.{key}"))
    return flat


def _shown(value: Any) -> Any:
    if isinstance(value, str) and len(value) > LONG_TEXT:
        return f"sha1:{hashlib.sha1(value.encode()).hexdigest()[:12]} ({len(value)} chars)"
    return value


def _without_thread_ids(value: Any) -> Any:
    """Per-thread read-backs (thread_affinity, pinned_threads) as the masks the threads had: thread ids differ
    in every run and are no cause of a difference."""
    if isinstance(value, dict):
        return {key: _without_thread_ids(item) for key, item in value.items()}
    if isinstance(value, list) and value and all(isinstance(item, dict) and "tid" in item for item in value):
        return sorted(repr({key: item[key] for key in sorted(item) if key != "tid"}) for item in value)
    return value


def settings(run: FinishedRun) -> dict[str, Any]:
    summary = {key: _without_thread_ids(run.summary.get(key))
               for key in ("detbench_version", "model", "weights", "fused", "img_size", "batch_size", "threads",
                           "runtime")}
    flat = {**flatten(run.environment(), "env"), **flatten(summary, "summary"), **flatten(run.config(), "config")}
    return {key: _shown(value) for key, value in flat.items()
            if not any(key == skip or key.startswith(skip + ".") for skip in SKIPPED)}


def differences(a: dict[str, Any], b: dict[str, Any]) -> tuple[list[dict], int]:
    """Rows of the fields that differ (a field one side lacks counts as different), the usual suspects first,
    and how many fields are the same."""
    keys = [key for key in FIRST if key in a or key in b]
    keys += sorted((set(a) | set(b)) - set(keys))
    rows = [{"field": key, "a": a.get(key), "b": b.get(key)} for key in keys if a.get(key) != b.get(key)]
    return rows, len(keys) - len(rows)
