"""The bound from isolated costs: how many cameras the cores could serve were decoding and the pipeline all that ran,
from what one camera costs. Pure arithmetic over a camera run's summary.json `cameras` section.

One camera costs, each second, its decoder's CPU milliseconds per frame times the frames it decodes per second
(every frame of the source: later frames are predicted from it) plus the pipeline's (preprocess, forward,
postprocess) CPU milliseconds per frame times the frames it hands on per second (`cameras.fps`, else every frame).
The cores give 1000 ms each per second: the bound is their sum divided by one camera's cost. It leaves out what
N cameras cost each other (caches, the detector's queue, the latency budget), which is what the search measures.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

PIPELINE_PARTS = ("preprocess", "forward", "postprocess")


@dataclass(frozen=True)
class IsolatedCosts:
    decode_ms: float  # CPU ms per frame decoded
    pipeline_ms: float  # CPU ms per frame detected: preprocess + forward + postprocess
    decoded_fps: float  # frames one camera decodes per second
    delivered_fps: float  # frames one camera hands to the detector per second

    @property
    def camera_ms_per_s(self) -> float:
        """CPU milliseconds one camera costs each second."""
        return self.decode_ms * self.decoded_fps + self.pipeline_ms * self.delivered_fps


def isolated_costs(section: Mapping[str, Any]) -> Optional[IsolatedCosts]:
    """From a measured camera run's `cameras` section (its totals, per camera); None when a part is missing."""
    if not section or section.get("status") != "measured":
        return None
    total, window_s = section["total"], section.get("window_s")
    per_frame = total.get("cpu_ms_per_frame") or {}
    cameras = (section.get("settings") or {}).get("cameras") or 0
    parts = [per_frame.get(part) for part in ("decode", *PIPELINE_PARTS)]
    if not window_s or not cameras or any(part is None for part in parts):
        return None
    return IsolatedCosts(parts[0], sum(parts[1:]), total["decoded"] / window_s / cameras,
                         total["delivered"] / window_s / cameras)


def cameras_bound(costs: IsolatedCosts, cores: int) -> Optional[float]:
    """cores x 1000 / one camera's CPU ms per second; None for a camera that costs nothing measured."""
    cost = costs.camera_ms_per_s
    return cores * 1000.0 / cost if cost > 0 else None


def bound_line(costs: IsolatedCosts, cores: int) -> str:
    bound = cameras_bound(costs, cores)
    return (f"{cores} core(s) x 1000 ms / (decode {costs.decode_ms:.2f} ms x {costs.decoded_fps:.1f} frames/s + "
            f"pipeline {costs.pipeline_ms:.2f} ms x {costs.delivered_fps:.1f} frames/s = "
            f"{costs.camera_ms_per_s:.0f} ms per camera-second) = "
            + (f"{bound:.2f} cameras" if bound is not None else "no bound (nothing measured)"))
