"""utils.commands.compare.files: compare.csv (every row of a comparison with its section) and compare.html (the same,
readable, the largest layer changes only).

Tested on hand-made comparison rows: the CSV's columns and ignored extras, the page's headline and verdict
words, the sections that appear only with their rows, and the cap on layers shown."""
import re

import pandas as pd

from utils.storage import layout
from utils.commands.compare.comparison import Comparison
from utils.commands.compare.files import HTML_LAYERS, write_compare_csv, write_compare_html

PIPELINE = {"section": "step", "name": "pipeline", "a": 10.0, "b": 12.0, "difference": 2.0, "ratio": 1.2,
            "ci_low": 1.1, "ci_high": 1.3, "significant": True}
FORWARD = dict(PIPELINE, name="forward", ratio=1.01, significant=False)
LOAD = dict(PIPELINE, name="load", ratio=None, significant=None)


def page(tmp_path, steps=(PIPELINE, FORWARD, LOAD), layers=(), environment=(), accuracy=(), scenario=()) -> str:
    comparison = Comparison(list(environment), 5, list(steps), [], list(layers), accuracy, scenario)
    path = write_compare_html(tmp_path, ("a", "b"), (tmp_path / "a", tmp_path / "b"), comparison)
    assert path == tmp_path / layout.COMPARE_HTML
    return path.read_text()


def test_csv_keeps_the_given_columns_and_ignores_extra_keys(tmp_path):
    path = write_compare_csv(tmp_path, [PIPELINE, {"section": "environment", "name": "env.torch", "a": "2.1"}],
                             ["section", "name", "a", "b", "ratio"])
    table = pd.read_csv(path)
    assert list(table.columns) == ["section", "name", "a", "b", "ratio"]
    assert table["name"].tolist() == ["pipeline", "env.torch"]
    assert table["ratio"].tolist()[0] == 1.2 and pd.isna(table["b"].tolist()[1])


def test_headline_gives_pipeline_and_forward_ratios_with_their_verdicts(tmp_path):
    html = page(tmp_path)
    headline = re.search(r'<div class="headline">(.*?)</div></div></div>', html).group(0)
    assert "pipeline B/A" in headline and "forward verdict" in headline and "load" not in headline
    assert ">significant<" in headline and ">within the noise<" in headline


def test_a_step_without_an_interval_says_so(tmp_path):
    assert ">no interval<" in page(tmp_path)


def test_sections_without_rows_are_left_out(tmp_path):
    html = page(tmp_path)
    assert "<h2>Accuracy</h2>" not in html and "LoadGen scenario figures" not in html
    assert "0 field(s) differ, 5 are the same." in html
    html = page(tmp_path, environment=[{"field": "env.torch", "a": "2.1", "b": "2.2"}],
                accuracy=[{"name": "map_50_95", "a": 0.5, "b": 0.4, "difference": -0.1, "note": ""}],
                scenario=[{"name": "samples_per_s", "a": 40.0, "b": 30.0, "difference": -10.0, "ratio": 0.75,
                           "note": "scenario offline vs offline"}])
    assert "<h2>Accuracy</h2>" in html and "<h2>LoadGen scenario figures</h2>" in html
    assert "scenario offline vs offline: LoadGen&#x27;s figures" in html
    assert ">env.torch<" in html


def test_only_the_largest_layer_changes_are_shown(tmp_path):
    layers = [{"name": f"model.{i}", "a": 1.0, "b": 2.0, "difference": 1.0, "ratio": 2.0}
              for i in range(HTML_LAYERS + 5)]
    html = page(tmp_path, layers=layers)
    assert f">model.{HTML_LAYERS - 1}<" in html and f">model.{HTML_LAYERS}<" not in html


def test_a_one_sided_layer_row_keeps_its_note(tmp_path):
    layers = [{"name": "model.1", "a": 1.0, "b": None, "note": "only in A"},
              {"name": "model.2", "a": 1.0, "b": 2.0, "note": "hidden when both sides have it"}]
    html = page(tmp_path, layers=layers)
    assert ">only in A<" in html and "hidden when both sides have it" not in html
