"""The ray launcher's cluster side (utils/launchers/ray_cluster.py): an unreachable or silent cluster and a missing ray
package refused (exit 2) before anything is written, node names from ids and labels of live nodes with CPUs, the
address probed before Ray connects, and a returned run directory unpacked whole and never outside its place."""
import io
import socket
import subprocess
import sys
import tarfile
import time

import pytest

from benchmark import main
from tests.support.paths import ROOT
from utils.launchers.ray_cluster import Node, nodes_for, probe_address, unpack


QUICK = ["--config", str(ROOT / "configs" / "samples_tiny.yaml"),
         "--set", f"dataset.path={ROOT / 'datasets' / 'samples'}", "--set", "dataset.limit=2"]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once the socket is closed


def test_an_unreachable_cluster_is_exit_2_within_seconds(tmp_path, capsys):
    address = f"127.0.0.1:{_closed_port()}"
    began = time.monotonic()
    code = main(QUICK + ["--set", f"run.output_dir={tmp_path}", "--launcher", "ray", "--ray-address", address,
                         "--sweep", "preprocess.img_size=64,96"])
    assert code == 2 and time.monotonic() - began < 20
    error = capsys.readouterr().err
    assert f"cannot reach the Ray cluster at {address}" in error and "ray start --head" in error
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_without_the_ray_package_the_ray_launcher_is_exit_2(tmp_path):
    arguments = QUICK + ["--set", f"run.output_dir={tmp_path}", "--launcher", "ray", "--ray-address", "127.0.0.1:1",
                         "--sweep", "preprocess.img_size=64,96"]
    hide_ray = f"import sys; sys.modules['ray'] = None; import benchmark; sys.exit(benchmark.main({arguments!r}))"
    done = subprocess.run([sys.executable, "-c", hide_ray], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "needs the ray package, which is not installed" in done.stderr and "pip install" in done.stderr
    assert list(tmp_path.iterdir()) == []


def _node(node_id, cpus=2.0, alive=True, **labels):
    return Node(node_id, "host-" + node_id, "10.0.0.1", cpus, labels, alive)


def test_a_node_name_is_a_node_id_or_a_label_value_of_a_live_node_with_cpus():
    nodes = [_node("aa11", name="epyc-1", kind="epyc"), _node("bb22", name="xeon-1"), _node("cc33", kind="epyc"),
             _node("dd44", alive=False, kind="epyc"), _node("ee55", cpus=0.0, name="head")]
    assert [node.node_id for node in nodes_for(None, nodes)] == ["aa11", "bb22", "cc33"]
    assert [node.node_id for node in nodes_for("epyc", nodes)] == ["aa11", "cc33"]
    assert [node.node_id for node in nodes_for("bb22", nodes)] == ["bb22"]
    assert nodes_for("head", nodes) == [] and nodes_for("kind", nodes) == []


def test_ray_labels_of_its_own_are_not_names():
    node = Node.from_ray({"NodeID": "ff66", "Alive": True, "NodeManagerHostname": "box", "Resources": {"CPU": 4.0},
                          "Labels": {"ray.io/node-id": "ff66", "ray.io/market-type": "spot", "name": "box-1"}})
    assert node.labels == {"name": "box-1"} and node.cpus == 4.0 and node.named("box-1") and node.named("ff66")
    assert not node.named("spot")


@pytest.mark.parametrize("address, target", [
    ("10.0.0.5:6379", ("10.0.0.5", 6379)), ("ray://head:10001", ("head", 10001)), ("[::1]:6379", ("::1", 6379)),
    ("auto", None), ("head", None), ("head:port", None),
])
def test_the_address_probed_before_ray_connects(address, target):
    assert probe_address(address) == target


def _archive(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_a_returned_run_directory_is_unpacked_whole_and_never_outside_its_place(tmp_path):
    unpack(_archive({"p/summary.json": b"{}", "p/plots/a.png": b"png"}), tmp_path / "p")
    assert (tmp_path / "p" / "summary.json").read_bytes() == b"{}" and (tmp_path / "p" / "plots" / "a.png").is_file()
    with pytest.raises(tarfile.TarError):
        unpack(_archive({"q/summary.json": b"{}", "../escaped.txt": b"x"}), tmp_path / "q")
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "q").exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["p"]


@pytest.mark.slow
def test_an_address_that_accepts_but_never_answers_as_ray_is_exit_2_in_bounded_time(tmp_path):
    silent = socket.socket()
    silent.bind(("0.0.0.0", 0))  # Ray dials the machine's own address for a loopback one
    silent.listen(16)
    address = f"127.0.0.1:{silent.getsockname()[1]}"
    arguments = QUICK + ["--set", f"run.output_dir={tmp_path}", "--launcher", "ray", "--ray-address", address,
                         "--sweep", "preprocess.img_size=64,96"]
    # As the command line runs it (its __main__ leaves past the attempt still inside Ray's client), given 3 s.
    script = ("import runpy, sys; import utils.launchers.ray_cluster as launcher; launcher.CONNECT_SECONDS = 3; "
              f"sys.argv = ['benchmark.py', *{arguments!r}]; runpy.run_path('benchmark.py', run_name='__main__')")
    try:
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=90)
    finally:
        silent.close()
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"cannot connect to the Ray cluster at {address}" in done.stderr and time.monotonic() - began < 60
    assert list(tmp_path.iterdir()) == []
