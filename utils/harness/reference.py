"""The torch fp32 reference that the accuracy pass and the agreement check compare the run's runtime with: a
second copy of the network, loaded once when a check first needs it."""
from __future__ import annotations

from typing import Any

from pipelines.contract import DetectionPipeline, LoadedNetwork
from pipelines.runtimes.registry import build_reference

REFERENCE_NAME = "torch fp32 eager"


class Reference:
    def __init__(self, family: Any, config: Any):
        self.family, self.config = family, config
        self._built: tuple[Any, LoadedNetwork] | None = None

    def pipeline(self, postprocess: Any, evaluation: bool = False) -> DetectionPipeline:
        """The reference pipeline with these postprocess settings (one network for all of them); `evaluation`:
        preprocessing as the family's official mAP evaluation (family.build_pipeline)."""
        config = self.config
        if self._built is None:
            network = self.family.load_network(config.model.arch, config.model.weights, config.run.seed)
            self._built = (build_reference(fuse=config.model.fuse).prepare(
                network, self.family.example_input(config.preprocess)), network)
        forward, network = self._built
        return self.family.build_pipeline(network, forward, config.preprocess, postprocess, evaluation)

    @property
    def name(self) -> str:
        """Its name in summary.json's agreement section (built by then)."""
        fused = self.config.model.fuse and self._built is not None and self._built[1].fuse is not None
        return REFERENCE_NAME + (" (fused)" if fused else "")
