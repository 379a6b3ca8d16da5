"""The search `match` runs: depth by depth (the config's recipe, single changes, pairs, triples), within the
budget of preprocessings, stopping at one that reproduces the application's detections exactly; then the cut a
deployment would have been written with, among round ones that keep the same matches."""
from __future__ import annotations

from pathlib import Path

from pipelines.exported.recipe import Recipe
from utils.commands.match import candidates
from utils.commands.match.report import answer, table
from utils.commands.match.trial import Outcome, Trials


def search(trials: Trials, tries: int, root: Path) -> str:
    """What match prints, after at most `tries` preprocessings; `root`: dataset.path, which names images."""
    theirs, images, post = trials.theirs, trials.images, trials.postprocess
    # The config's recipe as the pipeline states it (pipelines/exported/recipe_said.py).
    said = trials.family.build_pipeline(trials.network, trials.forward, trials.preprocess, post).recipe()
    decodes = candidates.decodes(said["postprocess"]["nms"], post.iou_thres, bool(post.agnostic), post.max_det,
                                 candidates.cut_below(theirs.lowest_score()), theirs.most_per_image())
    steps = said["preprocess"]
    base = Recipe(**{key: tuple(value) if key in ("mean", "std") else value for key, value in steps.items()
                     if key in Recipe.__dataclass_fields__})
    singles = candidates.single_changes(base, normalised_outside=base.input_type == "float32")
    tried: list[Outcome] = []
    seen: set = set()
    ranked = list(singles)
    for depth in range(candidates.DEEPEST + 1):
        if depth < 2:
            combos = [()] if depth == 0 else [(change,) for change in singles]
        else:  # on the best of the depth before, each other step's change, the best singles first
            combos = candidates.extended(max((o for o in tried if len(o.changes) == depth - 1),
                                             key=lambda o: o.rank).changes, ranked)
        for changes in candidates.distinct_effects(base, combos, seen):
            if len(tried) >= tries or (tried and tried[-1].exact):
                break
            tried.append(max(trials.run(changes, decodes), key=lambda outcome: outcome.rank))
        if depth == 1:
            ranked = [o.changes[0] for o in sorted((o for o in tried if len(o.changes) == 1), key=lambda o: o.rank,
                                                   reverse=True)]
        if len(tried) >= tries or tried[-1].exact or not any(len(o.changes) == depth for o in tried):
            break
    best = max(tried, key=lambda outcome: outcome.rank)
    best = _round_cut(trials, best, theirs.lowest_score())
    head = (f"match: your {theirs.count} detections on {len(images)} image(s) ({theirs.file}, {theirs.form}"
            f"{'; ' + theirs.class_note if theirs.class_note else ''}); model.file {trials.network.file}, layout "
            f"{said['layout']}, its recipe {said['ground']}; {len(tried)} preprocessing(s) tried, each with {len(decodes)} postprocessing(s) at "
            f"the cut {decodes[0].as_dict()['conf_thres']:g}, just below your lowest score; the best of each:")
    return "\n".join([head, table(tried, post), "", answer(best, theirs, post, root)])


def _round_cut(trials: Trials, best: Outcome, lowest: float) -> Outcome:
    """The best recipe at the highest round cut that matches at least as well (a deployment's cut is written as
    0.25, not as its detections' lowest score less a margin); the margin's own cut where none does."""
    cuts = candidates.round_cuts(lowest)
    if not cuts:
        return best
    keys = best.decode.as_dict()
    decodes = [candidates.Decode(tuple({**keys, "conf_thres": cut}.items())) for cut in cuts]
    for outcome in trials.run(best.changes, decodes):
        if outcome.rank >= best.rank:
            return outcome
    return best
