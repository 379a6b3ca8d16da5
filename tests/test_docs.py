"""The README's Python example runs as printed, from the checkout."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_layer_timing_notebook_example_runs(monkeypatch, capsys):
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    example = next(block for block in blocks if "ModelTiming" in block)
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    exec(compile(example, "README.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "Pipeline" in out and "Model/unattributed" in out and "self_ms" in out
    assert len(namespace["detections"]) == 1
    for module in namespace["pipeline"].layer_timing_targets().model.modules():
        assert not module._forward_hooks and not module._forward_pre_hooks
