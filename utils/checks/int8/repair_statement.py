"""What accuracy-aware int8 did, in words, from summary.json `runtime.preparation.accuracy_control`
(pipelines/runtimes/int8_repair.py): the console's line, report.html's paragraph and the run's warnings.
Pure functions of that entry."""
from __future__ import annotations

from typing import Any, Mapping, Optional

# A plain int8 that loses this much, or ten budgets, has collapsed rather than slipped: said as a warning.
COLLAPSE_DROP = 0.1
NAMED = 3  # operations named in a sentence


def control_entry(runtime: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    return ((runtime or {}).get("preparation") or {}).get("accuracy_control")


def _names(units: Any) -> str:
    return ", ".join(f"{unit['name']} ({unit['cost']:+.3f})" for unit in list(units)[:NAMED])


def _speed(entry: Mapping[str, Any]) -> str:
    times = entry.get("forward_ms") or {}
    fp32, plain, chosen = times.get("fp32"), times.get("int8_plain"), times.get("int8_chosen")
    if not (fp32 and plain and chosen):
        return ""
    given_up = (chosen - plain) / (fp32 - plain) if fp32 > plain else None
    return (f"; forward {plain:.2f} ms plain, {chosen:.2f} ms now, fp32 {fp32:.2f} ms"
            + ("" if given_up is None else f" ({given_up:.0%} of int8's gain given up)" if given_up > 0
               else " (none of int8's gain given up)"))


def statement(entry: Mapping[str, Any]) -> str:
    """One sentence: the drop before, what was returned to float, the drop after, the speed given up."""
    figure, images = entry["figure"], entry["judged_on"]
    before, after, outcome = entry.get("drop_before"), entry.get("drop_after"), entry["outcome"]
    if outcome == "not_judged":
        return (f"int8 accuracy control: not judged ({figure} needs objects to find on the {images}, and there "
                "were none)")
    head = (f"int8 accuracy control ({figure}, {images}): plain int8 {before:+.4f} against the budget {entry['budget']}"
            + (f" (aiming under {entry['target']:g})" if entry.get("target") is not None else ""))
    reverted = entry.get("reverted") or []
    if not reverted:
        return head + ("; nothing returned to float" if outcome == "within_budget" else f"; {_outcome(entry)}")
    operations = entry.get("operations_reverted") or sum(unit.get("operations", 1) for unit in reverted)
    return (head + f"; {operations} of {entry['operations']} operations returned to float ({_names(reverted)}"
            + (", ..." if len(reverted) > NAMED else "") + f"): {after:+.4f}" + _speed(entry)
            + ("" if outcome == "within_budget" else f"; {_outcome(entry)}"))


def _outcome(entry: Mapping[str, Any]) -> str:
    kept = ("the faster step that came closest is deployed" if entry.get("reverted") else "int8 stays plain")
    return {"not_faster": f"what would fit the budget ran no faster than fp32, so {kept}",
            "nothing_left": f"no step faster than fp32 fits the budget, so {kept}"}.get(entry["outcome"],
                                                                                      entry["outcome"])


def warnings(entry: Optional[Mapping[str, Any]]) -> list[str]:
    """A collapse, loudly, with the operations to blame; a search that found no int8 worth deploying."""
    if not entry or entry.get("drop_before") is None:
        return []
    found = []
    before, budget = entry["drop_before"], entry["budget"]
    if before >= max(COLLAPSE_DROP, 10 * budget):
        blame = entry.get("worst") or []
        found.append(f"int8 lost {before:.2f} mAP on the calibration images ({entry['figure']}): a collapse, not a "
                     "slip" + (f"; the operations that cost most: {_names(blame)}" if blame else
                               "; no single operation or block wins it back alone"))
    if entry["outcome"] in ("not_faster", "nothing_left"):
        found.append(f"int8 accuracy control: {_outcome(entry)} (drop {entry['drop_after']:+.4f} on the calibration "
                     "images, over the budget); the run's verdict judges it. Deploy fp32 or bf16, or raise "
                     "benchmark.accuracy.max_drop")
    return found
