"""Which verdict each candidate may claim (utils/commands/tune/verdicts.py): judged once per way, reused only where the
detections were checked equal; undecided on a first look's few images, judged again on more; one check per way."""
from utils.commands.sweep.answer import PointFigures
from utils.commands.tune.space import Candidate
from utils.commands.tune.state import Entry, Run, run_dir_name
from utils.commands.tune.verdicts import (Check, check_of, checkers, drop_failed, images_to_settle, settle_waiting,
                                          take_verdict)

HEADER = "image,class_id,class_name,score,x1,y1,x2,y2\n"
BOXES = "dog.jpg,16,dog,0.90000,10.00,10.00,110.00,110.00\n"
MOVED = "dog.jpg,16,dog,0.90000,60.00,10.00,160.00,110.00\n"


def entry(tmp_path, batch, agreement, checks, detections=BOXES, status="complete", doubt=None, backend="rt"):
    candidate = Candidate((("runtime.backend", backend), ("runtime.precision", "int8"), ("dataset.batch_size", batch)))
    run = Run(candidate.name, 1, checks, f"{candidate.name},round=1", status)
    (tmp_path / run.run_dir).mkdir()
    (tmp_path / run.run_dir / "detections.csv").write_text(HEADER + detections)
    run.figures = PointFigures(candidate.name, candidate.values, 10.0, None, agreement, (10.0,), doubt=doubt)
    return Entry(candidate, [run])


def test_an_equal_run_takes_its_ways_verdict(tmp_path):
    judge, other = entry(tmp_path, "1", "within_budget", True), entry(tmp_path, "2", "unchecked", False)
    take_verdict(judge, judge.runs[0])
    take_verdict(other, other.runs[0])
    assert other.verdict is None  # no check of its own
    assert settle_waiting([judge, other], tmp_path) == []
    assert other.verdict == "within_budget" and other.verdict_from == judge.name and other.can_win


def test_a_run_whose_detections_differ_checks_its_own(tmp_path):
    judge, other = entry(tmp_path, "1", "equal", True), entry(tmp_path, "2", "unchecked", False, MOVED)
    take_verdict(judge, judge.runs[0])
    lines = settle_waiting([judge, other], tmp_path)
    assert other.verdict is None and other.needs_check
    assert "detections differ" in lines[0]


def test_a_failing_verdict_drops_the_whole_way_where_detections_are_equal(tmp_path):
    judge, other = entry(tmp_path, "1", "different", True), entry(tmp_path, "2", "unchecked", False)
    take_verdict(judge, judge.runs[0])
    settle_waiting([judge, other], tmp_path)
    assert "cannot win" in judge.dropped["reason"]
    assert "cannot win" in other.dropped["reason"] and judge.name in other.dropped["reason"]


def test_a_way_that_cannot_run_drops_its_candidates(tmp_path):
    judge, other = entry(tmp_path, "1", "equal", True), entry(tmp_path, "2", "unchecked", False)
    judge.runs[0].status, judge.runs[0].reason = "failed", "cannot run (exit 2): error: no such model"
    drop_failed([judge, other], judge, judge.runs[0])
    assert "its way of computing cannot run here" in other.dropped["reason"]


def test_without_a_judge_a_candidate_checks_itself_next_round(tmp_path):
    alone = entry(tmp_path, "2", "unchecked", False)
    settle_waiting([alone], tmp_path)
    assert alone.needs_check and alone.verdict is None


def test_a_later_attempt_never_reuses_a_name():
    taken = {"c,round=1", "c,round=1,try=2"}
    assert run_dir_name("c", 1, taken.__contains__) == "c,round=1,try=3"
    assert run_dir_name("c", 2, taken.__contains__) == "c,round=2"


# --- undecided on a first look's images --------------------------------------------------------------------------

def test_what_a_runs_summary_says_of_its_check():
    labelled = {"images_found": 200, "accuracy": {"images": 30},
                "agreement": {"images": 30, "accuracy_drop": {"images_needed": 120}}}
    assert check_of(labelled) == Check(30, 200, 120)
    # int8 scores only the images it did not calibrate on; without labels the label-free verdict says what it needs.
    int8 = {"images_found": 200, "calibration": {"scored_images": 100}, "accuracy": {"images": 30},
            "agreement": {"label_free": {"images_needed": 75}}}
    assert check_of(int8) == Check(30, 100, 75)
    assert check_of({"images_found": 6, "agreement": {"images": 6}}) == Check(6, 6, None)


def test_an_undecided_verdict_asks_for_the_images_that_would_decide_it_at_most_the_ways():
    assert images_to_settle(Check(30, 200, 120)) == 120
    assert images_to_settle(Check(30, 100, 400)) == 100  # capped at what the way can score
    assert images_to_settle(Check(30, 200, None)) == 60  # nothing said: twice as many
    assert images_to_settle(Check(30, 200, 20)) == 60  # an estimate it already passed: twice as many
    assert images_to_settle(Check(100, 100, 400)) is None  # it scored all it could
    assert images_to_settle(Check()) is None


def test_undecided_on_a_first_looks_images_the_way_is_judged_again_not_dropped(tmp_path):
    look = entry(tmp_path, "1", "undecided", True, doubt="undecided: the interval holds the budget")
    assert take_verdict(look, look.runs[0], Check(30, 200, 120)) == 120
    assert look.dropped is None and look.verdict is None and look.needs_check and look.can_win is None
    # Undecided on every image it can score: dropped, saying so.
    final = entry(tmp_path, "2", "undecided", True, doubt="undecided: the interval holds the budget")
    assert take_verdict(final, final.runs[0], Check(200, 200, 400)) is None
    assert "cannot win" in final.dropped["reason"]
    assert "on 200 image(s), all its way could score" in final.dropped["reason"]
    # A decided verdict rests on the images it scored.
    decided = entry(tmp_path, "4", "within_budget", True)
    assert take_verdict(decided, decided.runs[0], Check(30, 200, None)) is None
    assert decided.can_win and decided.verdict_images == 30


def test_a_full_run_takes_a_first_looks_verdict_over_the_images_the_look_timed(tmp_path):
    judge = entry(tmp_path, "1", "equal", True)
    take_verdict(judge, judge.runs[0], Check(30, 200, None))
    # The full run found one more box on an image the look never timed: compared on the look's images, equal.
    other = entry(tmp_path, "2", "unchecked", False, BOXES + "cat.jpg,15,cat,0.70000,5.00,5.00,50.00,60.00\n")
    assert settle_waiting([judge, other], tmp_path, lambda judged, run: ["dog.jpg"]) == []
    assert other.verdict == "equal" and other.verdict_from == judge.name and other.verdict_images == 30
    # Compared over every image, the box the look never saw counts against.
    again = entry(tmp_path, "4", "unchecked", False, BOXES + "cat.jpg,15,cat,0.70000,5.00,5.00,50.00,60.00\n")
    settle_waiting([judge, again], tmp_path)
    assert again.verdict is None and again.needs_check


def test_one_check_per_way_a_round_the_one_that_must_first_and_never_the_reference(tmp_path):
    waiting = entry(tmp_path, "1", "unchecked", False)
    undecided = entry(tmp_path, "2", "unchecked", False)
    undecided.needs_check = True  # its own check was undecided on the look's images
    other_way = [entry(tmp_path, batch, "unchecked", False, backend="ov") for batch in ("1", "2")]
    reference = entry(tmp_path, "1", "unchecked", False, backend="torch")
    order = [waiting, undecided, *other_way, reference]
    chosen = checkers(order, judged_ways=set(), unchecked=lambda way: dict(way)["runtime.backend"] == "torch")
    assert chosen == {undecided.name, other_way[0].name}
    # A judged way checks only where its detections differed.
    assert checkers(order, {waiting.candidate.way, other_way[0].candidate.way}, lambda way: True) == set()
    assert checkers(order, {waiting.candidate.way}, lambda way: False) == {undecided.name, other_way[0].name,
                                                                          reference.name}
