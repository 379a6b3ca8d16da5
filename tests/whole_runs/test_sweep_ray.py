"""Sweeps with --launcher ray against a real Ray cluster on this machine: a head and a second node, each a
`ray start --block` in its own session, torn down afterwards with nothing of theirs left running. Points spread
over both nodes and come back whole; Ctrl-C keeps the finished point and stops the running one; a killed node's
point is a failed row and the sweep goes on. Without the ray package these tests skip; if Ray cannot start they
fail."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest

from tests.support.paths import ROOT

pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[ray]'): the Ray launcher is not tested")

pytestmark = pytest.mark.slow  # a real Ray cluster

RAY = str(Path(sys.executable).with_name("ray"))
QUICK = ["--config", str(ROOT / "configs" / "samples_tiny.yaml"),
         "--set", f"dataset.path={ROOT / 'datasets' / 'samples'}", "--set", "dataset.limit=2",
         "--set", "dataset.batch_size=1", "--set", "benchmark.warmup=0", "--set", "benchmark.repeats=3",
         "--set", "benchmark.layer_timing=false", "--set", "benchmark.energy.enabled=false",
         "--set", "benchmark.memory.enabled=false", "--set", "outputs.save_images=false",
         "--set", "outputs.plots=false", "--set", "outputs.report=false", "--set", "runtime.threads=1",
         "--set", "benchmark.memory.check=false"]  # no memory fit's probe forwards: no test here is about it
START_SECONDS = 90
# The head checks each node every second rather than every 3 (Ray's default): a killed node is found dead after
# 5 refused checks in about 5 s instead of 15. A live node is still given Ray's own 10 s to answer each check.
HEALTH_CHECKS = {"RAY_health_check_period_ms": "1000"}
DRIVER_ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}  # its "started on" lines as they happen


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _sessions_processes(sessions: set[int]) -> list[tuple[int, str]]:
    """(pid, command) of every live process in these sessions (Ray's workers and the points they started
    included: they stay in the session of the `ray start` that began their node)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[3]) in sessions:
            found.append((int(entry.name), command.strip()))
    return found


class Node:
    def __init__(self, log: Path, arguments: list[str], label: str, scratch: Path):
        self.label = label
        self.alias = f"also-{label}"  # a second label: two names for one machine
        self.log = log
        with open(log, "w") as handle:
            self.process = subprocess.Popen([RAY, "start", "--block", "--num-cpus=1", "--disable-usage-stats",
                                             "--object-store-memory=100000000",
                                             f"--labels=name={label},alias={self.alias}",
                                             f"--dashboard-agent-listen-port={_free_port()}",
                                             f"--dashboard-agent-grpc-port={_free_port()}",
                                             f"--metrics-export-port={_free_port()}",
                                             f"--runtime-env-agent-port={_free_port()}", *arguments],
                                            stdout=handle, stderr=subprocess.STDOUT, start_new_session=True,
                                            # the points' temporary folders: what a killed node leaves goes
                                            # with the cluster's folder
                                            env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "TMPDIR": str(scratch),
                                                 **HEALTH_CHECKS})
        self.session = self.process.pid

    def wait_started(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            text = self.log.read_text(errors="replace")
            if "Ray runtime started" in text:
                return
            if self.process.poll() is not None:
                pytest.fail(f"ray start for {self.label} ended with {self.process.returncode}:\n{text[-3000:]}")
            time.sleep(0.3)
        pytest.fail(f"Ray node {self.label} did not start within {START_SECONDS} s:\n{self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        """Every process of the node, by the ids of its session; SIGKILL is what a dying machine looks like."""
        deadline = time.monotonic() + 20
        while (left := _sessions_processes({self.session})) and time.monotonic() < deadline:
            for pid, _ in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.3)
        self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def cluster():
    # Short: Ray's Unix sockets live under it, and their paths are limited to about 100 characters.
    temp = Path(tempfile.mkdtemp(prefix="dbray", dir="/tmp"))
    port, tag = _free_port(), uuid.uuid4().hex[:6]
    scratch = temp / "t"
    scratch.mkdir()
    head = Node(temp / "head.log", ["--head", f"--port={port}", "--include-dashboard=false", f"--temp-dir={temp}",
                                    f"--ray-client-server-port={_free_port()}"], f"head-{tag}", scratch)
    nodes = [head]
    try:
        head.wait_started()
        second = Node(temp / "second.log", [f"--address=127.0.0.1:{port}"], f"second-{tag}", scratch)
        nodes.append(second)
        second.wait_started()
        yield {"address": f"127.0.0.1:{port}", "head": head, "second": second}
    finally:
        for node in nodes:
            node.kill()
        left = _sessions_processes({node.session for node in nodes})
        shutil.rmtree(temp, ignore_errors=True)
        assert not left, f"Ray processes left behind: {left}"


def _sweep(cluster, outputs: Path, sweep_id: str, *arguments: str) -> list[str]:
    return [sys.executable, str(ROOT / "benchmark.py"), *QUICK, "--set", f"run.output_dir={outputs}",
            "--set", f"run.id={sweep_id}", "--launcher", "ray", "--ray-address", cluster["address"], *arguments]


def _run(command: list[str], timeout: float = 150) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          start_new_session=True, env=DRIVER_ENV)


@contextmanager
def _ended(process: subprocess.Popen, seconds: float = 240):
    """The sweep's process never outlives the test: killed when the test fails or it runs past `seconds`."""
    watchdog = threading.Timer(seconds, process.kill)
    watchdog.start()
    try:
        yield
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.kill()
            process.wait()


def _benchmarks_of(cluster) -> list[tuple[int, str]]:
    sessions = {cluster["head"].session, cluster["second"].session}
    return [(pid, command) for pid, command in _sessions_processes(sessions) if "benchmark.py" in command]


@pytest.fixture(scope="module")
def spread(cluster, tmp_path_factory):
    """Two points, unpinned, at once: one on each node; MLflow on, as a fleet would use it."""
    outputs = tmp_path_factory.mktemp("ray_spread")
    tracking = f"outputs.mlflow.tracking_uri=sqlite:///{outputs / 'mlflow.db'}"
    done = _run(_sweep(cluster, outputs, "spread", "--set", tracking, "--sweep", "preprocess.img_size=64,96"))
    return done, outputs / "spread"


def test_points_spread_over_both_nodes_and_come_back_whole(spread):
    done, folder = spread
    assert done.returncode == 0, done.stderr[-3000:]
    table = pd.read_csv(folder / "sweep.csv")
    assert table["status"].tolist() == ["complete", "complete"], table["reason"].tolist()
    assert table["node_id"].nunique() == 2 and (table["p50_ms_per_image"] > 0).all()
    described = json.loads((folder / "sweep.json").read_text())["launcher"]
    assert described["name"] == "ray" and set(table["node_id"]) == {node["node_id"] for node in described["nodes"]}
    for point in table["point"]:
        summary = json.loads((folder / point / "summary.json").read_text())
        assert summary["status"] == "complete" and summary["timed_passes"] == 3
        assert (folder / point / "steps_timer.csv").is_file() and (folder / point / "env.json").is_file()
        assert "detbench run" in (folder / "logs" / f"{point}.stdout.txt").read_text()
    assert "started on node" in done.stdout and "Ray cluster" in (folder / "report.html").read_text()
    assert not list(folder.glob(".*.partial"))


def test_the_answer_compare_and_mlflow_work_on_points_that_ran_on_the_cluster(spread, tmp_path):
    from mlflow.tracking import MlflowClient

    from benchmark import main

    _, folder = spread
    table = pd.read_csv(folder / "sweep.csv")
    answer = json.loads((folder / "sweep.json").read_text())["answer"]
    assert answer["fastest_equal"]["point"] == table.sort_values("p50_ms_per_image")["point"].iloc[0]
    assert main(["compare", str(folder / table["point"][0]), str(folder / table["point"][1]),
                 "--out", str(tmp_path)]) == 0
    assert "config.preprocess.img_size" in set(pd.read_csv(tmp_path / "compare.csv")["name"])
    client = MlflowClient(tracking_uri=f"sqlite:///{folder.parent / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("detbench").experiment_id])
    parent = [run for run in runs if run.info.run_name == "spread"][0]
    children = [run for run in runs if run.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert sorted(run.data.params["preprocess.img_size"] for run in children) == ["64", "96"]


def test_an_unknown_node_refuses_the_sweep_before_anything_runs(cluster, tmp_path):
    done = _run(_sweep(cluster, tmp_path, "unknown", "--sweep", "node=no-such-machine"), timeout=60)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "node=no-such-machine" in done.stderr and cluster["head"].label in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_keeps_the_finished_point_and_stops_the_running_one(cluster, tmp_path, spawn):
    """A short point and a long one start together on the two nodes; Ctrl-C once the short one is done."""
    # At 64 px: what the test needs is a point that ends and one that does not, not the model at its full size.
    command = _sweep(cluster, tmp_path, "stopped", "--set", "preprocess.img_size=64",
                     "--sweep", "benchmark.repeats=3,100000")
    # spawn: Ctrl-C live in the child even where the suite runs as a background job.
    process = spawn(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=DRIVER_ENV)
    table_file = tmp_path / "stopped" / "sweep.csv"
    with _ended(process):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            if table_file.is_file() and pd.read_csv(table_file)["status"].iloc[0] != "pending":
                break
            time.sleep(0.3)
        time.sleep(1)  # the long point is in its timed passes by now
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr[-3000:]
    table = pd.read_csv(table_file)
    assert table["status"].tolist() == ["complete", "stopped"], table["reason"].tolist()
    assert table["node_id"].nunique() == 2
    # The stopped point wrote what it measured on its node, and that came back too.
    stopped = json.loads((tmp_path / "stopped" / table["point"][1] / "summary.json").read_text())
    assert stopped["status"] == "interrupted" and stopped["stop_reason"]
    assert json.loads((tmp_path / "stopped" / "sweep.json").read_text())["status"] == "stopped"
    assert not _benchmarks_of(cluster)


# Before the test that kills a node: round 1 needs both.
def test_a_tune_race_runs_its_first_round_on_the_cluster_and_the_rest_here(cluster, tmp_path):
    # torch fp32 is the reference (no accuracy check); two input sizes raced, one thread: round 1 spreads over the nodes
    command = [sys.executable, str(ROOT / "benchmark.py"), "tune", *QUICK, "--set", f"run.output_dir={tmp_path}",
               "--set", "run.id=race", "--set", "runtime.backend=torch", "--set", "runtime.precision=fp32",
               "--set", "runtime.pinning=false", "--sweep", "preprocess.img_size=64,96", "--minutes", "1", "--rounds", "2",
               "--launcher", "ray", "--ray-address", cluster["address"]]
    done = _run(command, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    folder = tmp_path / "race"
    document = json.loads((folder / "sweep.json").read_text())
    assert document["kind"] == "tune" and document["launcher"]["name"] == "ray"
    assert document["answer"]["winner"] is not None
    state = json.loads((folder / "tune.json").read_text())
    first = [run for entry in state["entries"] for run in entry["runs"] if run["round"] == 1]
    assert len(first) == 2 and {run["status"] for run in first} == {"complete"}
    # round 1 on the cluster, one run per node; later rounds here, where a launcher records no placement
    nodes = {node["node_id"] for node in document["launcher"]["nodes"]}
    assert {run["placement"].get("node_id") for run in first} == nodes
    later = [run for entry in state["entries"] for run in entry["runs"] if run["round"] > 1]
    assert all(not run["placement"] for run in later)


def test_a_killed_nodes_point_is_a_failed_row_and_the_sweep_goes_on(cluster, spread, tmp_path, spawn):
    """Runs last: it takes the second node down. Points pinned by node id and by two labels of the second node;
    the one waiting for that node is failed as not run rather than waiting for good."""
    head_id = next(node["node_id"] for node in json.loads((spread[1] / "sweep.json").read_text())["launcher"]["nodes"]
                   if node["labels"].get("name") == cluster["head"].label)
    second = cluster["second"]
    command = _sweep(cluster, tmp_path, "killed", "--set", "preprocess.img_size=64",
                     "--sweep", f"node={second.label},{second.alias},{head_id}")
    process = spawn(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=DRIVER_ENV)
    with _ended(process):
        for line in process.stdout:
            if line.startswith(f"node={second.label}: started on"):
                break
        time.sleep(3)  # inside benchmark.py on the node
        second.kill()
        stdout, stderr = process.communicate(timeout=150)
    assert process.returncode == 0, stderr[-3000:]
    table = pd.read_csv(tmp_path / "killed" / "sweep.csv")
    assert table["status"].tolist() == ["failed", "failed", "complete"], table["reason"].tolist()
    assert "its node" in table["reason"][0] and "died while it ran" in table["reason"][0]
    assert table["reason"][1] == f"not run: the Ray cluster has no live node named {second.alias} left"
    assert table["node"][2] == head_id and "1 complete, 2 failed" in stdout
    assert not _benchmarks_of(cluster)
