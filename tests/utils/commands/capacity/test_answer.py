"""The capacity answer on hand-made searches: the best candidate's largest N with its neighbour not served, the bound
from its run of one camera and how close the search came, a contender that did not beat it, and one camera not
served."""
import pytest

from utils.commands.capacity.answer import Searched, Setting, capacity_answer, label
from utils.commands.capacity.bound import IsolatedCosts
from utils.commands.capacity.point import Bounds, Interval, PointReading
from utils.commands.capacity.readings import CameraPoint
from utils.commands.capacity.searches import CandidateSearch, CountRun

SETTING = Setting(Bounds(200.0, 0.01), "clip.mp4", 15.0, 2)
COSTS = IsolatedCosts(4.0, 23.0, 15.0, 15.0)  # 405 ms per camera-second: 4.94 cameras on 2 cores


def run(candidate, count, served, p99=50.0, drop=0.0, costs=COSTS, busy=0.0, free=2.0):
    reading = PointReading(150, p99, Interval(p99 - 5, p99 + 5), drop, Interval(drop, drop), True, "steady", served,
                           True)
    figures = {"fps_detected": 15.0 * count, "other_processes_cpu_share": busy, "free_cores": free,
               "load_average": 0.5}
    return CountRun(candidate, count, f"{candidate},cameras={count}", 10.0, "complete",
                    point=CameraPoint(figures, reading, costs))


def search(candidate, served_up_to, counts, floor=0, **figures):
    return CandidateSearch(candidate, floor, [run(candidate, n, n <= served_up_to, p99=40.0 + 30 * n, **figures)
                                              for n in counts])


def test_the_best_answer_with_its_neighbour_the_bound_and_the_closeness():
    best = search("a", 3, [1, 2, 4, 3])
    answer = capacity_answer([Searched(best, {"runtime.backend": "openvino", "runtime.precision": "fp32"}, "equal",
                                       True)], SETTING)
    assert answer["best"]["largest"] == 3 and answer["best"]["first_not_served"] == 4 and answer["best"]["settled"]
    assert answer["bound"]["cameras"] == pytest.approx(2000.0 / 405.0)
    assert answer["closeness"] == pytest.approx(3 / (2000.0 / 405.0))
    text = answer["statement"]
    assert text.startswith("3 camera(s) of clip.mp4 at 15 fps served within p99 200 ms")
    assert "N=3: p99 130.0 ms" in text and "N=4: p99 160.0 ms" in text and "not served" in text
    assert "4.94 cameras; the search came to 61% of it" in text
    assert [row["count"] for row in answer["searches"][0]["points"]] == [1, 2, 3, 4]


def test_a_contender_from_the_best_answer_that_does_not_beat_it():
    leader, contender = search("a", 3, [1, 2, 4, 3]), search("b", 3, [4], floor=3)
    answer = capacity_answer([Searched(leader, {}, "reference", True), Searched(contender, {}, "equal", True)], SETTING)
    assert answer["best"]["candidate"] == "a"  # a tie keeps the leader
    second = answer["searches"][1]
    assert (second["floor"], second["largest"], second["first_not_served"]) == (3, 3, 4)


def test_a_floor_raised_by_another_candidate_is_that_candidates_answer():
    # "a" served 1 camera, then searched from "b"'s answer of 2 and failed at 3: it never served 2 itself
    raised = CandidateSearch("a", 2, [run("a", 1, True), run("a", 3, False)])
    answer = capacity_answer([Searched(raised, {}, "reference", True), Searched(search("b", 2, [2, 3], floor=1), {},
                                                                                "equal", True)], SETTING)
    assert answer["best"]["candidate"] == "b" and answer["best"]["largest"] == 2
    assert answer["statement"].startswith("2 camera(s) of clip.mp4") and "N=2: p99 100.0 ms" in answer["statement"]


def test_a_candidate_whose_verdict_bars_it_is_never_the_answer():
    barred, allowed = search("fast", 6, [1, 2, 4, 8, 6, 7]), search("slow", 2, [1, 2, 4, 3])
    answer = capacity_answer([Searched(barred, {}, "different", False), Searched(allowed, {}, "equal", True)],
                             SETTING)
    assert answer["best"]["candidate"] == "slow" and answer["best"]["largest"] == 2


def test_one_camera_not_served_says_so_with_its_figures():
    answer = capacity_answer([Searched(search("a", 0, [1]), {}, None, True)], SETTING)
    assert answer["best"]["largest"] == 0 and answer["closeness"] is None
    assert answer["statement"].startswith("No number of cameras is served within p99 200 ms")
    assert "N=1: p99 70.0 ms" in answer["statement"]


def test_a_busy_machine_gives_the_bound_on_the_cores_it_left_too():
    answer = capacity_answer([Searched(search("a", 1, [1, 2], busy=0.6, free=0.8), {}, None, True)], SETTING)
    assert answer["bound"]["cameras_on_free_cores"] == pytest.approx(800.0 / 405.0)
    assert "Other processes used 60% of the cores" in answer["statement"] and "1.98 cameras" in answer["statement"]


def test_an_unsettled_search_says_it_was_cut_short():
    answer = capacity_answer([Searched(search("a", 3, [1, 2, 4]), {}, None, True)], SETTING)
    assert not answer["best"]["settled"] and "Not settled: between 2 and 4" in answer["statement"]


def test_labels_say_a_candidate_in_a_few_words():
    assert label({"runtime.backend": "openvino", "runtime.precision": "bf16", "dataset.batch_size": "1",
                  "runtime.threads": "2", "runtime.pinning": "false"}) == "openvino bf16 batch 1 threads 2"
