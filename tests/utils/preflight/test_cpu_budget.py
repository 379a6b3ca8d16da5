"""The CPUs a run may use (utils/preflight/cpu_budget.py): the cgroup quota (v2 and v1), the affinity mask, a thread
count above them as a warning naming both numbers, and the loader's workers only where a core is left."""
from tests.support.cgroup_trees import fake_tree
from utils.preflight.cpu_budget import cgroup_cpu_quota, loader_workers, threads_warning, usable_cpus


def test_cpu_quota_and_usable_cpus(tmp_path):
    assert cgroup_cpu_quota(fake_tree(tmp_path / "a", {"cpu.max": "150000 100000"})) == 1.5
    assert cgroup_cpu_quota(fake_tree(tmp_path / "b", {"cpu.max": "max 100000"})) is None
    assert cgroup_cpu_quota(fake_tree(tmp_path / "c", {"cpu/cpu.cfs_quota_us": "-1",
                                                       "cpu/cpu.cfs_period_us": "100000"})) is None
    assert cgroup_cpu_quota(fake_tree(tmp_path / "d", {"cpu/cpu.cfs_quota_us": "300000",
                                                       "cpu/cpu.cfs_period_us": "100000"})) == 3.0
    assert usable_cpus(affinity=8, quota=1.5) == (2, "the cgroup CPU quota grants 1.5 CPUs' worth of time")
    assert usable_cpus(affinity=2, quota=4.0) == (2, "the CPUs in this process's affinity mask")


def test_threads_warning_names_both_numbers():
    assert threads_warning(None, 2, "x") is None and threads_warning(2, 2, "x") is None
    warning = threads_warning(999, 2, "the CPUs in this process's affinity mask")
    assert warning.startswith("runtime.threads 999 is more than the 2 CPU(s) this process may run on")


def test_the_loader_decodes_in_a_worker_only_where_a_core_is_left_beside_the_threads():
    assert loader_workers(None, threads=2, cores=2) == (0, None)
    assert loader_workers(None, threads=1, cores=2) == (1, None)
    assert loader_workers(0, threads=2, cores=2) == (0, None) and loader_workers(1, threads=1, cores=2) == (1, None)
    workers, warning = loader_workers(2, threads=2, cores=2)
    assert workers == 2 and warning.startswith("dataset.workers 2 with 2 compute thread(s) on 2 core(s)")
