"""What every author's export driver shares (drivers/export_*.py, run by benchmarks/peers/author_exports.py): the
job's arguments, the class head's calibration, the file's facts, and expected.json and FACTS.md beside an export.

Standalone: it runs under an author's own Python (that author's venv, benchmarks/peers/venvs.py), where neither
detbench nor its dependencies are installed. Standard library at import; torch and onnx only inside the functions
that need them (every author's venv has both). A driver runs as `<venv>/bin/python drivers/export_<model>.py
ARGS_JSON` (ARGS_JSON: {"out", "data", "images", "low_cut"}), imports this module from its own folder, and prints
one `EXPORTED <json>` line per file it wrote.
"""
from __future__ import annotations

import json
import math
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

PER_IMAGE = 12  # the spread aims at about this many boxes per image at the author's default cut

Predict = Callable[[float], dict]  # cut -> {image: rows}, the author's own predict


def logit(p: float) -> float:
    return math.log(p / (1 - p))


class Biases:  # one shift for the class convolutions of every stride
    def __init__(self, convs):
        self.convs = convs

    def add_(self, value):
        for conv in self.convs:
            conv.bias.add_(value)


@dataclass(frozen=True)
class Export:
    """One exported file and what FACTS.md says of it. `sets`: the detbench keys a user must give for this file
    because the file does not say them (`model.head=...`)."""

    layout: str
    file: Path
    model: str
    default_cut: float
    how: str
    recipe: str
    versions: str
    sets: Sequence[str] = ()


class ExportJob:
    """The driver's arguments (sys.argv[1], JSON): the folder the exports go to, the data folder, the images
    (paths relative to it) and the lower cut."""

    def __init__(self, argv: Sequence[str] = sys.argv):
        arguments = json.loads(argv[1])
        self.out, self.data = Path(arguments["out"]), Path(arguments["data"])
        self.images, self.low_cut = arguments["images"], arguments["low_cut"]

    def bias_shift(self, scores: Sequence[float], cut: float, per_image: int = PER_IMAGE) -> float:
        """The logit shift that leaves about per_image * images scores (sigmoid, pooled over images) above cut,
        halfway between two neighbours so that no score lands on the cut."""
        ranked = sorted(scores, reverse=True)
        k = min(per_image * len(self.images), len(ranked) - 1)
        middle = (logit(min(max(ranked[k - 1], 1e-7), 1 - 1e-7)) + logit(min(max(ranked[k], 1e-7), 1 - 1e-7))) / 2
        return logit(cut) - middle

    def calibrate(self, scores_of: Callable[[], Sequence[float]], bias, cut: float, rounds: int = 3) -> None:
        """Shifts the class head's bias until about PER_IMAGE scores per image pass cut; scores_of() -> every
        candidate's score over the images. Repeated: scores that round to 1.0 hide their logit the first time."""
        for _ in range(rounds):
            bias.add_(self.bias_shift(scores_of(), cut))

    def save(self, export: Export, predict: Predict) -> None:
        """Writes expected.json and FACTS.md beside the file (moved into out/layout/) and announces it."""
        folder = self.out / export.layout
        folder.mkdir(parents=True, exist_ok=True)
        file = Path(export.file)
        if file.parent.resolve() != folder.resolve():
            target = folder / file.name
            if target.exists():
                target.unlink() if target.is_file() else shutil.rmtree(target)
            shutil.move(str(file), target)
            data = Path(str(file) + ".data")
            if data.exists():
                shutil.move(str(data), folder / data.name)
            file = target
        predictions = {}
        for key, cut in (("default_predictions", export.default_cut), ("low_predictions", self.low_cut)):
            found = predict(cut)
            predictions[key] = {"how": export.how, "conf": cut, "images": found,
                                "count": sum(len(r) for r in found.values()),
                                "per_image": [len(found.get(i, [])) for i in self.images]}
        expected = {"model": export.model, "file": file.name, "paths": "relative to shared/data/",
                    "row": "[class_id, score, x1, y1, x2, y2] in the original image's pixels",
                    "versions": export.versions, **predictions}
        (folder / "expected.json").write_text(json.dumps(expected, indent=1))
        (folder / "FACTS.md").write_text(facts_page(export, file, predictions))
        print("EXPORTED " + json.dumps({"layout": export.layout, "file": str(file),
                                        "expected": str(folder / "expected.json"), "facts": str(folder / "FACTS.md"),
                                        "sets": list(export.sets)}), flush=True)


def facts_page(export: Export, file: Path, predictions: dict) -> str:
    """FACTS.md: the file as read back, the author's predict, and what expected.json holds."""
    facts = onnx_facts(file) if file.suffix == ".onnx" else {}
    lines = [f"# {export.layout}: {export.model}", "", f"Exported file: `{file}`", f"Versions: {export.versions}", ""]
    if facts:
        lines += ["## The file", f"- producer {facts['producer']}; opsets {facts['opset']}"]
        lines += [f"- input `{t['name']}` {t['shape']} {t['dtype']}" for t in facts["inputs"]]
        lines += [f"- output `{t['name']}` {t['shape']} {t['dtype']}" for t in facts["outputs"]]
        lines += [f"- metadata_props: {json.dumps(facts['metadata']) if facts['metadata'] else 'none'}"]
        lines += [f"- operators: {', '.join(facts['operators'])}", ""]
    lines += ["## The author's predict", export.recipe.strip(), "",
              "## expected.json", f"- how: {export.how}",
              *(f"- {key}: conf {p['conf']}, {p['count']} boxes, per image {p['per_image']}"
                for key, p in predictions.items()), ""]
    return "\n".join(lines)


def onnx_facts(path: Path) -> dict:
    import onnx

    model = onnx.load(str(path), load_external_data=False)

    def tensor(value):
        kind = value.type.tensor_type
        return {"name": value.name, "shape": [d.dim_param or d.dim_value for d in kind.shape.dim],
                "dtype": onnx.TensorProto.DataType.Name(kind.elem_type).lower()}

    weights = {i.name for i in model.graph.initializer}
    return {"inputs": [tensor(v) for v in model.graph.input if v.name not in weights],
            "outputs": [tensor(v) for v in model.graph.output],
            "metadata": {p.key: p.value for p in model.metadata_props},
            "opset": {o.domain or "ai.onnx": o.version for o in model.opset_import},
            "operators": sorted({n.op_type for n in model.graph.node}),
            "producer": f"{model.producer_name} {model.producer_version}"}


def rows_of(boxes, scores, labels) -> list[list]:
    """[class, score, x1, y1, x2, y2] rows, rounded as in shared/data/ultra/expected.json."""
    return [[int(c), round(float(s), 5), *(round(float(v), 2) for v in b)] for b, s, c in zip(boxes, scores, labels)]


def batchnorm_from_images(model, batches: Iterable) -> None:
    """At initialisation a head's features come out near zero, so every anchor would score its prior bias alone.
    Batch-norm statistics taken from the images (every BatchNorm2d in train mode, a cumulative average, the rest of
    the model in eval) give features of unit scale, so the scores follow the image. `batches`: the model's input
    for each image, in turn."""
    import torch

    norms = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None
        norm.train()
    with torch.no_grad():
        for batch in batches:
            model(batch)
    for norm in norms:
        norm.eval()
