"""How energy reads: its console line, its section of report.html with its headline figure, its TensorBoard
scalars and the figures runs are compared by."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from utils.measure.contract import Cell, ScalarWriter
from utils.measure.energy.files import ENERGY, ENERGY_PLOT
from utils.measure.energy.section import EnergySection
from utils.record.run_record import MeasurementResult
from utils.record.sections import measured
from utils.storage.html_page import HtmlPage, number_text


def _fmt(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def console_lines(energy: EnergySection) -> list[str]:
    if measured(energy):
        per_image, watts = energy.get("joules_per_image") or {}, energy.get("average_watts") or {}
        domains = ", ".join(f"{domain} {_fmt(per_image.get(domain), '.2f')} J/image {_fmt(watts.get(domain), '.1f')} W"
                            for domain in energy["domains"])
        return [f"  energy (RAPL): {domains}"]
    return [f"  energy: {energy.get('status')} ({energy.get('reason')})"]


def energy_headline(energy: EnergySection) -> list[Cell]:
    """The first RAPL domain's joules per image, net of idle power when it was measured."""
    if not measured(energy) or not energy.get("domains"):
        return []
    per_image = energy.get("net_joules_per_image") or energy.get("joules_per_image") or {}
    domain = energy["domains"][0]
    if per_image.get(domain) is None:
        return []
    net = "net " if energy.get("net_joules_per_image") else ""
    return [(f"energy, {net}{domain} (J/image)", per_image[domain])]


def render(page: HtmlPage, energy: EnergySection, plots: Mapping[str, Path]) -> None:
    if not measured(energy):
        page.paragraph(f"Not measured: {energy.get('reason') or energy.get('status')}.")
        return
    per_image = energy.get("joules_per_image") or {}
    net = energy.get("net_joules_per_image") or {}
    rows = [(domain, energy["joules"].get(domain), per_image.get(domain), net.get(domain),
             (energy.get("average_watts") or {}).get(domain)) for domain in energy["domains"]]
    page.paragraph(f"{energy.get('source', 'RAPL')} over {number_text(energy['duration_s'], ' s')}.")
    page.table(("domain", "joules", "J/image", "net J/image", "average W"), rows, text_columns=("domain",))
    if energy.get("steps_below_resolution"):
        page.paragraph("Below RAPL's resolution (about 10 ms per occurrence): "
                       + ", ".join(energy["steps_below_resolution"]) + ".")
    if ENERGY_PLOT in plots:
        page.image(plots[ENERGY_PLOT], "energy per step and RAPL domain")


def scalars(writer: ScalarWriter, result: MeasurementResult) -> None:
    """Joules per step and RAPL domain, as energy.csv lists them (only when energy was measured)."""
    table = result.tables.get(ENERGY)
    if table is None:
        return
    for row in table.rows:
        for column in table.columns:
            value = row.get(column)
            if column.endswith("_j") and value is not None:
                writer.add_scalar(f"energy_j/{row['tag']}/{column.removesuffix('_j')}", value, 0)


def figures(energy: EnergySection) -> dict[str, Any]:
    if not measured(energy):
        return {}
    return {**{f"joules_per_image_{domain}": joules for domain, joules in (energy.get("joules_per_image") or {}).items()},
            **{f"average_watts_{domain}": watts for domain, watts in (energy.get("average_watts") or {}).items()}}
