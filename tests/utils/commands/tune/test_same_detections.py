"""Two runs of one way give the same detections only at the strict bar of the equal-detections check."""
from utils.commands.tune.same_detections import same_detections

HEADER = "image,class_id,class_name,score,x1,y1,x2,y2\n"
ROWS = ["dog.jpg,16,dog,0.90000,10.00,10.00,110.00,110.00", "dog.jpg,2,car,0.80000,200.00,50.00,300.00,120.00",
        "cat.jpg,15,cat,0.70000,5.00,5.00,50.00,60.00"]


def run_dir(tmp_path, name, rows):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "detections.csv").write_text(HEADER + "".join(row + "\n" for row in rows))
    return folder


def test_the_same_detections_in_another_order_are_equal(tmp_path):
    equal, how = same_detections(run_dir(tmp_path, "a", ROWS), run_dir(tmp_path, "b", ROWS[::-1]))
    assert equal and "recall 1.000" in how


def test_a_box_moved_past_the_strict_overlap_is_not_equal(tmp_path):
    moved = ["dog.jpg,16,dog,0.90000,30.00,10.00,130.00,110.00", *ROWS[1:]]
    equal, how = same_detections(run_dir(tmp_path, "a", ROWS), run_dir(tmp_path, "b", moved))
    assert not equal and "recall 0.667" in how


def test_a_missing_image_counts_against(tmp_path):
    equal, _ = same_detections(run_dir(tmp_path, "a", ROWS), run_dir(tmp_path, "b", ROWS[:2]))
    assert not equal


def test_a_score_within_the_tolerance_is_equal(tmp_path):
    nudged = ["dog.jpg,16,dog,0.90500,10.00,10.00,110.00,110.00", *ROWS[1:]]
    assert same_detections(run_dir(tmp_path, "a", ROWS), run_dir(tmp_path, "b", nudged))[0]


def test_after_a_first_look_only_the_images_both_timed_are_compared(tmp_path):
    # The first look timed dog.jpg only; the full run also cat.jpg, which the look never saw.
    look, full = run_dir(tmp_path, "look", ROWS[:2]), run_dir(tmp_path, "full", ROWS)
    equal, how = same_detections(look, full, ["dog.jpg"])
    assert equal and "over 2 detections of 1 image(s)" in how
    # An image both timed that one of them found nothing on still counts against.
    assert not same_detections(look, full, ["dog.jpg", "cat.jpg"])[0]
