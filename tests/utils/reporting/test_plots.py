from pathlib import Path

import pandas as pd
import pytest

from utils.measure.layers.path_labels import shorten
from utils.reporting.plots import (plot_energy, plot_layer_types, plot_memory_timeline, plot_step_latency, plot_top_layers,
                                 spans_from_labels, timed_step_rows, write_all_plots)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path) -> None:
    assert path.is_file() and path.stat().st_size > 1000
    assert path.read_bytes()[:8] == PNG_MAGIC


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


def memory() -> pd.DataFrame:
    return pd.DataFrame({"t_s": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5],
                         "rss_mib": [100.0, 120.0, 300.0, 310.0, 150.0, 140.0],
                         "step": ["", "load", "forward", "forward", "nms", ""]})


def energy() -> pd.DataFrame:
    return pd.DataFrame({"tag": ["forward", "nms", "run"], "count": [3, 3, 1], "duration_s": [3.0, 0.1, 3.5],
                         "package_0_j": [90.0, 2.0, 100.0], "dram_0_j": [9.0, 0.2, 10.0]})


@pytest.mark.parametrize("plot, table, kwargs", [
    (plot_layer_types, layer_types, {}),
    (plot_layer_types, lambda: layer_types().drop(columns=["mean_self_ms_per_forward", "share_of_forward"]), {}),
    (plot_top_layers, layer_timer, {"top": 20}),
    (plot_step_latency, steps_timer, {}),
    (plot_memory_timeline, memory, {}),
    (plot_memory_timeline, memory,
     {"steps_df": pd.DataFrame({"step": ["run", "forward"], "start_s": [0.05, 0.15], "end_s": [0.45, 0.35]})}),
    (plot_energy, energy, {}),
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


def test_spans_from_labels():
    spans = spans_from_labels(memory())
    assert spans.to_dict("records") == [{"step": "load", "start_s": 0.1, "end_s": 0.1},
                                        {"step": "forward", "start_s": 0.2, "end_s": 0.3},
                                        {"step": "nms", "start_s": 0.4, "end_s": 0.4}]


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


def test_the_cameras_plot_draws_measured_frames_and_nothing_without_them(tmp_path):
    from utils.reporting.plots import plot_cameras
    rows = [{"stream": f"cam{camera}", "frame": index, "measured": index > 0, "arrival_s": 1.0 + index / 15,
             "outcome": "dropped" if index % 3 == 0 else "detected", "detect_end_s": 1.2 + index / 15,
             "dropped_s": 1.1 + index / 15, "latency_ms": 200.0} for camera in range(2) for index in range(30)]
    assert plot_cameras(pd.DataFrame(rows), tmp_path / "cameras.png").stat().st_size > 1000
    warm_up_only = pd.DataFrame(rows).assign(measured=False)
    assert plot_cameras(warm_up_only, tmp_path / "none.png") is None and not (tmp_path / "none.png").exists()
