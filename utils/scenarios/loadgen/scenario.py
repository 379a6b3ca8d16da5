"""multi_stream, server and offline behind the scenario contract: one LoadGen test (loadgen_pass.py, test.py) in
place of the timed passes. LoadGen must import, and its schedule must fit in memory and in its integers: both
refused at start, before anything is loaded."""
from __future__ import annotations

from utils.preflight.memory_fit import available_memory
from utils.record.steps import LOAD_STEP, RUN_STEP
from utils.record.built_run import RunSections
from utils.scenarios.contract import FoundImages, Scenario, ScenarioRun
from utils.scenarios.loadgen import bounds
from utils.scenarios.loadgen.loadgen_pass import LoadgenImages, LoadgenPass, LoadgenTest
from utils.scenarios.loadgen.test import ScenarioSettings, scenario_settings


class Loadgen(Scenario):
    counters_around = RUN_STEP  # the streams' batches overlap: the counters bracket the whole test
    timed_fetch_step = LOAD_STEP  # its queries take samples held decoded in memory (video frames too)
    reads_sections = frozenset({"benchmark.loadgen"})

    def prepare(self, sections: RunSections, images: FoundImages) -> ScenarioSettings:
        settings = scenario_settings(sections.benchmark)
        bounds.check_integers(settings)
        bounds.check_plan(settings, bounds.plan(settings, len(images.items), images.image_bytes, None,
                                                sections.benchmark.loadgen.performance_sample_count),
                          *available_memory())
        return settings

    def run(self, run: ScenarioRun) -> None:
        images = run.images
        test = LoadgenTest(run.built, run.settings, LoadgenImages(images.dataset, images.sizes, images.input_shapes,
                                                                  images.image_bytes, images.warmup), run.run_dir)
        LoadgenPass(test, run.context).run(run.plan)


SCENARIO = Loadgen()
