"""A point as a Ray task runs it (utils/launchers/ray_point.py): without what a Ray worker adds to its environment, a
node without the checkout at the same path named, and folders of killed tasks removed while running ones stay."""
import os
import subprocess
import sys

from tests.support.paths import ROOT
from utils.launchers.ray_point import FOLDER_PREFIX, point_environment, remove_abandoned_folders, run_point


def test_the_point_runs_without_what_a_ray_worker_adds_to_its_environment():
    worker = {"PATH": "/bin", "OMP_NUM_THREADS": "4", "RAY_JOB_ID": "01000000", "RAY_RAYLET_PID": "7",
              "SPT_NOENV": "1", "PYTHONBREAKPOINT": "ray.util.rpdb.set_trace", "MKL_NUM_THREADS": "2"}
    assert point_environment(worker, {"PATH": "/bin"}) == {"PATH": "/bin", "MKL_NUM_THREADS": "2"}
    # a thread setting the node was started with stays; unreadable raylet environment: Ray's additions go
    assert point_environment(worker, {"OMP_NUM_THREADS": "2"})["OMP_NUM_THREADS"] == "2"
    assert "OMP_NUM_THREADS" not in point_environment(worker, None)


def test_a_node_without_the_checkout_at_the_same_path_says_which_path_is_missing(tmp_path):
    missing = tmp_path / "elsewhere" / "benchmark.py"
    outcome = run_point(["--config", "configs/samples_tiny.yaml"], "p", str(missing), str(ROOT))
    assert outcome["returncode"] is None and str(missing) in outcome["lost"] and "same path" in outcome["lost"]
    outcome = run_point([], "p", str(ROOT / "benchmark.py"), str(tmp_path / "gone"))
    assert outcome["returncode"] is None and "the folder the sweep was started from" in outcome["lost"]


def test_folders_of_killed_tasks_are_removed_and_those_of_running_ones_stay(tmp_path):
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone, running = f"{FOLDER_PREFIX}{ended.stdout.strip()}-abc", f"{FOLDER_PREFIX}{os.getpid()}-def"
    for name in (gone, running, "detbench-ort-xyz"):
        (tmp_path / name / "point").mkdir(parents=True)
    assert remove_abandoned_folders(str(tmp_path)) == [gone]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["detbench-ort-xyz", running]
