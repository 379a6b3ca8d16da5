"""benchmarks/common/author_agreement.py: detections.csv read back by image, COCO ids mapped, and the agreement of
two sets of rows, on hand cases."""
from benchmarks.common.author_agreement import agreement, detections_by_image, in_detbench_ids


def test_detections_csv_is_read_back_by_image(tmp_path):
    table = tmp_path / "detections.csv"
    table.write_text("image,class_id,class_name,score,x1,y1,x2,y2\n"
                     "a.jpg,0,person,0.9,1,2,3,4\nb.jpg,2,car,0.5,0,0,10,10\na.jpg,1,bicycle,0.4,5,5,6,6\n")
    assert detections_by_image(table) == {"a.jpg": [[0, 0.9, 1.0, 2.0, 3.0, 4.0], [1, 0.4, 5.0, 5.0, 6.0, 6.0]],
                                          "b.jpg": [[2, 0.5, 0.0, 0.0, 10.0, 10.0]]}


def test_coco_ids_map_to_the_80_classes_and_an_unused_id_is_counted_out():
    rows = {"x/a.jpg": [[1, 0.9, 0, 0, 1, 1], [13, 0.8, 0, 0, 1, 1], [12, 0.7, 0, 0, 1, 1]]}
    mapped, left_out = in_detbench_ids(rows, coco_ids=True)
    assert [row[0] for row in mapped["x/a.jpg"]] == [0, 11] and left_out == 1  # COCO's 12 names no class
    assert in_detbench_ids(rows, coco_ids=False) == (rows, 0)


def test_agreement_matches_by_file_name_same_class_and_iou():
    theirs = {"sub/a.jpg": [[0, 0.9, 0, 0, 10, 10], [1, 0.8, 20, 20, 30, 30]]}
    ours = {"a.jpg": [[0, 0.9, 0, 0, 10, 10], [2, 0.8, 20, 20, 30, 30], [0, 0.5, 50, 50, 60, 60]]}
    counts = agreement(theirs, ours)
    assert (counts.reference, counts.candidate, counts.loose) == (2, 3, 1)
    assert (counts.loose_recall, counts.loose_precision) == (0.5, 1 / 3)
