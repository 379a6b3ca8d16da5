"""Runtimes that run a network's forward, each behind the seam in base.py; registry.py picks one by name."""
from pipelines.runtimes.base import LoadedNetwork, PreparedForward, Runtime, RuntimeNotSupported
from pipelines.runtimes.torch_eager import TorchEager

__all__ = ["LoadedNetwork", "PreparedForward", "Runtime", "RuntimeNotSupported", "TorchEager"]
