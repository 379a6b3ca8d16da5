"""utils.measure.environment: what a run ran on (env.json): CPU, threads, library versions, the variables that
decide threads and the allocator, the build configuration and the project's git commit, marked dirty when
tracked files changed.

Tested against a temporary git repository (clean, dirty, none) and the process's own settings."""
import os
import subprocess

import pytest
import torch

from utils.measure.environment import ALLOCATOR_VARIABLES, cpu_model, describe_environment, git_commit


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("one")
    git(tmp_path, "add", "a.txt")
    git(tmp_path, "commit", "-q", "-m", "first")
    return tmp_path


def head(repo):
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def test_a_clean_checkout_is_its_commit(repo):
    assert git_commit(repo) == head(repo)


def test_a_changed_tracked_file_marks_the_commit_dirty(repo):
    (repo / "a.txt").write_text("two")
    assert git_commit(repo) == head(repo) + "-dirty"


def test_an_untracked_file_does_not_make_it_dirty(repo):
    (repo / "new.txt").write_text("scratch")
    assert git_commit(repo) == head(repo)


def test_a_folder_outside_git_has_no_commit(tmp_path):
    assert git_commit(tmp_path) is None


def test_cpu_model_names_the_processor():
    model = cpu_model()
    assert isinstance(model, str) and model.strip() == model and model


def test_environment_reads_the_processs_threads_and_variables(repo, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setenv("MALLOC_ARENA_MAX", "2")
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    env = describe_environment(repo)
    assert env["thread_variables"]["OMP_NUM_THREADS"] == "3"
    assert set(env["allocator_variables"]) == set(ALLOCATOR_VARIABLES)
    assert env["allocator_variables"]["MALLOC_ARENA_MAX"] == "2" and env["allocator_variables"]["LD_PRELOAD"] is None
    assert env["torch_threads"] == torch.get_num_threads() and env["torch"] == torch.__version__
    assert env["cpu_affinity"] == sorted(os.sched_getaffinity(0))
    assert env["git_commit"] == head(repo)
