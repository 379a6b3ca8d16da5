"""Digests that go into a LoadedNetwork's cache key: what determines a network's weights and structure, so a
cache of exported models is never reused for other weights; and where those caches live by default."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the digests need no torch, so light modules can key by file
    import torch


def file_sha256(path: str | Path) -> str:
    """The file's whole sha256, read in blocks."""
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def file_digest(path: str | Path) -> str:
    """A short digest of a file, for cache keys."""
    return file_sha256(path)[:16]


def state_digest(state: dict[str, torch.Tensor]) -> str:
    """Of weights made in the process (random, calibrated): their names and bytes."""
    sha = hashlib.sha256()
    for name, value in state.items():
        sha.update(name.encode())
        sha.update(value.detach().contiguous().numpy().tobytes())
    return sha.hexdigest()[:16]


def parts_digest(parts: dict[str, str]) -> str:
    """Of a key given as named parts (an export key, a calibration digest, quantization settings)."""
    text = ";".join(f"{name}={value}" for name, value in parts.items())
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def default_cache_dir() -> Path:
    """$XDG_CACHE_HOME/detbench, else ~/.cache/detbench."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "detbench"
