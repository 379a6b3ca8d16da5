import pandas as pd
import pytest

from tests.support.helpers import assert_png
from tests.utils.measure.energy.test_plots import energy
from tests.utils.measure.memory.test_plots import memory
from utils.measure.layers.path_labels import shorten
from utils.reporting.plots import plot_layer_types, plot_step_latency, plot_top_layers, timed_step_rows, write_all_plots


def layer_types() -> pd.DataFrame:
    return pd.DataFrame({"type": ["Conv2d", "SiLU", "unattributed"], "calls": [10, 10, 1],
                         "self_ms": [300.0, 60.0, 40.0], "mean_self_ms_per_forward": [30.0, 6.0, 4.0],
                         "share_of_forward": [0.75, 0.15, 0.10]})


def layer_timer() -> pd.DataFrame:
    paths = [f"model.{i}.conv" for i in range(25)] + ["Pipeline/Model/model.51.cv3.conv.a.very.long.nested.path"]
    return pd.DataFrame({"path": paths, "type": ["Conv2d"] * 25 + ["SiLU"],
                         "self_ms": [float(i) for i in range(26)], "mean_self_ms": [i / 10 for i in range(26)]})


def steps_timer() -> pd.DataFrame:
    rows = [{"step": step, "pass_kind": "warmup" if batch == 0 else "timed", "pass_index": 0, "batch": batch,
             "images": 2, "warmup": batch == 0, "ms": ms * (1 + batch)}
            for batch in range(4) for step, ms in (("load", 2.0), ("forward", 300.0), ("nms", 0.5))]
    # A batch whose every file was skipped: only the loader ran.
    rows.append({"step": "load", "pass_kind": "timed", "pass_index": 0, "batch": 4, "images": 0, "warmup": False,
                 "ms": 0.3})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("plot, table, kwargs", [
    (plot_layer_types, layer_types, {}),
    (plot_layer_types, lambda: layer_types().drop(columns=["mean_self_ms_per_forward", "share_of_forward"]), {}),
    (plot_top_layers, layer_timer, {"top": 20}),
    (plot_step_latency, steps_timer, {}),
])
def test_each_plot_writes_a_png(tmp_path, plot, table, kwargs):
    target = tmp_path / "nested" / "plot.png"
    assert plot(table(), target, note="random weights (seed 0)", **kwargs) == target
    assert_png(target)


def test_step_latency_with_several_passes(tmp_path):
    table = pd.concat([steps_timer(), steps_timer().assign(pass_kind="layers"),
                       steps_timer().assign(pass_index=1)])
    assert_png(plot_step_latency(table, tmp_path / "latency.png"))


def test_timed_step_rows_drop_warmup_instrumented_passes_and_empty_batches():
    table = pd.concat([steps_timer(), steps_timer().assign(pass_kind="profiler")])
    timed = timed_step_rows(table)
    assert len(timed) == 9 and set(timed["step"]) == {"load", "forward", "nms"}
    assert (timed["batch"] > 0).all() and (timed["batch"] < 4).all()


def test_step_latency_refuses_a_table_of_warmup_only(tmp_path):
    with pytest.raises(ValueError, match="warm-up"):
        plot_step_latency(steps_timer().assign(pass_kind="warmup"), tmp_path / "latency.png")


def test_shorten_keeps_the_distinguishing_end():
    assert shorten("model.1.conv") == "model.1.conv"
    long_path = "Pipeline/Model/" + "x" * 60 + ".model.77.conv"
    short = shorten(long_path, width=30)
    assert len(short) == 30 and short.startswith("…") and short.endswith(".model.77.conv")


def test_write_all_plots_writes_what_the_run_dir_allows(tmp_path):
    layer_types().to_csv(tmp_path / "layer_types.csv", index=False)
    layer_timer().to_csv(tmp_path / "layer_timer.csv", index=False)
    steps_timer().to_csv(tmp_path / "steps_timer.csv", index=False)
    memory().to_csv(tmp_path / "memory.csv", index=False)
    energy().to_csv(tmp_path / "energy.csv", index=False)
    written = write_all_plots(tmp_path, note="random weights (seed 0)")
    assert sorted(p.name for p in written) == ["energy.png", "layer_types.png", "memory_timeline.png",
                                               "step_latency.png", "top_layers.png"]
    for path in written:
        assert path.parent == tmp_path / "plots"
        assert_png(path)


def test_write_all_plots_skips_absent_and_empty_tables(tmp_path):
    (tmp_path / "layer_types.csv").write_text("")  # empty file
    (tmp_path / "energy.csv").write_text("tag,count,duration_s\n")  # header only: energy unavailable
    memory().to_csv(tmp_path / "memory.csv", index=False)
    assert [p.name for p in write_all_plots(tmp_path)] == ["memory_timeline.png"]
    energy().drop(columns=["package_0_j", "dram_0_j"]).to_csv(tmp_path / "energy.csv", index=False)
    assert [p.name for p in write_all_plots(tmp_path)] == ["memory_timeline.png"]  # rows but no domain
    assert write_all_plots(tmp_path / "missing_run") == []
