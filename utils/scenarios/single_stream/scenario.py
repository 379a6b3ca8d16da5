"""single_stream behind the scenario contract: detbench's own passes over the run's images (passes.py)."""
from __future__ import annotations

from utils.scenarios.contract import FoundImages, Scenario, ScenarioRun, ScenarioSections
from utils.scenarios.single_stream.passes import SingleStreamPasses


class SingleStream(Scenario):
    kernels_batch = True

    def prepare(self, sections: ScenarioSections, images: FoundImages) -> None:
        return None

    def run(self, run: ScenarioRun) -> None:
        SingleStreamPasses(run.plan, run.context, run.pipeline, run.runtime).run()


SCENARIO = SingleStream()
