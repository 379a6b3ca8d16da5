"""The files of a sweep directory (utils/commands/sweep/files.py): sweep.csv with a column per swept key, sweep.json
with the answer, the plot of the completed points, and report.html stating the answer, the points that did not
complete and how the sweep ran; each written whole."""
import csv
import json

from utils.commands.sweep.answer import PointFigures, choose
from utils.commands.sweep.files import FIGURE_COLUMNS, plot_sweep, sweep_columns, write_sweep_report, write_sweep_tables


def rows_and_document():
    points = [PointFigures("b1", {"dataset.batch_size": 1}, 20.0, 50.0, "reference", (19, 20, 21, 20)),
              PointFigures("b2", {"dataset.batch_size": 2}, 10.0, 100.0, "equal", (9, 10, 11, 10))]
    rows = [{"point": p.name, "dataset.batch_size": p.values["dataset.batch_size"], "status": "complete",
             "p50_ms_per_image": p.p50_ms_per_image, "images_per_s": p.images_per_s, "agreement": p.agreement,
             "random_weights": True} for p in points]
    rows.append({"point": "b4", "dataset.batch_size": 4, "status": "failed", "reason": "cannot run (exit 2)"})
    document = {"sweep_id": "s1", "swept": {"dataset.batch_size": [1, 2, 4]}, "status": "interrupted",
                "stop_reason": "SIGINT", "config_file": "configs/samples_tiny.yaml", "overrides": [],
                "answer": choose(points), "launcher": {"name": "local"}}
    return rows, document


def test_sweep_csv_has_a_column_per_key_then_the_figures_and_where_it_ran(tmp_path):
    columns = sweep_columns(["dataset.batch_size"], ["node"])
    assert columns[:5] == ["point", "dataset.batch_size", "status", "reason", "rounds"]
    assert columns[5:5 + len(FIGURE_COLUMNS)] == list(FIGURE_COLUMNS) and columns[-2:] == ["node", "run_dir"]
    rows, document = rows_and_document()
    write_sweep_tables(tmp_path, document, rows, columns)
    with open(tmp_path / "sweep.csv", newline="") as handle:
        written = list(csv.DictReader(handle))
    assert [row["point"] for row in written] == ["b1", "b2", "b4"] and written[2]["reason"] == "cannot run (exit 2)"
    assert json.loads((tmp_path / "sweep.json").read_text())["answer"]["fastest_equal"]["point"] == "b2"


def test_the_report_states_the_answer_the_stop_and_the_points_that_did_not_complete(tmp_path):
    rows, document = rows_and_document()
    page = write_sweep_report(tmp_path, document, rows, sweep_columns(["dataset.batch_size"])).read_text()
    assert (tmp_path / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    assert "The sweep was interrupted (SIGINT)" in page and "RANDOM WEIGHTS" in page
    assert document["answer"]["statement"].split(".")[0] in page
    assert "b4: failed: cannot run (exit 2)" in page and "with its run directory beside this page" in page
    assert sorted(path.name for path in tmp_path.iterdir()) == ["report.html", "sweep.png"]


def test_no_completed_point_draws_no_plot(tmp_path):
    assert plot_sweep([{"point": "b4", "status": "failed"}], ["dataset.batch_size"], tmp_path / "sweep.png") is None
    assert list(tmp_path.iterdir()) == []
