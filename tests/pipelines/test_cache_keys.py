"""pipelines.cache_keys: digests that key a network's export caches (a file's sha256, weights made in the process,
named parts) and where the caches live by default.

Tested against hashlib on known bytes, and by changing one name, value or order at a time: each must change
the digest, so that a cache is never reused for other weights."""
import hashlib
from pathlib import Path

import torch

from pipelines.cache_keys import default_cache_dir, file_digest, file_sha256, parts_digest, state_digest


def test_file_digests_are_the_files_sha256(tmp_path):
    path = tmp_path / "weights.pt"
    path.write_bytes(b"abc" * 1_000_000)  # over one read block
    whole = hashlib.sha256(b"abc" * 1_000_000).hexdigest()
    assert file_sha256(path) == whole
    assert file_digest(str(path)) == whole[:16]


def test_state_digest_changes_with_any_name_value_or_order():
    state = {"conv.weight": torch.ones(2, 2), "conv.bias": torch.zeros(2)}
    digest = state_digest(state)
    assert len(digest) == 16 and digest == state_digest({k: v.clone() for k, v in state.items()})
    assert digest != state_digest({"conv.w": torch.ones(2, 2), "conv.bias": torch.zeros(2)})
    assert digest != state_digest({"conv.weight": torch.ones(2, 2), "conv.bias": torch.tensor([0.0, 1e-7])})
    assert digest != state_digest(dict(reversed(list(state.items()))))


def test_state_digest_reads_a_transposed_tensor_by_its_values():
    weight = torch.arange(6.0).reshape(2, 3)
    assert state_digest({"w": weight.t()}) == state_digest({"w": weight.t().contiguous()})


def test_parts_digest_keys_names_and_values():
    parts = {"export": "abc", "precision": "int8"}
    assert parts_digest(parts) == hashlib.sha256(b"export=abc;precision=int8").hexdigest()[:20]
    assert parts_digest(parts) != parts_digest({"export": "abc", "precision": "fp32"})


def test_default_cache_dir_follows_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "detbench"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    assert default_cache_dir() == Path.home() / ".cache" / "detbench"
