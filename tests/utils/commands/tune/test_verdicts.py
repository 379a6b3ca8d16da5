"""Which verdict each candidate may claim (utils/commands/tune/verdicts.py): judged once per way, reused only where the
detections were checked equal."""
from utils.commands.sweep.answer import PointFigures
from utils.commands.tune.space import Candidate
from utils.commands.tune.state import Entry, Run, run_dir_name
from utils.commands.tune.verdicts import drop_failed, settle_waiting, take_verdict

HEADER = "image,class_id,class_name,score,x1,y1,x2,y2\n"
BOXES = "dog.jpg,16,dog,0.90000,10.00,10.00,110.00,110.00\n"
MOVED = "dog.jpg,16,dog,0.90000,60.00,10.00,160.00,110.00\n"


def entry(tmp_path, batch, agreement, checks, detections=BOXES, status="complete"):
    candidate = Candidate((("runtime.backend", "rt"), ("runtime.precision", "int8"), ("dataset.batch_size", batch)))
    run = Run(candidate.name, 1, checks, f"{candidate.name},round=1", status)
    (tmp_path / run.run_dir).mkdir()
    (tmp_path / run.run_dir / "detections.csv").write_text(HEADER + detections)
    run.figures = PointFigures(candidate.name, candidate.values, 10.0, None, agreement, (10.0,))
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
