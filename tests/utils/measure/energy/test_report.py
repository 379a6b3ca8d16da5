"""How energy reads: the console line, report.html's headline figure, TensorBoard's scalars, the compared figures."""
from utils.measure.energy.files import ENERGY
from utils.measure.energy.report import console_lines, energy_headline, figures, scalars
from utils.record.run_record import MeasurementResult, Table

MEASURED = {"status": "measured", "domains": ["package_0", "dram_0"],
            "joules_per_image": {"package_0": 2.5, "dram_0": 0.25}, "average_watts": {"package_0": 20.0, "dram_0": 2.0}}


def test_the_console_gives_joules_per_image_and_watts_per_domain_or_why_not():
    assert console_lines(MEASURED) == ["  energy (RAPL): package_0 2.50 J/image 20.0 W, dram_0 0.25 J/image 2.0 W"]
    assert console_lines({"status": "unavailable", "reason": "no powercap"}) == [
        "  energy: unavailable (no powercap)"]


def test_the_headline_is_the_first_domain_net_of_idle_where_measured():
    assert energy_headline(MEASURED) == [("energy, package_0 (J/image)", 2.5)]
    net = dict(MEASURED, net_joules_per_image={"package_0": 1.5, "dram_0": 0.1})
    assert energy_headline(net) == [("energy, net package_0 (J/image)", 1.5)]
    assert energy_headline({"status": "unavailable", "reason": "x"}) == []


def test_figures_name_each_domain_and_only_when_measured():
    assert figures(MEASURED) == {"joules_per_image_package_0": 2.5, "joules_per_image_dram_0": 0.25,
                                 "average_watts_package_0": 20.0, "average_watts_dram_0": 2.0}
    assert figures(dict(MEASURED, status="unavailable")) == {}


def test_energy_scalars_read_back(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torch.utils.tensorboard import SummaryWriter

    energy = Table([{"tag": "forward", "count": 2, "duration_s": 1.0, "package-0_j": 12.5, "dram-0_j": None}],
                   ("tag", "count", "duration_s", "package-0_j", "dram-0_j"))
    with SummaryWriter(log_dir=str(tmp_path)) as writer:
        scalars(writer, MeasurementResult({"status": "measured"}, {ENERGY: energy}))
        scalars(writer, MeasurementResult({"status": "unavailable"}))
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    assert [(s.step, s.value) for s in events.Scalars("energy_j/forward/package-0")] == [(0, 12.5)]
    assert "energy_j/forward/dram-0" not in events.Tags()["scalars"]  # not measured: absent, not 0
