import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.helpers import section_shape_errors
from tests.support.paths import ROOT
from utils.measure.energy.section import EnergySection
from utils.measure.energy.recorder import (EnergyRecorder, average_watts, counter_delta_uj, probe_rapl, rapl_device,
                          uj_to_joules)

MAX_RANGE_UJ = 262_143_328_850
ZONES = {  # zone directory -> name file content, as the kernel lays them out
    "intel-rapl:0": "package-0",
    "intel-rapl:0/intel-rapl:0:0": "core",
    "intel-rapl:0/intel-rapl:0:1": "dram",
}
LABEL_DIRS = {"package_0": "intel-rapl:0", "core_0": "intel-rapl:0/intel-rapl:0:0",
              "dram_0": "intel-rapl:0/intel-rapl:0:1"}


def make_powercap(tmp_path: Path) -> Path:
    root = tmp_path / "powercap"
    for zone, name in ZONES.items():
        zone_dir = root / "intel-rapl" / zone
        zone_dir.mkdir(parents=True)
        (zone_dir / "name").write_text(name + "\n")
        (zone_dir / "energy_uj").write_text("0\n")
        (zone_dir / "max_energy_range_uj").write_text(f"{MAX_RANGE_UJ}\n")
    return root


def set_counters(root: Path, **microjoules: int) -> None:
    for label, value in microjoules.items():
        (root / "intel-rapl" / LABEL_DIRS[label] / "energy_uj").write_text(f"{value}\n")


@pytest.mark.parametrize("before, after, max_range, expected", [
    (100, 350, 1000, 250),
    (350, 350, 1000, 0),
    (900, 100, 1000, 200),  # wrapped: 100 to the top, then 100 from zero
    (MAX_RANGE_UJ - 1000, 500, MAX_RANGE_UJ, 1500),
])
def test_counter_delta_hand_cases(before, after, max_range, expected):
    assert counter_delta_uj(before, after, max_range) == expected


def test_counter_delta_matches_a_simulated_wrapping_counter():
    rng = random.Random(7)
    for _ in range(500):
        max_range = rng.randint(10, 10_000)
        counter, spent = rng.randrange(max_range), 0
        before = counter
        for _ in range(rng.randint(0, 20)):  # tick the counter one unit at a time, as hardware would
            if spent + 1 >= max_range:
                break
            counter = 0 if counter + 1 == max_range else counter + 1
            spent += 1
        assert counter_delta_uj(before, counter, max_range) == spent


def test_unit_conversions():
    assert uj_to_joules(2_500_000) == 2.5
    assert average_watts(10.0, 4.0) == 2.5
    assert average_watts(10.0, 0.0) is None


def test_probe_without_powercap_directory(tmp_path):
    status = probe_rapl(tmp_path / "absent")
    assert not status.available and status.domains == []
    assert "no powercap directory" in status.reason and "virtual machines" in status.reason


@pytest.mark.parametrize("with_api_dir", [False, True])
def test_probe_with_powercap_but_no_rapl_zones(tmp_path, with_api_dir):
    if with_api_dir:
        (tmp_path / "intel-rapl").mkdir()
    status = probe_rapl(tmp_path)
    assert not status.available
    assert "no intel-rapl zones" in status.reason and "AMD" in status.reason


def test_probe_reports_unreadable_counters_and_how_to_fix(tmp_path):
    root = make_powercap(tmp_path)

    def read_as_unprivileged_user(path: Path) -> str:
        if path.name == "energy_uj":
            raise PermissionError(13, "Permission denied", str(path))
        return path.read_text()

    status = probe_rapl(root, read_text=read_as_unprivileged_user)
    assert not status.available
    assert "energy_uj" in status.reason and "5.10" in status.reason
    assert "root" in status.reason and "chmod o+r" in status.reason and "udev" in status.reason


def test_probe_finds_the_domains(tmp_path):
    root = make_powercap(tmp_path)
    (root / "intel-rapl" / "intel-rapl:0" / "intel-rapl:0:2").mkdir()  # a zone pyJoules cannot read
    (root / "intel-rapl" / "intel-rapl:0" / "intel-rapl:0:2" / "name").write_text("psys\n")
    status = probe_rapl(root)
    assert status.available and status.reason is None
    assert [zone.label for zone in status.domains] == ["package_0", "core_0", "dram_0"]
    assert [zone.name for zone in status.domains] == ["package-0", "core", "dram"]
    assert all(zone.max_energy_range_uj == MAX_RANGE_UJ for zone in status.domains)


def test_recorder_sums_energy_per_step_and_run(tmp_path):
    root = make_powercap(tmp_path)
    recorder = EnergyRecorder(root)
    assert recorder.available and recorder.domains == ["package_0", "core_0", "dram_0"]
    assert rapl_device.RAPL_API_DIR == "/sys/class/powercap/intel-rapl"  # pyJoules' global left as found

    set_counters(root, package_0=1_000_000, core_0=500_000, dram_0=100_000)
    recorder.step_started("run")
    for batch in range(2):
        recorder.step_started("forward")
        set_counters(root, package_0=1_000_000 + (batch + 1) * 3_000_000, core_0=500_000 + (batch + 1) * 2_000_000,
                     dram_0=100_000 + (batch + 1) * 250_000)
        recorder.step_ended("forward")
    recorder.step_started("postprocess")
    recorder.step_started("nms")
    set_counters(root, package_0=8_000_000, core_0=5_000_000, dram_0=700_000)
    recorder.step_ended("nms")
    recorder.step_ended("postprocess")
    recorder.step_ended("run")

    rows = {row["tag"]: row for row in recorder.rows()}
    assert list(rows) == ["forward", "nms", "postprocess", "run"]
    assert rows["forward"]["count"] == 2
    assert rows["forward"]["package_0_j"] == pytest.approx(6.0)
    assert rows["forward"]["core_0_j"] == pytest.approx(4.0)
    assert rows["forward"]["dram_0_j"] == pytest.approx(0.5)
    assert rows["nms"]["package_0_j"] == pytest.approx(1.0) == rows["postprocess"]["package_0_j"]
    assert rows["run"]["package_0_j"] == pytest.approx(7.0)
    assert rows["run"]["dram_0_j"] == pytest.approx(0.6)
    assert set(recorder.columns()) == set(rows["run"])
    assert rows["run"]["duration_s"] >= rows["forward"]["duration_s"] > 0

    summary = recorder.summary(images=4)
    assert summary["status"] == "measured" and not section_shape_errors(summary, EnergySection)
    assert summary["domains"] == ["package_0", "core_0", "dram_0"]
    assert summary["joules"]["package_0"] == pytest.approx(7.0)
    assert summary["joules_per_image"]["package_0"] == pytest.approx(7.0 / 4)
    assert summary["average_watts"]["core_0"] == pytest.approx(4.5 / summary["duration_s"])
    assert summary["steps"]["forward"]["joules"]["core_0"] == pytest.approx(4.0)
    assert "idle_watts" not in summary


def test_recorder_corrects_a_counter_wrap(tmp_path):
    root = make_powercap(tmp_path)
    recorder = EnergyRecorder(root)
    set_counters(root, package_0=MAX_RANGE_UJ - 1000)
    recorder.step_started("forward")
    set_counters(root, package_0=500)
    recorder.step_ended("forward")
    assert recorder.rows()[0]["package_0_j"] == pytest.approx(1500e-6)


def test_run_total_survives_several_wraps_read_at_step_boundaries(tmp_path):
    """A window longer than one wrap period is right when the steps inside read the counter often enough."""
    root = make_powercap(tmp_path)
    recorder = EnergyRecorder(root)
    counter, spent = MAX_RANGE_UJ - 10, 0
    set_counters(root, package_0=counter)
    recorder.step_started("run")
    for _ in range(5):  # each step spends 60% of the counter's range: the run wraps three times
        recorder.step_started("forward")
        step = int(MAX_RANGE_UJ * 0.6)
        counter, spent = (counter + step) % MAX_RANGE_UJ, spent + step
        set_counters(root, package_0=counter)
        recorder.step_ended("forward")
    recorder.step_ended("run")
    rows = {row["tag"]: row for row in recorder.rows()}
    assert rows["run"]["package_0_j"] == pytest.approx(spent / 1e6)
    assert rows["forward"]["package_0_j"] == pytest.approx(spent / 1e6)


def test_a_counter_that_fails_mid_run_ends_measurement_not_the_run(tmp_path):
    root = make_powercap(tmp_path)
    recorder = EnergyRecorder(root)
    recorder.step_started("run")
    (root / "intel-rapl" / LABEL_DIRS["package_0"] / "energy_uj").write_text("")
    recorder.step_started("forward")
    recorder.step_ended("forward")
    recorder.step_ended("run")
    summary = recorder.summary(images=1)
    assert summary["status"] == "unavailable" and "failed during the run" in summary["reason"]
    assert recorder.rows() == []


def test_idle_baseline_gives_net_figures(tmp_path):
    root = make_powercap(tmp_path)
    recorder = EnergyRecorder(root)

    def idle_for(seconds: float) -> None:
        import time
        time.sleep(seconds)
        set_counters(root, package_0=2_000_000, core_0=1_000_000, dram_0=500_000)

    idle_watts = recorder.measure_idle(0.05, sleep=idle_for)
    recorder.step_started("run")
    set_counters(root, package_0=12_000_000, core_0=6_000_000, dram_0=1_500_000)
    recorder.step_ended("run")

    summary = recorder.summary(images=2)
    assert not section_shape_errors(summary, EnergySection)
    assert summary["idle_watts"] == idle_watts
    assert summary["idle_watts"]["package_0"] * summary["idle_seconds"] == pytest.approx(2.0)
    expected_net = 10.0 - summary["idle_watts"]["package_0"] * summary["duration_s"]
    assert summary["joules"]["package_0"] == pytest.approx(10.0)
    assert summary["net_joules"]["package_0"] == pytest.approx(expected_net)
    assert summary["net_joules_per_image"]["package_0"] == pytest.approx(expected_net / 2)
    assert summary["steps"]["run"]["net_joules"]["package_0"] == pytest.approx(expected_net)


def test_unavailable_recorder_reports_the_reason_and_no_numbers(tmp_path):
    recorder = EnergyRecorder(tmp_path / "absent")
    recorder.step_started("run")
    recorder.step_ended("run")
    assert not recorder.available
    assert recorder.rows() == []
    assert recorder.measure_idle(10.0) is None  # returns at once: nothing to measure
    summary = recorder.summary(images=3)
    assert summary == {"status": "unavailable", "reason": recorder.status.reason}
    assert "no powercap directory" in summary["reason"]


def test_unavailable_recorder_from_an_injected_probe(tmp_path):
    root = make_powercap(tmp_path)

    def denied(path: Path) -> str:
        raise PermissionError(13, "Permission denied", str(path))

    recorder = EnergyRecorder(root, status=probe_rapl(root, read_text=denied))
    assert not recorder.available
    assert recorder.summary(images=1)["status"] == "unavailable"


def test_mismatched_step_end_is_an_error(tmp_path):
    recorder = EnergyRecorder(make_powercap(tmp_path))
    recorder.step_started("postprocess")
    recorder.step_started("nms")
    with pytest.raises(ValueError, match="nms"):
        recorder.step_ended("postprocess")


def test_import_keeps_pyjoules_log_line_and_logging_config_away():
    script = "import logging, utils.measure.energy.recorder; print(len(logging.getLogger().handlers))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "pynvml" not in result.stderr
    assert result.stdout.strip() == "0"
