"""What LoadGen's settings imply, worked out before LoadGen starts: it builds the whole schedule of queries
in memory first, keeps durations as 64-bit nanosecond counts, and then runs until the minimums are met.

So a server `target_qps` of 1e9 asked for ten billion queries (memory grew until the kernel killed the
process), a `min_duration_s` of 1e12 overflowed a duration inside LoadGen's thread (SIGSEGV), and a
multi_stream query of 100,000 samples ran for hours. Each is refused here, naming the key and the bound;
a long but legal test gets an estimate first.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from utils.preflight.memory_fit import size_text
from utils.scenarios.loadgen.test import EXPECTED_RATE_MARGIN
from utils.preflight.start_refusals import StartRefused

KEY = "benchmark.loadgen"
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1
# LoadGen turns min_duration into nanoseconds and doubles it for the schedule (all but server).
MAX_DURATION_S = INT64_MAX / 1e9 / 2 / 1.1
# Measured with mlcommons-loadgen 6.0.17 and a SUT that answers at once (peak RSS growth): 490 bytes per
# sample of one offline query of 1.1e5 and 1.1e6 samples (LoadGen's metadata and the Python sample objects),
# 490-620 bytes per server query of one sample, 93-114 bytes per multi_stream sample.
BYTES_PER_QUERY = 700
BYTES_PER_SAMPLE = 500
OFFLINE_SLACK = 1.1  # LoadGen asks offline for 1.1x the samples the expected rate fills min_duration with
SCHEDULE_SPAN = 2  # LoadGen schedules twice min_duration for all but server (the SUT may be faster)
DEFAULT_LIMIT_S = 3600.0  # without max_duration_s, a test estimated longer than this is refused


class LoadgenRefused(StartRefused):
    """LoadGen settings that would exhaust memory, overflow LoadGen's integers or outlast their bound."""


@dataclass(frozen=True)
class LoadgenPlan:
    queries: int
    samples: int
    schedule_bytes: float  # LoadGen's queries and samples, and the Python side of them
    images_bytes: float  # the decoded images LoadGen keeps loaded
    seconds: Optional[float]  # expected length of the test; None without a measured rate

    @property
    def bytes(self) -> float:
        return self.schedule_bytes + self.images_bytes

    def describe(self) -> str:
        length = f"about {duration_text(self.seconds)}" if self.seconds is not None else "a length not estimated"
        return (f"{self.queries:,} queries of {self.samples:,} samples in all, {length}, "
                f"{size_text(self.bytes)} of memory for the schedule and the loaded images")


def duration_text(seconds: float) -> str:
    for unit, scale in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= scale:
            return f"{seconds / scale:,.1f} {unit}"
    return f"{seconds:,.1f} s"


def check_integers(settings) -> None:
    """Values LoadGen's own integer types cannot hold: refused before any reaches LoadGen."""
    bounds = [("min_duration_s", settings.min_duration_s, MAX_DURATION_S, "s"),
              ("max_duration_s", settings.max_duration_s, MAX_DURATION_S, "s"),
              ("target_latency_ms", settings.target_latency_ms, INT64_MAX / 1e6, "ms"),
              ("min_query_count", settings.min_query_count, INT64_MAX, ""),
              ("samples_per_query", settings.samples_per_query, INT64_MAX, ""),
              ("seed", settings.seed, UINT64_MAX, "")]
    for key, value, bound, unit in bounds:
        if value is not None and value > bound:
            raise LoadgenRefused(f"{KEY}.{key} {value:g} is more than LoadGen can hold (at most {bound:.4g}{unit}, "
                                 "a 64-bit count of nanoseconds or of queries); use a smaller value")


def plan(settings, images: int, image_bytes: Sequence[int], expected_per_s: Optional[float] = None,
         loaded: Optional[int] = None) -> LoadgenPlan:
    """The queries and samples LoadGen will build for these settings, the memory they and the loaded images
    take, and how long the test runs. `image_bytes`: decoded bytes of each image; `expected_per_s`: the rate
    LoadGen is told to expect (the measured one times EXPECTED_RATE_MARGIN; None before it is measured);
    `loaded`: LoadGen's performance sample count."""
    loaded = min(loaded or images, images)
    images_bytes = float(sum(sorted(image_bytes, reverse=True)[:loaded]))
    rate = expected_per_s / EXPECTED_RATE_MARGIN if expected_per_s else None  # what the SUT answers
    scenario, duration = settings.scenario, settings.min_duration_s
    if settings.mode == "accuracy":  # every loaded sample once
        samples = loaded
        queries = {"offline": 1, "multi_stream": math.ceil(loaded / settings.samples_per_query)}.get(scenario, loaded)
        seconds = samples / rate if rate else None
    elif scenario == "server":
        queries = samples = max(settings.min_query_count, math.ceil(min(settings.target_qps * duration, 2.0**62)))
        scheduled = queries / settings.target_qps
        seconds = max(scheduled, samples / rate) if rate else scheduled
    elif scenario == "offline":
        expected = settings.target_qps or expected_per_s
        queries = 1
        samples = settings.min_query_count
        if expected:
            samples = max(samples, int(min(OFFLINE_SLACK * duration * expected, 2.0**62)))
        seconds = samples / rate if rate else None
    else:  # multi_stream: a query every samples_per_query images, for twice min_duration or min_query_count
        per_query = settings.samples_per_query
        scheduled = SCHEDULE_SPAN * duration * expected_per_s / per_query if expected_per_s else 0
        queries = max(settings.min_query_count, math.ceil(min(scheduled, 2.0**62)))
        samples = queries * per_query
        # LoadGen ends once both minimums are met: min_query_count queries, min_duration seconds
        seconds = max(duration, settings.min_query_count * per_query / rate) if rate else None
    schedule = queries * BYTES_PER_QUERY + samples * BYTES_PER_SAMPLE
    return LoadgenPlan(queries, samples, schedule, images_bytes, seconds)


def _culprit(settings) -> str:
    if settings.mode == "accuracy":
        return "dataset.limit"
    if settings.scenario == "server":
        return f"{KEY}.target_qps {settings.target_qps:g} x {KEY}.min_duration_s {settings.min_duration_s:g}"
    if settings.scenario == "offline":
        rate = f"{KEY}.target_qps {settings.target_qps:g}" if settings.target_qps else "the measured rate"
        return f"{KEY}.min_duration_s {settings.min_duration_s:g} x {rate}"
    return (f"{KEY}.samples_per_query {settings.samples_per_query:,} x {KEY}.min_query_count "
            f"{settings.min_query_count:,}")


def check_plan(settings, planned: LoadgenPlan, available: int, where: str) -> None:
    """Refuses a plan that would not fit in memory or would outlast its bound."""
    if planned.bytes > available:
        raise LoadgenRefused(
            f"LoadGen would build {planned.describe()}: more than the {size_text(available)} {where} "
            f"(about {BYTES_PER_QUERY} bytes a query and {BYTES_PER_SAMPLE} a sample, plus the decoded images "
            f"it keeps loaded). {_culprit(settings)} asks for that; lower it, or lower "
            f"{KEY}.performance_sample_count to keep fewer images loaded")
    if planned.seconds is None:
        return
    bound = settings.max_duration_s or DEFAULT_LIMIT_S
    if planned.seconds > bound:
        named = (f"{KEY}.max_duration_s {settings.max_duration_s:g}" if settings.max_duration_s else
                 f"the {duration_text(DEFAULT_LIMIT_S)} a LoadGen test may take unless {KEY}.max_duration_s "
                 "allows more")
        raise LoadgenRefused(
            f"LoadGen would need {planned.describe()}, past {named}. {_culprit(settings)} asks for that; lower "
            f"it, or raise {KEY}.max_duration_s")
