"""Runtimes that run a network's forward; every one behind the seam in base.py."""
from pipelines.runtimes.base import LoadedNetwork, PreparedForward, Runtime
from pipelines.runtimes.torch_eager import TorchEager

__all__ = ["LoadedNetwork", "PreparedForward", "Runtime", "TorchEager"]
