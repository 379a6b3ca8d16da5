"""How contention reads: its console line, its rows of report.html's Environment table, and the figure runs are
compared by."""
from __future__ import annotations

from typing import Any

from utils.measure.contention.section import ContentionSection
from utils.measure.contract import Cell
from utils.record.sections import measured


def console_lines(contention: ContentionSection) -> list[str]:
    if not measured(contention):
        return []
    return [f"  machine: other processes used {contention['other_processes_cpu_share']:.0%} of this run's cores "
            f"during the timed passes (this run {contention['own_cpu_share']:.0%})"]


def environment_rows(contention: ContentionSection) -> list[Cell]:
    if not measured(contention):
        return []
    return [("other processes' share of the cores", f"{contention['other_processes_cpu_share']:.1%}"),
            ("load average start -> end", f"{contention['load_average_start']} -> {contention['load_average_end']}")]


def figures(contention: ContentionSection) -> dict[str, Any]:
    return {"other_processes_cpu_share": contention.get("other_processes_cpu_share")}
