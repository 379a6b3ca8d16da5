"""py-spy's timed stacks as files (utils/measure/below_layer/sampled_stacks.py): a speedscope document and trace
events on the steps' clock, every frame opened closed innermost first."""
from utils.measure.below_layer.sampled_stacks import complete_events, speedscope_document
from tests.support.pyspy_events import FUTEX, PY, TORCH, nested_events


def test_speedscope_and_trace_events_are_on_the_step_clock():
    events = nested_events(7, [(1500, 1600, PY), (1520, 1560, TORCH)]) + nested_events(9, [(1500, 1550, FUTEX)])
    document = speedscope_document(events, offset_us=500.0, origin_ns=1_000_000 - 1_000_000, main_thread=7,
                                   name="run")
    main = document["profiles"][0]
    assert main["name"].startswith("main thread") and main["unit"] == "microseconds"
    assert (main["startValue"], main["endValue"]) == (1000.0, 1100.0)
    depth = 0
    for event in main["events"]:  # every frame opened is closed, innermost first
        depth += 1 if event["type"] == "O" else -1
        assert depth >= 0
    assert depth == 0
    frames = document["shared"]["frames"]
    assert {frame["name"] for frame in frames} == {PY.name, TORCH.name, FUTEX.name}
    x_events = complete_events(events, 500.0)
    torch_event = next(e for e in x_events if e["name"] == TORCH.name)
    assert (torch_event["ts"], torch_event["dur"]) == (1020.0, 40.0)
