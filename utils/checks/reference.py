"""The fp32 reference that the accuracy pass and the agreement check compare the run's runtime with: a second
copy of the network on the family's reference runtime (torch eager; for a file, the runtime that reads it as
exported), loaded once when a check first needs it."""
from __future__ import annotations

from typing import Any

from pipelines.contract import DetectionPipeline, DetectorFamily, LoadedNetwork
from pipelines.runtimes.base import PreparedForward
from pipelines.runtimes.concurrency import TORCH_OWN_THREADS, torch_threads
from pipelines.runtimes.registry import REFERENCE, REFERENCE_PRECISION, build_runtime
from utils.config.schema import PostprocessSection
from utils.record.built_run import RunSections

REFERENCE_NAME = "torch fp32 eager"


class Reference:
    def __init__(self, family: DetectorFamily, sections: RunSections):
        """`sections`: the run's model (loaded again, as the run loaded it), preprocess and threads."""
        self.family, self.sections = family, sections
        self._built: tuple[PreparedForward, LoadedNetwork] | None = None

    def pipeline(self, postprocess: PostprocessSection, evaluation: bool = False) -> DetectionPipeline:
        """The reference pipeline with these postprocess settings (one network for all of them); `evaluation`:
        preprocessing as the family's official mAP evaluation (family.build_pipeline)."""
        model, preprocess = self.sections.model, self.sections.preprocess
        if self._built is None:
            network = self.family.load_network(model.network, model.weights, self.sections.seed, model)
            runtime = build_runtime(self.backend, precision=REFERENCE_PRECISION, fuse=model.fuse)
            forward = runtime.prepare(network, self.family.example_input(preprocess))
            threads = self.sections.runtime.threads or TORCH_OWN_THREADS
            self._built = (with_the_runs_threads(forward, threads), network)
        forward, network = self._built
        return self.family.build_pipeline(network, forward, preprocess, postprocess, evaluation)

    @property
    def backend(self) -> str:
        return self.family.reference_backend(self.sections.model.network)

    @property
    def name(self) -> str:
        """Its name in summary.json's agreement section (built by then)."""
        if self.backend != REFERENCE.name:
            return f"{self.backend} {REFERENCE_PRECISION} (the file as exported)"
        fused = self.sections.model.fuse and self._built is not None and self._built[1].fuse is not None
        return REFERENCE_NAME + (" (fused)" if fused else "")


def with_the_runs_threads(forward: PreparedForward, threads: int) -> PreparedForward:
    """A torch reference's forward on the run's threads: a run on another runtime keeps torch's ops to one thread
    (pipelines.runtimes.concurrency.share_torch_threads), which would slow its untimed reference passes. A file's
    reference (no torch module) runs on its runtime's own pool and is returned as it is."""
    if forward.module is None:
        return forward

    def run(batch: Any, *extra: Any) -> Any:
        with torch_threads(threads):
            return forward.run(batch, *extra)

    return PreparedForward(run, forward.module, forward.input_dtype)
