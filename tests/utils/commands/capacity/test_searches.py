"""The searches' state (utils/commands/capacity/searches.py): what a candidate's runs say of each N, how far its
search may go beside the bound, how long a point's window is after unsteady runs, and what capacity.json keeps."""
from utils.commands.capacity.point import PointReading
from utils.commands.capacity.readings import CameraPoint
from utils.commands.capacity.searches import BOUND_LIMIT, UNBOUNDED_LIMIT, CandidateSearch, CountRun
from utils.commands.capacity.search import RunJudgement


def run(count, served=True, sure=True, steady=True, status="complete"):
    reading = PointReading(100, 50.0, None, 0.0, None, steady, "", served, sure)
    return CountRun("a", count, f"a,cameras={count}", 10.0, status, point=CameraPoint({}, reading, None))


def test_only_complete_runs_are_judged_and_decide_their_n():
    search = CandidateSearch("a", runs=[run(1), run(2, served=False), run(2, status="failed"), run(4, sure=False)])
    assert search.judged() == {1: [RunJudgement(True, True)], 2: [RunJudgement(False, True)],
                               4: [RunJudgement(True, False)]}
    assert search.verdicts() == {1: True, 2: False, 4: None}
    assert search.next_count(bound=5.0) == 4  # the undecided point runs again first


def test_the_search_goes_at_most_a_few_times_the_bound_and_past_the_floor():
    assert CandidateSearch("a").limit(None) == UNBOUNDED_LIMIT
    assert BOUND_LIMIT == 3.0 and CandidateSearch("a").limit(2.2) == 7  # ceil(3 x 2.2)
    assert CandidateSearch("a", floor=9).limit(2.2) == 11  # a contender may always try to beat the best answer


def test_an_unsteady_point_runs_again_twice_as_long_up_to_the_cap():
    search = CandidateSearch("a", runs=[run(3, steady=False)])
    assert search.duration_s(3, 10.0) == 20.0 and search.duration_s(2, 10.0) == 10.0
    search.runs += [run(3, steady=False), run(3, steady=False)]
    assert search.duration_s(3, 10.0) == 40.0 and search.duration_s(3, 60.0) == 60.0


def test_capacity_json_keeps_the_runs_but_not_what_is_read_back_from_their_files():
    search = CandidateSearch("a", 1, [run(2), run(1)])
    assert search.lowest().count == 1
    document = search.document()
    assert document["floor"] == 1 and [entry["count"] for entry in document["runs"]] == [2, 1]
    assert "point" not in document["runs"][0] and document["runs"][0]["status"] == "complete"
