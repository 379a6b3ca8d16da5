"""Energy per pipeline step from the RAPL counters of the Linux powercap interface, read through pyJoules.

RAPL counters are cumulative microjoule counters that wrap at `max_energy_range_uj`; an interval's energy is
the corrected difference of two readings. Without readable RAPL the status says why, and no number is given.
"""
from __future__ import annotations

import logging
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from utils.measure.energy.section import EnergySection
from utils.record.sections import MEASURED, UNAVAILABLE

POWERCAP_ROOT = Path("/sys/class/powercap")
# RAPL refreshes its counters about every millisecond: shorter windows are mostly quantisation noise.
MIN_RELIABLE_WINDOW_S = 0.01
_SUBZONE_KINDS = ("core", "uncore", "dram")  # pyJoules reads these, and the package-N zones above them
_ZONE_PATTERN = re.compile(r"intel-rapl:(\d+)$")
_SUBZONE_PATTERN = re.compile(r"intel-rapl:(\d+):(\d+)$")


class _DropPynvmlWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "pynvml not found" not in record.getMessage()


@contextmanager
def _quiet_pyjoules_import() -> Iterator[None]:
    """pyJoules warns about missing pynvml on the root logger at import, which also calls basicConfig()
    when the root logger has no handler; a temporary handler and filter keep both away from the user."""
    root_logger = logging.getLogger()
    placeholder, drop = logging.NullHandler(), _DropPynvmlWarning()
    root_logger.addHandler(placeholder)
    root_logger.addFilter(drop)
    try:
        yield
    finally:
        root_logger.removeFilter(drop)
        root_logger.removeHandler(placeholder)


with _quiet_pyjoules_import():
    from pyJoules.device import rapl_device
    from pyJoules.exception import PyJoulesException


def counter_delta_uj(before: int, after: int, max_range_uj: int) -> int:
    """Energy between two readings of a counter that wraps to 0 after max_range_uj; one wrap at most
    (a package counter wraps after hundreds of kJ, i.e. tens of minutes at full load)."""
    if after >= before:
        return after - before
    return after + max_range_uj - before


def uj_to_joules(microjoules: float) -> float:
    return microjoules / 1e6


def average_watts(joules: float, seconds: float) -> float | None:
    return joules / seconds if seconds > 0 else None


@dataclass(frozen=True)
class RaplZone:
    label: str  # pyJoules' name for the domain, e.g. package_0, core_0, dram_0
    name: str  # the zone's own name file, e.g. package-0, core, dram
    kind: str  # package, core, uncore or dram
    socket: int
    zone_dir: Path
    max_energy_range_uj: int


@dataclass(frozen=True)
class RaplStatus:
    available: bool
    reason: str | None = None
    domains: list[RaplZone] = field(default_factory=list)


def _read_text(path: Path) -> str:
    return path.read_text()


def _unavailable(reason: str) -> RaplStatus:
    return RaplStatus(available=False, reason=reason)


def _permission_reason(path: Path) -> str:
    return (f"{path} is not readable by this user: since Linux 5.10 the RAPL energy counters are readable by "
            f"root only. Run as root, or grant read access with "
            f"`sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj` (lost at reboot; a udev rule "
            f"makes it permanent)")


def _zone_directories(api_dir: Path) -> list[tuple[Path, int]]:
    """(zone dir, socket) of each top-level zone then of its subzones, in numeric order (intel-rapl:2
    before intel-rapl:10)."""
    def matching(folder: Path, pattern: re.Pattern) -> list[Path]:
        found = [path for path in folder.iterdir() if pattern.match(path.name) and path.is_dir()]
        return sorted(found, key=lambda path: [int(part) for part in path.name.split(":")[1:]])

    zones = []
    for zone_dir in matching(api_dir, _ZONE_PATTERN):
        socket = int(zone_dir.name.split(":")[1])
        zones.append((zone_dir, socket))
        zones.extend((subzone, socket) for subzone in matching(zone_dir, _SUBZONE_PATTERN))
    return zones


def _zone_kind(name: str, socket: int, is_subzone: bool) -> str | None:
    """The pyJoules domain kind a zone maps to; None for zones pyJoules cannot read (psys, mmio, ...)."""
    if not is_subzone:
        return "package" if name == f"package-{socket}" else None
    return name if name in _SUBZONE_KINDS else None


def probe_rapl(root: Path | str = POWERCAP_ROOT,
               read_text: Callable[[Path], str] = _read_text) -> RaplStatus:
    """Finds the RAPL domains under root/intel-rapl and checks that every energy counter can be read.
    read_text is injectable because tests run as root, where file permissions never block a read."""
    root = Path(root)
    if not root.is_dir():
        return _unavailable(f"no powercap directory at {root}: this kernel exposes no RAPL energy counters "
                            f"(typical of virtual machines and containers)")
    api_dir = root / "intel-rapl"
    zone_dirs = _zone_directories(api_dir) if api_dir.is_dir() else []
    if not zone_dirs:
        return _unavailable(f"{root} exists but holds no intel-rapl zones: the CPU or kernel offers no RAPL "
                            f"through powercap (e.g. an AMD CPU without RAPL support in this kernel, an ARM CPU, "
                            f"or the intel_rapl driver not loaded)")
    domains = []
    for zone_dir, socket in zone_dirs:
        try:
            name = read_text(zone_dir / "name").strip()
            kind = _zone_kind(name, socket, is_subzone=zone_dir.parent != api_dir)
            if kind is None:
                continue
            read_text(zone_dir / "energy_uj")
            max_range = int(read_text(zone_dir / "max_energy_range_uj"))
        except PermissionError as error:
            return _unavailable(_permission_reason(Path(error.filename or zone_dir / "energy_uj")))
        except (OSError, ValueError) as error:
            return _unavailable(f"could not read RAPL zone {zone_dir}: {error}")
        domains.append(RaplZone(f"{kind}_{socket}", name, kind, socket, zone_dir, max_range))
    if not domains:
        return _unavailable(f"the intel-rapl zones under {api_dir} hold no package, core, uncore or dram domain")
    return RaplStatus(available=True, domains=domains)


@contextmanager
def _pyjoules_api_dir(api_dir: Path) -> Iterator[None]:
    """pyJoules reads its directory from a module global, and only while configuring a device."""
    previous = rapl_device.RAPL_API_DIR
    rapl_device.RAPL_API_DIR = str(api_dir)
    try:
        yield
    finally:
        rapl_device.RAPL_API_DIR = previous


_PYJOULES_DOMAIN_CLASSES = {
    "package": rapl_device.RaplPackageDomain,
    "core": rapl_device.RaplCoreDomain,
    "uncore": rapl_device.RaplUncoreDomain,
    "dram": rapl_device.RaplDramDomain,
}


def open_rapl_device(root: Path, domains: list[RaplZone]) -> rapl_device.RaplDevice:
    """A pyJoules RaplDevice whose get_energy() returns the raw counters (uJ) in the order of `domains`."""
    with _pyjoules_api_dir(root / "intel-rapl"):
        device = rapl_device.RaplDevice()
        device.configure(domains=[_PYJOULES_DOMAIN_CLASSES[zone.kind](zone.socket) for zone in domains])
    return device


@dataclass
class _TagTotals:
    count: int = 0
    duration_ns: int = 0
    microjoules: list[int] = field(default_factory=list)


class EnergyRecorder:
    """StepTimer listener: reads the RAPL counters at every step boundary and sums energy per step tag.

    pyJoules does not correct counter wrap-around (it subtracts raw readings), so the recorder reads the raw
    counters through pyJoules' RAPL device and corrects the differences itself. The outermost brackets (the
    "run" bracket of each timed pass) make the run totals.
    """

    def __init__(self, root: Path | str = POWERCAP_ROOT, status: RaplStatus | None = None):
        self.root = Path(root)
        self.status = status if status is not None else probe_rapl(self.root)
        self._device = None
        if self.status.available:
            try:
                self._device = open_rapl_device(self.root, self.status.domains)
            except (PyJoulesException, OSError, ValueError) as error:
                self.status = _unavailable(f"pyJoules could not open the RAPL counters under {self.root}: "
                                           f"{type(error).__name__} {error}")
        self._open: list[tuple[str, int, list[int]]] = []
        self._last_counters: list[int] | None = None
        self._accumulated: list[int] = []
        self._totals: dict[str, _TagTotals] = {}
        self._run = _TagTotals(microjoules=[0] * len(self.domains))
        self._idle: tuple[float, list[int]] | None = None

    @property
    def available(self) -> bool:
        return self._device is not None

    @property
    def domains(self) -> list[str]:
        return [zone.label for zone in self.status.domains] if self.available else []

    def _read(self) -> tuple[int, list[int]]:
        """(perf_counter_ns, energy in uJ accumulated since the first reading).

        Every reading adds the wrap-corrected difference from the previous one, so a window of any length
        stays right as long as consecutive readings (step boundaries) are less than one wrap period apart.
        """
        now, counters = time.perf_counter_ns(), [int(value) for value in self._device.get_energy()]
        if self._last_counters is None:
            self._accumulated = [0] * len(counters)
        else:
            self._accumulated = [total + delta for total, delta in
                                 zip(self._accumulated, self._deltas_uj(self._last_counters, counters))]
        self._last_counters = counters
        return now, list(self._accumulated)

    def _deltas_uj(self, before: list[int], after: list[int]) -> list[int]:
        return [counter_delta_uj(b, a, zone.max_energy_range_uj)
                for b, a, zone in zip(before, after, self.status.domains)]

    def _read_or_give_up(self) -> tuple[int, list[int]] | None:
        """A counter that stops reading mid-run ends the energy measurement, never the run."""
        try:
            return self._read()
        except (OSError, ValueError) as error:
            self._device = None
            self.status = _unavailable(f"reading the RAPL counters failed during the run "
                                       f"({type(error).__name__}: {error}); no energy figures are reported")
            return None

    def step_started(self, name: str) -> None:
        if self.available and (reading := self._read_or_give_up()) is not None:
            self._open.append((name, *reading))

    def step_ended(self, name: str) -> None:
        if not self.available or (reading := self._read_or_give_up()) is None:
            return
        now, counters = reading
        opened, start_ns, start_counters = self._open.pop()
        if opened != name:
            raise ValueError(f"step_ended({name!r}) while the innermost open step is {opened!r}")
        deltas = [end - start for start, end in zip(start_counters, counters)]
        if name not in self._totals:
            self._totals[name] = _TagTotals(microjoules=[0] * len(deltas))
        targets = [self._totals[name]]
        if not self._open:
            targets.append(self._run)
        for totals in targets:
            totals.count += 1
            totals.duration_ns += now - start_ns
            totals.microjoules = [old + new for old, new in zip(totals.microjoules, deltas)]

    def measure_idle(self, seconds: float, sleep: Callable[[float], None] = time.sleep) -> dict[str, float] | None:
        """Idle power per domain over `seconds` of sleep (None without RAPL); summary() then also reports
        net figures, i.e. raw energy minus idle power times duration."""
        if not self.available:
            return None
        start_ns, before = self._read()
        sleep(seconds)
        end_ns, after = self._read()
        idle_seconds = (end_ns - start_ns) / 1e9
        self._idle = (idle_seconds, [end - start for start, end in zip(before, after)])
        return self._idle_watts()

    def _idle_watts(self) -> dict[str, float]:
        idle_seconds, microjoules = self._idle
        return {label: uj_to_joules(uj) / idle_seconds for label, uj in zip(self.domains, microjoules)}

    def _joules(self, totals: _TagTotals) -> dict[str, float]:
        return {label: uj_to_joules(uj) for label, uj in zip(self.domains, totals.microjoules)}

    def _net_joules(self, totals: _TagTotals) -> dict[str, float]:
        idle_watts, seconds = self._idle_watts(), totals.duration_ns / 1e9
        return {label: joules - idle_watts[label] * seconds for label, joules in self._joules(totals).items()}

    def rows(self) -> list[dict]:
        """Rows of energy.csv (tag, count, duration_s, <domain>_j...); none without RAPL."""
        return [{"tag": tag, "count": totals.count, "duration_s": totals.duration_ns / 1e9,
                 **{f"{label}_j": joules for label, joules in self._joules(totals).items()}}
                for tag, totals in self._totals.items()]

    def columns(self) -> list[str]:
        return ["tag", "count", "duration_s", *(f"{label}_j" for label in self.domains)]

    def summary(self, images: int) -> EnergySection:
        """summary.json `energy`: measured figures, or the reason there are none."""
        if not self.available:
            return {"status": UNAVAILABLE, "reason": self.status.reason}
        if self._run.count == 0:
            return {"status": UNAVAILABLE, "reason": "RAPL is readable but no step was recorded"}
        seconds = self._run.duration_ns / 1e9
        joules = self._joules(self._run)
        summary = {
            "status": MEASURED,
            "source": "RAPL (powercap) via pyJoules",
            "domains": self.domains,
            "duration_s": seconds,
            "joules": joules,
            "joules_per_image": {label: j / images for label, j in joules.items()} if images else None,
            "average_watts": {label: average_watts(j, seconds) for label, j in joules.items()},
            "steps": {tag: {"count": totals.count, "duration_s": totals.duration_ns / 1e9,
                            "joules": self._joules(totals)} for tag, totals in self._totals.items()},
            "steps_below_resolution": [tag for tag, totals in self._totals.items()
                                       if totals.duration_ns / 1e9 / totals.count < MIN_RELIABLE_WINDOW_S],
        }
        if self._idle is not None:
            net = self._net_joules(self._run)
            summary.update({
                "idle_seconds": self._idle[0],
                "idle_watts": self._idle_watts(),
                "net_joules": net,
                "net_joules_per_image": {label: j / images for label, j in net.items()} if images else None,
            })
            for tag, totals in self._totals.items():
                summary["steps"][tag]["net_joules"] = self._net_joules(totals)
        return summary
