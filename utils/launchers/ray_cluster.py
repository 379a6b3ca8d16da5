"""The `ray` launcher: each point is a Ray task on one node of a cluster, with all of that node's CPUs reserved so
that nothing else of Ray runs beside a measurement, and at most one point per node at a time. The task runs the
normal benchmark.py there (ray_point.py) and hands the run directory back as an archive, unpacked into the sweep
directory here. `--sweep node=NAME,...` pins points to the nodes a Ray node id or a node label value names.

ray is imported only here, and only when a sweep asks for this launcher.
"""
from __future__ import annotations

import io
import logging
import os
import shutil
import socket
import tarfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from utils.core import exit_hooks
from utils.launchers import ray_point
from utils.launchers.base import Finished, Launcher, LauncherError, PointJob, PointOutcome, Started, Stops
from utils.launchers.local import BENCHMARK_SCRIPT

PROBE_SECONDS = 5  # a TCP connection to the cluster's address, before Ray's own client (which can wait for good)
CONNECT_SECONDS = 30
STOP_GRACE_SECONDS = 60  # how long stopped points get to write what they measured before their tasks are killed
KILL_GRACE_SECONDS = 20
POLL_SECONDS = 0.5
INSTALL = "pip install -e '.[ray]' (or pip install 'ray>=2.60')"


@dataclass(frozen=True)
class Node:
    node_id: str
    host: str
    address: str
    cpus: float
    labels: dict = field(default_factory=dict)  # the labels given with `ray start --labels`, Ray's own left out
    alive: bool = True

    @classmethod
    def from_ray(cls, entry: dict) -> "Node":
        labels = {key: value for key, value in (entry.get("Labels") or {}).items() if not key.startswith("ray.io/")}
        return cls(entry["NodeID"], entry.get("NodeManagerHostname", ""), entry.get("NodeManagerAddress", ""),
                   float((entry.get("Resources") or {}).get("CPU", 0)), labels, bool(entry.get("Alive")))

    def named(self, name: str) -> bool:
        return name == self.node_id or name in self.labels.values()

    def brief(self) -> str:
        labels = ",".join(f"{key}={value}" for key, value in sorted(self.labels.items()))
        return f"{self.node_id} ({self.host}, {self.cpus:g} CPUs{', ' + labels if labels else ''})"


def nodes_for(name: Optional[str], nodes: list[Node]) -> list[Node]:
    """The live nodes with CPUs that may run a point pinned to `name` (any of them when None)."""
    return [node for node in nodes if node.alive and node.cpus > 0 and (name is None or node.named(name))]


def probe_address(address: str) -> Optional[tuple[str, int]]:
    """host and port of a `HOST:PORT` or `ray://HOST:PORT` address; None for `auto` and the like."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit() or not host:
        return None
    return host.strip("[]"), int(port)


def unpack(archive: bytes, run_dir: Path) -> None:
    """The point's run directory, whole: unpacked beside its place, then renamed into it."""
    partial = run_dir.with_name(f".{run_dir.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(archive)) as files:
            files.extractall(partial, filter="data")  # refuses absolute paths, `..` and links out of the folder
        (partial / run_dir.name).rename(run_dir)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else 'no message'}"[:400]


class RayLauncher(Launcher):
    name = "ray"
    columns = ("node_id", "node_host")
    places_points = True

    def __init__(self, address: str, console=print):
        self.address = address
        self.console = console
        self.nodes: dict[str, Node] = {}
        self.dead: set[str] = set()  # nodes a task of ours saw die, before Ray marks them
        self.ray = None
        self._remote = None
        self._running: dict = {}
        self._refreshed = 0.0

    def open(self) -> None:
        try:
            import ray
        except ImportError:
            raise LauncherError(f"--launcher ray needs the ray package, which is not installed here: {INSTALL} "
                                "(the same version on every node)") from None
        target = probe_address(self.address)
        if target is not None:
            try:
                socket.create_connection(target, timeout=PROBE_SECONDS).close()
            except OSError as error:
                raise LauncherError(f"cannot reach the Ray cluster at {self.address} ({error}); start it with "
                                    "`ray start --head` (docs/sweeps.md, Fleets) or fix --ray-address / RAY_ADDRESS") from None
        self._connect(ray)
        self.ray = ray
        self._refresh(force=True)
        # The task's code travels with it: the nodes need no importable copy of this package, only benchmark.py.
        ray.cloudpickle.register_pickle_by_value(ray_point)
        self._remote = ray.remote(ray_point.run_point)

    def _connect(self, ray) -> None:
        outcome: dict = {}

        def connect() -> None:
            try:
                ray.init(address=self.address, log_to_driver=False, logging_level=logging.ERROR)
                outcome["connected"] = True
            except Exception as error:  # noqa: BLE001 - Ray raises several kinds; each is reported the same way
                outcome["error"] = error

        # Ray's client may wait for good on an address that accepts connections but does not answer as Ray does.
        worker = threading.Thread(target=connect, name="ray-connect", daemon=True)
        worker.start()
        worker.join(CONNECT_SECONDS)
        if "connected" in outcome:
            return
        if worker.is_alive():
            exit_hooks.left_running(worker.is_alive)  # Ray's client would crash the exit
        why = _first_line(outcome["error"]) if "error" in outcome else f"no answer within {CONNECT_SECONDS} s"
        raise LauncherError(f"cannot connect to the Ray cluster at {self.address} ({why}); check that `ray status "
                            f"--address {self.address}` answers on this machine, or fix --ray-address / RAY_ADDRESS")

    def _refresh(self, force: bool = False) -> None:
        if not force and time.monotonic() - self._refreshed < 2.0:
            return
        self._refreshed = time.monotonic()
        try:
            entries = self.ray.nodes()
        except Exception:  # noqa: BLE001 - a moment without the cluster's view: keep the last one, tasks tell the rest
            if force and not self.nodes:
                raise
            return
        for entry in entries:
            node = Node.from_ray(entry)
            if node.node_id in self.dead:
                node = Node(node.node_id, node.host, node.address, node.cpus, node.labels, alive=False)
            self.nodes[node.node_id] = node

    def check(self, jobs: list[PointJob]) -> None:
        nodes = list(self.nodes.values())
        listed = "; ".join(node.brief() for node in nodes if node.alive)[:1500] or "none"
        if not nodes_for(None, nodes):
            raise LauncherError(f"the Ray cluster at {self.address} has no live node with CPUs to run points on "
                                f"(its nodes: {listed}); add one with `ray start --address ...`")
        for name in sorted({job.node for job in jobs if job.node is not None}):
            if not nodes_for(name, nodes):
                raise LauncherError(f"--sweep node={name[:120]}: no live node with CPUs of the Ray cluster at "
                                    f"{self.address} has that node id or a label with that value, so nothing "
                                    f"ran; its nodes: {listed}")

    def describe(self) -> dict:
        return {"name": self.name, "address": self.address,
                "nodes": [{"node_id": node.node_id, "host": node.host, "address": node.address, "cpus": node.cpus,
                           "labels": node.labels, "alive": node.alive} for node in self.nodes.values()]}

    def run(self, jobs: list[PointJob], stops: Stops, started: Started, finished: Finished) -> None:
        waiting = list(jobs)
        stopping_since: Optional[float] = None
        killed_since: Optional[float] = None
        while waiting or self._running:
            if stops.received:
                waiting = []  # never started: the driver records them as stopped
                now = time.monotonic()
                if stopping_since is None:
                    stopping_since = now
                    for reference in self._running:
                        self.ray.cancel(reference)  # SIGINT in the task, passed on to the point
                elif killed_since is None and (stops.count > 1 or now - stopping_since > STOP_GRACE_SECONDS):
                    killed_since = now
                    for reference in self._running:
                        self.ray.cancel(reference, force=True)
                elif killed_since is not None and now - killed_since > KILL_GRACE_SECONDS:
                    for job, node in self._running.values():
                        finished(job, PointOutcome(None, lost="its task did not end when it was cancelled",
                                                   stopped=True, placement=self._placement(node)))
                    self._running.clear()
                    return
            else:
                waiting = self._start(waiting, started, finished)
            if not self._running:
                continue
            ready, _ = self.ray.wait(list(self._running), num_returns=1, timeout=POLL_SECONDS)
            for reference in ready:
                job, node = self._running.pop(reference)
                finished(job, self._collect(reference, job, node, stopped=stops.received is not None))

    def _start(self, waiting: list[PointJob], started: Started, finished: Finished) -> list[PointJob]:
        """Starts each waiting job that has a free node; returns those still waiting."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self._refresh()
        busy = {node.node_id for _, node in self._running.values()}
        still = []
        for job in waiting:
            candidates = nodes_for(job.node, list(self.nodes.values()))
            if not candidates:
                which = f"no live node named {job.node}" if job.node else "no live node with CPUs"
                finished(job, PointOutcome(None, lost=f"not run: the Ray cluster has {which} left"))
                continue
            free = [node for node in candidates if node.node_id not in busy]
            if not free:
                still.append(job)
                continue
            node = free[0]
            busy.add(node.node_id)
            strategy = NodeAffinitySchedulingStrategy(node.node_id, soft=False)
            reference = self._remote.options(num_cpus=node.cpus, scheduling_strategy=strategy, max_retries=0,
                                             retry_exceptions=False, name=f"detbench {job.name}"[:200]).remote(
                list(job.arguments), job.name, str(BENCHMARK_SCRIPT), os.getcwd())
            self._running[reference] = (job, node)
            started(job, f"node {node.host} ({node.node_id[:12]})")
        return still

    @staticmethod
    def _placement(node: Node) -> dict:
        return {"node_id": node.node_id, "node_host": node.host}

    def _collect(self, reference, job: PointJob, node: Node, stopped: bool) -> PointOutcome:
        exceptions = self.ray.exceptions
        placement = self._placement(node)
        try:
            value = self.ray.get(reference)
        except exceptions.TaskCancelledError:
            return PointOutcome(None, lost="stopped: its task was cancelled before it handed back any file",
                                stopped=True, placement=placement)
        except exceptions.NodeDiedError as error:
            self.dead.add(node.node_id)
            self._refresh(force=True)
            return PointOutcome(None, lost=f"its node {node.host} ({node.node_id[:12]}) died while it ran: "
                                           f"{_first_line(error)}", placement=placement)
        except exceptions.RayError as error:
            return PointOutcome(None, lost=f"its Ray task on {node.host} ({node.node_id[:12]}) failed: "
                                           f"{_first_line(error)}", stopped=stopped, placement=placement)
        if value["returncode"] is None:
            return PointOutcome(None, lost=value["lost"], placement=placement)
        outcome = PointOutcome(value["returncode"], value["stdout"], value["stderr"], placement=placement)
        if value["archive"] is not None:
            try:
                unpack(value["archive"], job.run_dir)
            except (OSError, tarfile.TarError) as error:
                outcome.returncode = None
                outcome.lost = f"its run directory came back but cannot be unpacked here: {error}"
        return outcome

    def close(self) -> None:
        if self.ray is None:
            return
        for reference in self._running:
            self.ray.cancel(reference, force=True)
        self._running.clear()
        self.ray.shutdown()
        self.ray = None
