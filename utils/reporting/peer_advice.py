"""What OpenVINO would pick by itself on this CPU beside what the run ran, and the detbench settings that run
its choice: pure functions over summary.json's `runtime` (runtime.openvino_defaults)."""
from __future__ import annotations

from typing import Any, Optional

from pipelines.runtimes.spec import quantizes

# OpenVINO's element types as detbench's runtime.precision names them.
PRECISION_NAMES = {"f32": "fp32", "bf16": "bf16", "f16": "fp16"}


def _plural(count: Any, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _described(precision: Any, streams: Any, threads: Any) -> str:
    return f"{precision}, {_plural(streams, 'stream')}, {_plural(threads, 'thread')}"


def peer_settings(runtime: dict[str, Any], scenario: str) -> Optional[list[str]]:
    """The --set overrides that run OpenVINO's own choice in detbench; [] when the run already did, None when
    the run holds no choice to compare with."""
    peer = runtime.get("openvino_defaults")
    if not peer:
        return None
    sets = []
    precision = PRECISION_NAMES.get(peer["inference_precision"], peer["inference_precision"])
    ran = runtime.get("precision", "")
    if quantizes(ran):
        # An int8 model's own choice is where its float layers run: int8+bf16 where OpenVINO picks bf16.
        chosen = "int8+bf16" if precision == "bf16" else "int8"
        if chosen != ran:
            sets.append(f"runtime.precision={chosen}")
    elif precision != ran:
        sets.append(f"runtime.precision={precision}")
    if peer["streams"] != runtime.get("streams"):
        sets.append(f"runtime.streams={peer['streams']}")
        if peer["streams"] > 1 and scenario == "single_stream":
            sets.append("benchmark.scenario=offline")  # streams need requests in flight
    if peer["threads"] != runtime.get("threads"):
        sets.append(f"runtime.threads={peer['threads']}")
    return sets


def peer_lines(runtime: dict[str, Any], scenario: str) -> list[str]:
    """The console's lines: what ran beside OpenVINO's own choice, and where they differ, how to run its choice."""
    sets = peer_settings(runtime, scenario)
    if sets is None:
        return []
    peer = runtime["openvino_defaults"]
    precision = PRECISION_NAMES.get(peer["inference_precision"], peer["inference_precision"])
    lines = [f"  openvino: ran {_described(runtime.get('precision'), runtime.get('streams'), runtime.get('threads'))}; "
             f"OpenVINO's own choice on this CPU (-hint throughput): {_described(precision, peer['streams'], peer['threads'])}"]
    if sets:
        lines.append("  to run OpenVINO's choice in detbench: " + " ".join(f"--set {item}" for item in sets)
                     + ("" if precision == "fp32" else f" (check agreement: {precision} changes the outputs)"))
    return lines
