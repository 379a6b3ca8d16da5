import pandas as pd
import pytest

from tests.support.helpers import assert_png
from utils.measure.memory.plots import plot_memory_timeline, spans_from_labels


def memory() -> pd.DataFrame:
    return pd.DataFrame({"t_s": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5],
                         "rss_mib": [100.0, 120.0, 300.0, 310.0, 150.0, 140.0],
                         "step": ["", "load", "forward", "forward", "nms", ""]})


@pytest.mark.parametrize("plot, table, kwargs", [
    (plot_memory_timeline, memory, {}),
    (plot_memory_timeline, memory,
     {"steps_df": pd.DataFrame({"step": ["run", "forward"], "start_s": [0.05, 0.15], "end_s": [0.45, 0.35]})}),
])
def test_each_plot_writes_a_png(tmp_path, plot, table, kwargs):
    target = tmp_path / "nested" / "plot.png"
    assert plot(table(), target, note="random weights (seed 0)", **kwargs) == target
    assert_png(target)


def test_spans_from_labels():
    spans = spans_from_labels(memory())
    assert spans.to_dict("records") == [{"step": "load", "start_s": 0.1, "end_s": 0.1},
                                        {"step": "forward", "start_s": 0.2, "end_s": 0.3},
                                        {"step": "nms", "start_s": 0.4, "end_s": 0.4}]
