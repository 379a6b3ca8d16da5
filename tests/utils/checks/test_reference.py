"""The fp32 reference of the accuracy pass and the agreement check (utils/checks/reference.py), on a fake family
with a tiny network: built once whatever the postprocess settings, on the family's reference runtime at fp32,
fused as the run's model section says, and the name summary.json gives it."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from pipelines.contract import LoadedNetwork
from pipelines.runtimes.base import PreparedForward
from tests.support.helpers import Net
from utils.checks import reference as reference_module
from utils.checks.reference import REFERENCE_NAME, Reference


class FakeFamily:
    """Loads a tiny network (counting loads), whose fuse (when it has one) is counted; build_pipeline returns
    what it was given."""

    def __init__(self, backend: str = "torch", fusable: bool = True):
        self.backend, self.fusable = backend, fusable
        self.loads, self.fused, self.backends_asked = [], [], []

    def load_network(self, network, weights, seed, model=None):
        self.loads.append((network, weights, seed))
        torch.manual_seed(seed)
        return LoadedNetwork(Net(), ["a", "b"], "random", True, "net:key",
                             fuse=self.fused.append if self.fusable else None)

    def reference_backend(self, network):
        self.backends_asked.append(network)
        return self.backend

    def example_input(self, preprocess):
        return torch.zeros(1, 3, preprocess.img_size, preprocess.img_size)

    def build_pipeline(self, network, forward, preprocess, postprocess, evaluation=False):
        return SimpleNamespace(network=network, forward=forward, preprocess=preprocess, postprocess=postprocess,
                               evaluation=evaluation)


def sections(fuse: bool = True):
    """The run's sections the reference reads (utils.record.built_run.RunSections)."""
    return SimpleNamespace(model=SimpleNamespace(network="tiny", weights="w.pt", fuse=fuse), seed=3,
                           preprocess=SimpleNamespace(img_size=8), runtime=SimpleNamespace(threads=None))


def test_one_network_serves_every_postprocess_setting():
    family = FakeFamily()
    reference = Reference(family, sections())
    deployed = reference.pipeline("deployed")
    scored = reference.pipeline("map settings", evaluation=True)
    assert family.loads == [("tiny", "w.pt", 3)]  # model.network, model.weights, run.seed: loaded once
    assert scored.network is deployed.network and scored.forward is deployed.forward
    assert (deployed.postprocess, deployed.evaluation) == ("deployed", False)
    assert (scored.postprocess, scored.evaluation) == ("map settings", True)
    assert deployed.preprocess.img_size == 8


def test_the_reference_forward_is_the_network_in_torch_eager():
    family = FakeFamily()
    pipeline = Reference(family, sections(fuse=False)).pipeline("deployed")
    batch = torch.rand(1, 3, 8, 8)
    with torch.inference_mode():
        expected = pipeline.network.module(batch)
    assert pipeline.forward.module is pipeline.network.module
    assert torch.equal(pipeline.forward(batch), expected)


def test_the_name_says_fused_only_once_a_fused_network_is_built():
    family = FakeFamily()
    reference = Reference(family, sections(fuse=True))
    assert reference.name == REFERENCE_NAME == "torch fp32 eager"  # not built yet
    reference.pipeline("deployed")
    assert family.fused == [reference.pipeline("deployed").network.module]  # fused once, the loaded module
    assert reference.name == "torch fp32 eager (fused)"
    assert family.backends_asked and set(family.backends_asked) == {"tiny"}


def test_the_name_is_plain_without_fusing():
    unfused = FakeFamily()
    reference = Reference(unfused, sections(fuse=False))
    reference.pipeline("deployed")
    assert reference.name == "torch fp32 eager" and unfused.fused == []
    nothing_to_fuse = Reference(FakeFamily(fusable=False), sections(fuse=True))
    nothing_to_fuse.pipeline("deployed")
    assert nothing_to_fuse.name == "torch fp32 eager"


def test_a_file_is_its_own_reference_at_fp32(monkeypatch):
    asked = []
    prepared = PreparedForward(lambda batch: batch, None)  # another runtime's: no torch module, its own threads

    class Runtime:
        def prepare(self, network, example):
            asked.append(("prepare", network.cache_key, tuple(example.shape)))
            return prepared

    def build_runtime(backend, **settings):
        asked.append((backend, settings))
        return Runtime()

    monkeypatch.setattr(reference_module, "build_runtime", build_runtime)
    reference = Reference(FakeFamily(backend="onnxruntime"), sections(fuse=True))
    assert reference.backend == "onnxruntime"
    assert reference.name == "onnxruntime fp32 (the file as exported)"
    assert reference.pipeline("deployed").forward is prepared
    reference.pipeline("again")
    assert asked == [("onnxruntime", {"precision": "fp32", "fuse": True}), ("prepare", "net:key", (1, 3, 8, 8))]
    assert reference.name == "onnxruntime fp32 (the file as exported)"  # no "(fused)" for a file


def test_a_runtime_that_cannot_build_leaves_nothing_half_built(monkeypatch):
    def build_runtime(backend, **settings):
        raise RuntimeError("no such runtime here")

    monkeypatch.setattr(reference_module, "build_runtime", build_runtime)
    family = FakeFamily()
    reference = Reference(family, sections())
    with pytest.raises(RuntimeError, match="no such runtime here"):
        reference.pipeline("deployed")
    monkeypatch.undo()
    assert reference.pipeline("deployed").network.module is not None  # built on the next call
    assert len(family.loads) == 2
