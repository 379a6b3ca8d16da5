import pandas as pd
import pytest

from tests.support.helpers import assert_png
from utils.measure.energy.plots import plot_energy


def energy() -> pd.DataFrame:
    return pd.DataFrame({"tag": ["forward", "nms", "run"], "count": [3, 3, 1], "duration_s": [3.0, 0.1, 3.5],
                         "package_0_j": [90.0, 2.0, 100.0], "dram_0_j": [9.0, 0.2, 10.0]})


@pytest.mark.parametrize("plot, table, kwargs", [
    (plot_energy, energy, {}),
])
def test_each_plot_writes_a_png(tmp_path, plot, table, kwargs):
    target = tmp_path / "nested" / "plot.png"
    assert plot(table(), target, note="random weights (seed 0)", **kwargs) == target
    assert_png(target)
