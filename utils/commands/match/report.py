"""What `match` prints: each recipe tried with its recall and precision against the application's detections, the
recipe that reproduces them (or the closest, and where it still differs), as one line of --set flags and as a
config fragment to keep."""
from __future__ import annotations

from typing import Any, Sequence

import yaml

from utils.commands.match.candidates import flag_value
from utils.commands.match.theirs import Theirs
from utils.commands.match.trial import Outcome

SHOWN_IMAGES = 5


def changes_of(outcome: Outcome, config_postprocess: Any) -> dict[str, dict[str, Any]]:
    """The keys the outcome sets, by section: every preprocessing change, the decode's keys that differ from the
    config's, and its cut always (the application's cut is never the config's by chance)."""
    preprocess = {key: value for change in outcome.changes for key, value in change.keys}
    postprocess = {key: value for key, value in outcome.decode.keys
                   if key == "conf_thres" or getattr(config_postprocess, key, None) != value}
    return {section: keys for section, keys in (("preprocess", preprocess), ("postprocess", postprocess)) if keys}


def flags(keys: dict[str, dict[str, Any]]) -> str:
    return " ".join(f"--set {section}.{key}={flag_value(value)}" for section, values in keys.items()
                    for key, value in values.items())


def fragment(keys: dict[str, dict[str, Any]]) -> str:
    plain = {section: {key: list(value) if isinstance(value, tuple) else value for key, value in values.items()}
             for section, values in keys.items()}
    return yaml.safe_dump(plain, sort_keys=False, default_flow_style=False).rstrip()


def _ratio(value: float) -> str:
    return f"{value:.3f}"


def table(tried: Sequence[Outcome], config_postprocess: Any) -> str:
    lines = [f"{'#':>3}  {'loose recall':>12} {'precision':>9}  {'strict recall':>13} {'precision':>9}  recipe"]
    for number, outcome in enumerate(tried, start=1):
        counts = outcome.counts
        keys = changes_of(outcome, config_postprocess)
        keys.get("postprocess", {}).pop("conf_thres", None)  # every trial's cut is the same: the header says it
        said = flags({section: values for section, values in keys.items() if values}).replace("--set ", "")
        said = said or "(the config's recipe)"
        lines.append(f"{number:>3}  {_ratio(counts.loose_recall):>12} {_ratio(counts.loose_precision):>9}  "
                     f"{_ratio(counts.strict_recall):>13} {_ratio(counts.strict_precision):>9}  {said}")
    return "\n".join(lines)


def differences(outcome: Outcome, root: Any) -> list[str]:
    """Where the closest recipe still differs, image by image, worst first."""
    worst = sorted(((counts.reference - counts.loose) + (counts.candidate - counts.loose), path, counts)
                   for path, counts in outcome.per_image)
    lines = []
    for missed, path, counts in reversed(worst):
        if missed and len(lines) < SHOWN_IMAGES:
            lines.append(f"  {path.relative_to(root).as_posix()}: {counts.reference - counts.loose} of your "
                         f"{counts.reference} detections unmatched, {counts.candidate - counts.loose} of detbench's "
                         f"{counts.candidate} beside none of yours")
    return lines


def answer(best: Outcome, theirs: Theirs, config_postprocess: Any, root: Any) -> str:
    keys = changes_of(best, config_postprocess)
    counts = best.counts
    figures = (f"recall {_ratio(counts.loose_recall)}, precision {_ratio(counts.loose_precision)} at IoU 0.5 and "
               f"the same class (IoU 0.9 and scores within 0.01: {_ratio(counts.strict_recall)}, "
               f"{_ratio(counts.strict_precision)})")
    if best.reproduces:
        lines = [f"reproduced: your {theirs.count} detections, {figures}"]
    else:
        lines = [f"not reproduced by any recipe tried; the closest gives {figures}", "where it still differs:",
                 *differences(best, root)]
    lines += ["as flags:", f"  {flags(keys)}", "to keep (a config fragment):",
              *(f"  {line}" for line in fragment(keys).splitlines())]
    return "\n".join(lines)
