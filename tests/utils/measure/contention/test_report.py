"""How contention reads: the console line and report.html's environment rows, only where it was measured."""
from utils.measure.contention.report import console_lines, environment_rows, figures

MEASURED = {"status": "measured", "other_processes_cpu_share": 0.254, "own_cpu_share": 0.7,
            "load_average_start": [1.0, 0.5, 0.2], "load_average_end": [1.5, 0.6, 0.3]}


def test_the_console_and_the_page_give_the_neighbours_share_or_nothing():
    assert console_lines(MEASURED) == [
        "  machine: other processes used 25% of this run's cores during the timed passes (this run 70%)"]
    assert environment_rows(MEASURED) == [("other processes' share of the cores", "25.4%"),
                                          ("load average start -> end", "[1.0, 0.5, 0.2] -> [1.5, 0.6, 0.3]")]
    unavailable = {"status": "unavailable", "reason": "no /proc"}
    assert console_lines(unavailable) == [] and environment_rows(unavailable) == []
    assert figures(unavailable) == {"other_processes_cpu_share": None}
