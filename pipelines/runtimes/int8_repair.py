"""Accuracy-aware int8: when the plain int8 model loses more than the budget on the images that choose, the
operations that cost most are returned to float until it fits, or until what is left is no faster than fp32.

The same search for every runtime (its seam: int8_contract.py; its ranking: int8_ranking.py). A runtime supplies a `QuantizedGraph`: the operations its quantizer put
quantizers in front of, a copy of the model with some of them fed float again (their input quantizers bypassed,
their weights the float model's), a forward of a model, and a way to save one. The harness supplies the
`AccuracyControl`: the drop of a forward's detections from the float model's on the selection images (which
never are the images the run's verdict scores), and the budget.

1. The plain int8's drop; under the target (half the budget), nothing is reverted.
2. Each operation reverted alone (on a large graph, each block first, then the operations of the costliest
   blocks), its drop on the first `ranking_images`: what reverting it wins back is its cost.
3. The most costly first: 1, 2, 4, ... of them reverted together until the drop is under the target, then bisected down to the
   fewest that fit. A step whose forward is no faster than the float model's ends the search.
4. Where no count fits, the faster step that came closest is kept, and where it removed a collapse (at least
   half the drop) the rest is ranked again on top of it (at most MAX_RANKINGS rankings).
Reverting a copy of the quantized model keeps its calibration: nothing is quantized again (as NNCF's accuracy
control does it).
"""
from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

from pipelines.cache_keys import file_digest, parts_digest
from pipelines.runtimes import cache_integrity
from pipelines.runtimes.int8_contract import FLOAT, AccuracyControl, QuantizedGraph, RawForward
from pipelines.runtimes.int8_ranking import Unit, ranked_units

WITHIN = "within_budget"  # the drop on the selection images fits
NOT_FASTER = "not_faster"  # what fits is no faster than fp32: int8 is not worth it here
NOTHING_LEFT = "nothing_left"  # every operation reverted and still over the budget
NOT_JUDGED = "not_judged"  # the selection images gave no drop (no detection to compare against)
TIMING_ROUNDS = 7
MAX_RANKINGS = 3  # rankings on top of what earlier ones reverted, where none of their counts fit
# A kept step that leaves at most this share of the drop it started from removed a collapse, which may have
# hidden every other cost: only then is the rest ranked again.
COLLAPSE_SHARE = 0.5


@dataclass
class Repair:
    """What the search did, as summary.json states it (`runtime.preparation.accuracy_control`)."""

    outcome: str
    before: Optional[float]  # the plain int8's drop on the selection images
    after: Optional[float]  # the chosen model's
    reverted: list[dict[str, Any]] = field(default_factory=list)  # name, cost (drop won back alone), rank, operations
    steps: list[dict[str, Any]] = field(default_factory=list)  # reverted count -> drop, forward ms
    operations: int = 0
    forward_ms: dict[str, float] = field(default_factory=dict)  # fp32, plain int8, chosen: medians, interleaved
    worst: list[dict[str, Any]] = field(default_factory=list)  # the costliest operations, reverted or not
    seconds: float = 0.0
    operations_reverted: int = 0  # the reverted units' operations, each once (a block holds some of the others)

    def document(self, control: AccuracyControl) -> dict[str, Any]:
        return {"outcome": self.outcome, "budget": control.budget, "target": control.target, "figure": control.figure,
                "judged_on": f"{control.images} calibration images (never scored by the run's verdict)",
                "drop_before": self.before, "drop_after": self.after, "operations": self.operations,
                "operations_reverted": self.operations_reverted,
                "reverted": self.reverted, "worst": self.worst, "steps": self.steps,
                "forward_ms": self.forward_ms, "search_s": self.seconds}


def counts_to_try(total: int) -> list[int]:
    """1, 2, 4, ... up to every operation: how many of the most costly are reverted at each step."""
    counts, count = [], 1
    while count < total:
        counts.append(count)
        count *= 2
    return counts + [total] if total else []


forward_clock = time.perf_counter  # what times the forwards; the tests' graphs run on a clock of their own


def median_forward_ms(forwards: dict[str, RawForward], inputs: Sequence[np.ndarray],
                      rounds: int = TIMING_ROUNDS) -> dict[str, float]:
    """Each forward's median ms per input, the forwards interleaved round by round (drift hits them alike)."""
    times: dict[str, list[float]] = {name: [] for name in forwards}
    for name, forward in forwards.items():  # a first, untimed call of each
        forward(inputs[0])
    for _ in range(rounds):
        for name, forward in forwards.items():
            started = forward_clock()
            for array in inputs:
                forward(array)
            times[name].append((forward_clock() - started) * 1e3 / len(inputs))
    return {name: statistics.median(values) for name, values in times.items()}


def speed_against(float_forward: RawForward, forward: RawForward, inputs: Sequence[np.ndarray]) -> float:
    """The forward's median time over the float model's, interleaved; measured again where it reads no faster,
    so one noisy reading never ends the search (the higher of the two readings is kept only if both agree)."""
    first = median_forward_ms({"fp32": float_forward, "int8": forward}, inputs)
    relative = first["int8"] / first["fp32"]
    if relative < 1.0:
        return relative
    second = median_forward_ms({"fp32": float_forward, "int8": forward}, inputs)
    return min(relative, second["int8"] / second["fp32"])


@dataclass
class Step:
    units: list[Unit]  # reverted, in rank order, earlier rankings' first
    model: Any
    drop: Optional[float]
    relative: float  # forward time over the float model's


def search(graph: QuantizedGraph, control: AccuracyControl, rankings: int = MAX_RANKINGS) -> tuple[Any, Repair]:
    """The model to deploy (None: the plain quantized one) and what was done. Where no count of one ranking's
    units fits, the best faster step is kept and the rest ranked again on top of it: an operation whose cost
    a collapse hid (nothing wins back alone while the decode's scores are zero) shows once the collapse is gone.
    Where nothing fits, the faster step that came closest is deployed, and the run's verdict says how far off."""
    started = time.perf_counter()
    float_forward = graph.forward(FLOAT)
    control.reference(float_forward)
    plain = graph.forward(None)
    before = control.drop(plain, None)
    timing_inputs = control.inputs()[:4]
    if before is None:
        return None, Repair(NOT_JUDGED, None, None, seconds=time.perf_counter() - started)
    if before <= control.target:
        return None, Repair(WITHIN, before, before, operations=len(graph.operations()),
                            seconds=time.perf_counter() - started)
    steps: list[Step] = []

    def attempt(units: list[Unit]) -> Step:
        names = list(dict.fromkeys(name for unit in units for name in unit.names))
        model = graph.reverted(names)
        forward = graph.forward(model)
        step = Step(list(units), model, control.drop(forward, None), speed_against(float_forward, forward,
                                                                                      timing_inputs))
        steps.append(step)
        return step

    kept: list[Unit] = []
    worst: list[Unit] = []
    outcome, chosen = NOTHING_LEFT, None
    for _ in range(rankings):
        base = [name for unit in kept for name in unit.names]
        current = control.drop(graph.forward(graph.reverted(base)) if base else plain, control.ranking_images) or 0.0
        every = ranked_units(graph, control, current, base, control.evaluations)
        # Only what wins something back alone; where nothing does, every unit (their cost is in combinations)
        ranked = [unit for unit in every if unit.cost > 0] or ([] if kept else every)
        worst = worst or ranked[:5]
        if not ranked:
            break
        tried: dict[int, Step] = {}
        fits, misses, outcome = None, 0, NOTHING_LEFT
        for count in counts_to_try(len(ranked)):
            tried[count] = attempt(kept + ranked[:count])
            if tried[count].relative >= 1.0:
                outcome = NOT_FASTER
                break
            if tried[count].drop is not None and tried[count].drop <= control.target:
                fits = count
                break
            misses = count
        if fits is not None:  # the fewest that fit, between the last miss and the first fit
            low, high = misses, fits
            while high - low > 1:
                middle = (low + high) // 2
                tried[middle] = attempt(kept + ranked[:middle])
                fitting = tried[middle].drop is not None and tried[middle].drop <= control.target
                low, high = (low, middle) if fitting else (middle, high)
            outcome, chosen = WITHIN, tried[high]
            break
        faster = [step for step in tried.values() if step.relative < 1.0 and step.drop is not None]
        best = min(faster, key=lambda step: step.drop, default=None)
        start = chosen.drop if chosen else before
        if best is None or best.drop >= start:
            break
        chosen, kept = best, best.units
        if best.drop > start * COLLAPSE_SHARE:  # no collapse gone: ranking again would find what this one did
            break
    model, after = (chosen.model, chosen.drop) if chosen else (None, before)
    units = chosen.units if chosen else []
    reverted = [{"name": unit.label, "cost": unit.cost, "rank": rank + 1, "operations": len(unit.names)}
                for rank, unit in enumerate(units)]
    forwards = {"fp32": float_forward, "int8_plain": plain}
    if model is not None:
        forwards["int8_chosen"] = graph.forward(model)
    forward_ms = median_forward_ms(forwards, timing_inputs)
    return model, Repair(outcome, before, after, reverted,
                         [{"reverted": len(step.units), "drop": step.drop, "forward_vs_fp32": step.relative}
                          for step in steps],
                         len(graph.operations()), forward_ms,
                         [{"name": unit.label, "cost": unit.cost, "operations": len(unit.names)} for unit in worst
                          if unit.cost > 0], time.perf_counter() - started,
                         len({name for unit in units for name in unit.names}))


def search_code_digest() -> str:
    """Of this search's code and every runtime's reverting: a cached choice is never one older code made."""
    here = Path(__file__)
    own = [here, here.with_name("int8_ranking.py"), here.with_name("int8_contract.py")]
    return parts_digest({path.name if path.parent == here.parent else path.parent.name: file_digest(path)
                         for path in [*own, *sorted(here.parent.glob("*/reverting.py"))]})


def repaired(graph_of: Callable[[], QuantizedGraph], control: AccuracyControl, quantized: Path,
             files_of: Callable[[Path], list[Path]]) -> tuple[Path, dict[str, Any]]:
    """The model file to deploy and what the search did, cached beside the quantized model by its name (which
    holds the export, the calibration images and the quantization settings) and the control's digest. `files_of`:
    a model file's files (an IR's .xml and .bin). The graph is read only on a cache miss."""
    digest = parts_digest({"quantized": quantized.name, "control": control.digest, "search": search_code_digest()})
    target = quantized.with_name(f"{quantized.stem}.repaired-{digest}{quantized.suffix}")
    document_path = quantized.with_name(f"{quantized.stem}.repaired-{digest}.json")
    with cache_integrity.building(quantized.parent):
        if cache_integrity.usable([document_path], digest):
            document = json.loads(document_path.read_text())
            chosen = target if document["reverted"] else quantized
            if not document["reverted"] or cache_integrity.usable(files_of(target), digest):
                return chosen, dict(document, cache_hit=True, deployed_file=str(chosen))
        graph = graph_of()
        model, repair = search(graph, control)
        document = repair.document(control)
        if model is not None:
            graph.save(model, target)
            cache_integrity.record(files_of(target), digest)
        cache_integrity.write_atomically(document_path, json.dumps(document, indent=2).encode())
        cache_integrity.record([document_path], digest)
    chosen = target if model is not None else quantized
    return chosen, dict(document, cache_hit=False, deployed_file=str(chosen))
