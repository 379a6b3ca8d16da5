"""What concurrent streams' step times say about a LoadGen run's rate: pure arithmetic on the step statistics.

Under LoadGen, each stream's worker times its own batches, so a per-image time is one stream's, and 1000 / it is
one stream's rate, not the run's. In the offline scenario every stream is busy from the first sample to the last,
so the run's rate is close to streams x 1000 / (pipeline ms per image); a runtime's own benchmark tool
(benchmark_app, onnxruntime_perf_test) times the forward alone, whose rate at the speed this run measured is
streams x 1000 / (forward ms per image). The difference is the share of each stream's time spent outside the
forward: preprocess, postprocess and the hand-offs between them.
"""
from __future__ import annotations

from typing import Optional

OFFLINE = "offline"
FORWARD_BOUND_DEFINITION = (
    "offline, every stream busy throughout: streams x 1000 / ms per image, from the mean times of this run's timed "
    "batches. pipeline_samples_per_s is what the streams' whole pipeline allows (close to LoadGen's samples/s); "
    "forward_samples_per_s what they would reach running the forward alone at the speed measured here, the figure "
    "a runtime's own benchmark tool reports; outside_forward_share is the share of each stream's pipeline time "
    "spent outside the forward.")


def forward_bound(scenario: str, streams: int, pipeline_ms_per_image: Optional[float],
                  forward_ms_per_image: Optional[float]) -> Optional[dict]:
    """summary.json scenario.forward_bound for an offline run; None for another scenario (its streams wait for
    queries, so their times say nothing of a rate) or without both times."""
    if scenario != OFFLINE or not pipeline_ms_per_image or not forward_ms_per_image or streams < 1:
        return None
    return {
        "streams": streams,
        "pipeline_samples_per_s": streams * 1000.0 / pipeline_ms_per_image,
        "forward_samples_per_s": streams * 1000.0 / forward_ms_per_image,
        "outside_forward_share": 1.0 - forward_ms_per_image / pipeline_ms_per_image,
        "definition": FORWARD_BOUND_DEFINITION,
    }
