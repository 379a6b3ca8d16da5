"""single_stream behind the scenario contract: detbench's own passes over the run's images (passes.py)."""
from __future__ import annotations

from utils.record.built_run import RunSections
from utils.scenarios.contract import FoundImages, Scenario, ScenarioRun
from utils.scenarios.single_stream.passes import SingleStreamPasses


class SingleStream(Scenario):
    kernels_batch = True

    def prepare(self, sections: RunSections, images: FoundImages) -> None:
        return None

    def run(self, run: ScenarioRun) -> None:
        SingleStreamPasses(run.plan, run.context, run.built.pipeline, run.built.runtime).run()


SCENARIO = SingleStream()
