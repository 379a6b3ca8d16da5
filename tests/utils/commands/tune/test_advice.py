"""A plain run's last lines (utils/commands/tune/advice.py): what the CPU makes worth trying, from facts, and tune; and a
race's last line: the allocator raced under its winner."""
import pytest

from pipelines.runtimes.registry import SPECS
from tests.support.paths import CONFIGS, ROOT
from utils.commands.tune.advice import advice_lines, allocator_line, goal_arguments, spinning_line
from utils.commands.tune.goals import Goal
from utils.commands.tune.space import Machine

ALL = tuple(SPECS)


def offered(precision):
    return [name for name in ALL if precision in SPECS[name].precisions]


def test_names_the_untried_native_precisions_and_the_command():
    machine = Machine(frozenset({"avx2", "avx512_bf16", "amx_int8"}), 2, ALL)
    lines = advice_lines({"backend": ALL[0], "precision": "fp32"}, machine, "configs/x.yaml",
                         ["runtime.threads=2", "dataset.path=data"])
    assert len(lines) == 2
    if offered("bf16"):
        assert "bf16 on" in lines[0] and "avx512_bf16" in lines[0]
    # Keys tune races are not carried into its command; the others are.
    assert lines[1].endswith("python benchmark.py tune --config configs/x.yaml --set dataset.path=data")


def test_no_bf16_without_its_flags_and_no_int8_without_vnni_or_amx():
    machine = Machine(frozenset({"avx2"}), 2, ALL)
    lines = advice_lines({"backend": ALL[0], "precision": "fp32"}, machine, "c.yaml", [])
    text = " ".join(lines)
    assert "bf16" not in text and "int8" not in text


def test_nothing_to_say_when_one_runtime_ran_its_only_precision():
    machine = Machine(frozenset({"avx2"}), 2, (ALL[0],))
    assert advice_lines({"backend": ALL[0], "precision": "fp32"}, machine, "c.yaml", []) == []


def test_a_runtime_the_config_refuses_is_not_advised():
    machine = Machine(frozenset({"avx2", "avx512_bf16", "amx_int8"}), 2, ALL)
    refused = ALL[1]

    def refuse(overrides):
        return "no such runtime for a file" if f"runtime.backend={refused}" in overrides else None

    lines = advice_lines({"backend": ALL[0], "precision": "fp32"}, machine, "c.yaml", [], refuse)
    assert refused not in lines[0]
    assert any(name in lines[0] for name in ALL[2:])


ULTRA_FILE = ROOT.parent / "shared" / "data" / "ultra" / "yolo11n-shapes.onnx"


@pytest.mark.skipif(not ULTRA_FILE.is_file(), reason=f"{ULTRA_FILE} (a shared exported file) is not here")
def test_a_file_run_is_never_advised_torch(capsys):
    """Through the command line's own refusal: a network given as a file runs on the exported runtimes only."""
    from argparse import Namespace

    from benchmark import print_tune_advice

    file = ULTRA_FILE
    print_tune_advice({"runtime": {"backend": "onnxruntime", "precision": "fp32"}},
                      Namespace(config=str(CONFIGS / "samples_tiny.yaml"),
                                overrides=[f"model.file={file}", "dataset.batch_size=1"]))
    printed = capsys.readouterr().out
    assert "worth trying" in printed and " torch" not in printed.split("tune --config")[0]


WINNER = ("--set benchmark.scenario=single_stream --set runtime.backend=openvino --set runtime.precision=fp32 "
          "--set dataset.batch_size=2 --set runtime.threads=2 --set runtime.pinning=false")


def test_after_a_race_the_allocator_is_raced_under_the_winner_with_the_users_other_settings():
    line = allocator_line("configs/my config.yaml", ["runtime.threads=2", "dataset.limit=6"], [], Goal("latency"),
                          WINNER, None)
    assert line.startswith("not raced: runtime.allocator, which changes no answer")
    command = line.split("to race it under the winner: ")[1]
    # the user's own --set that the winner does not fix stays; the winner's fix the rest; quoted for the shell
    assert command == ("python benchmark.py tune --config 'configs/my config.yaml' --set dataset.limit=6 "
                       + WINNER + " --sweep runtime.allocator=inherit,keep_heap --minutes 5")


def test_the_allocator_race_asks_for_the_same_goal():
    assert goal_arguments(Goal("latency")) == []
    assert goal_arguments(Goal("latency", "p90")) == ["--percentile", "p90"]
    assert goal_arguments(Goal("server", target_ms=25.0)) == ["--goal", "server", "--target-ms", "25"]
    line = allocator_line("c.yaml", [], [], Goal("throughput"), "--set benchmark.scenario=offline", None)
    assert line.endswith("--sweep runtime.allocator=inherit,keep_heap --goal throughput --minutes 5")


@pytest.mark.parametrize("overrides, sweeps, winner, refused", [
    (["runtime.allocator=keep_heap"], [], WINNER, None),  # the user set it
    ([], ["runtime.allocator=inherit,keep_heap"], WINNER, None),  # the race raced it
    ([], [], None, None),  # no winner
    ([], [], WINNER, "runtime.allocator keep_heap sets glibc's malloc, and this Python runs on musl"),
])
def test_no_allocator_race_where_it_was_set_raced_has_no_winner_or_cannot_apply(overrides, sweeps, winner, refused):
    assert allocator_line("c.yaml", overrides, sweeps, Goal("latency"), winner, refused) is None


ORT_WINNER = WINNER.replace("runtime.backend=openvino", "runtime.backend=onnxruntime")


def test_an_onnxruntime_winner_names_its_spinning_and_races_the_other_way():
    line = spinning_line("c.yaml", ["dataset.limit=6"], [], Goal("latency"), ORT_WINNER, "onnxruntime", True)
    assert "runtime.spinning=true, its own default" in line and "spinning when idle" in line
    assert line.split("to race it under the winner: ")[1] == (
        "python benchmark.py tune --config c.yaml --set dataset.limit=6 " + ORT_WINNER
        + " --sweep runtime.spinning=true,false --minutes 5")
    assert "runtime.spinning=false)" in spinning_line("c.yaml", [], [], Goal("latency"), ORT_WINNER, "onnxruntime",
                                                      False)


@pytest.mark.parametrize("overrides, sweeps, winner, backend", [
    (["runtime.spinning=false"], [], ORT_WINNER, "onnxruntime"),  # the user set it
    ([], ["runtime.spinning=true,false"], ORT_WINNER, "onnxruntime"),  # the race raced it
    ([], [], WINNER, "openvino"),  # another runtime won: it has no such key
    ([], [], None, None),  # no winner
])
def test_no_spinning_race_where_it_was_set_raced_or_does_not_apply(overrides, sweeps, winner, backend):
    assert spinning_line("c.yaml", overrides, sweeps, Goal("latency"), winner, backend, True) is None


def test_after_a_camera_run_the_command_is_capacity_with_its_source_and_rate_as_flags():
    machine = Machine(frozenset({"avx2", "avx512_bf16", "amx_int8"}), 2, ALL)
    lines = advice_lines({"backend": ALL[0], "precision": "fp32"}, machine, "configs/cameras.yaml",
                         ["benchmark.scenario=cameras", "cameras.count=4", "cameras.duration_s=3", "runtime.threads=2",
                          "dataset.path=clips/a.mp4", "cameras.fps=5", "model.arch=yolov7-tiny", "run.id=cams"],
                         cameras=True)
    assert len(lines) == 2 and "most cameras served" in lines[1]
    assert lines[1].endswith("python benchmark.py capacity --config configs/cameras.yaml --source clips/a.mp4 "
                             "--fps 5 --set model.arch=yolov7-tiny")


def test_one_camera_source_becomes_capacitys_source_and_run_id_is_never_carried():
    from utils.commands.tune.advice import capacity_command
    assert capacity_command("c.yaml", ['cameras.sources=["rtsp://cam/1"]', "cameras.realtime=false"]) == \
        "python benchmark.py capacity --config c.yaml --source rtsp://cam/1"
    machine = Machine(frozenset({"avx2", "avx512_bf16", "amx_int8"}), 2, ALL)
    lines = advice_lines({"backend": ALL[0], "precision": "fp32"}, machine, "c.yaml", ["run.id=x", "dataset.limit=3"])
    assert lines[1].endswith("tune --config c.yaml --set dataset.limit=3")
