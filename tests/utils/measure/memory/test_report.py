"""How memory reads: the console line, report.html's headline figure, TensorBoard's scalars, the compared figures."""
from utils.measure.memory.files import MEMORY
from utils.measure.memory.report import console_lines, figures, peak_pss_headline, scalars
from utils.record.run_record import MeasurementResult, Table


def test_the_console_quotes_pss_and_falls_back_to_rss_where_pss_was_not_read():
    pss = {"status": "measured", "peak_pss_mib": 700.4, "peak_self_rss_mib": 650.0, "baseline_rss_mib": 600.0,
           "peak_rss_mib": 800.0}
    assert console_lines(pss) == [
        "  memory: peak 700 MiB PSS of the process and its loader workers (shared pages split between them); RSS "
        "of the process alone 650 MiB, baseline 600 MiB"]
    rss = dict(pss, peak_pss_mib=None)
    assert console_lines(rss) == ["  memory: baseline 600 MiB, peak 650 MiB RSS of the process (800 MiB with loader "
                                  "workers, which share its pages)"]
    assert console_lines({"status": "disabled"}) == []


def test_the_headline_is_the_peak_pss_and_figures_leave_none_to_the_harness():
    assert peak_pss_headline({"peak_pss_mib": 700.0}) == [("peak PSS (MiB)", 700.0)]
    assert peak_pss_headline({"status": "disabled"}) == []
    assert figures({"peak_pss_mib": 700.0, "peak_rss_mib": 800.0}) == {
        "peak_pss_mib": 700.0, "peak_rss_mib": 800.0, "peak_self_rss_mib": None}


def test_memory_scalars_read_back(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torch.utils.tensorboard import SummaryWriter

    memory = Table([{"t_s": 0.0, "rss_mib": 100.0, "self_rss_mib": 90.0, "pss_mib": None},
                    {"t_s": 0.0504, "rss_mib": 120.0, "self_rss_mib": 95.0, "pss_mib": 80.0}],
                   ("t_s", "rss_mib", "self_rss_mib", "pss_mib"))
    with SummaryWriter(log_dir=str(tmp_path)) as writer:
        scalars(writer, MeasurementResult({"status": "measured"}, {MEMORY: memory}))
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    assert [(s.step, s.value) for s in events.Scalars("memory/rss_mib")] == [(0, 100.0), (50, 120.0)]
    assert [(s.step, s.value) for s in events.Scalars("memory/pss_mib")] == [(50, 80.0)]
