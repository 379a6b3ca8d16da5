"""The model compiled once per input shape it meets: OpenVINO's CPU plugin runs a model whose shape is fixed
faster than the same model with dynamic axes (figures: benchmarks/RESULTS.md), and benchmark_app, which fixes the
shape with -shape, runs the former (benchmarks/peers/openvino_benchmark_app.py compares the two forwards).

Each shape costs a compilation (its first inference, inside the warm-up, which covers every input shape before
anything is timed) and a compiled model's memory, so at most STATIC_SHAPES shapes are specialised; further
shapes run on the model with dynamic axes, and how many inferences did is counted.
"""
from __future__ import annotations

import threading
from typing import Callable

import openvino as ov

STATIC_SHAPES = 4


class CompiledByShape:
    """`for_shape(shape)` gives the compiled model to run an input of that shape on."""

    def __init__(self, model: ov.Model, compile_model: Callable[[ov.Model], ov.CompiledModel],
                 limit: int = STATIC_SHAPES):
        self.dynamic = compile_model(model)
        self.limit = limit
        self.dynamic_calls = 0
        self._model = model
        self._compile = compile_model
        self._static: dict[tuple[int, ...], ov.CompiledModel] = {}
        self._refused: set[tuple[int, ...]] = set()
        self._lock = threading.Lock()  # stream threads may meet a new shape at once

    def for_shape(self, shape: tuple[int, ...]) -> ov.CompiledModel:
        compiled = self._static.get(shape)
        if compiled is not None:
            return compiled
        with self._lock:
            if shape not in self._static and shape not in self._refused and len(self._static) < self.limit:
                try:
                    fixed = self._model.clone()
                    fixed.reshape(_fixed_shapes(fixed, shape))
                    self._static[shape] = self._compile(fixed)
                except RuntimeError:  # a model that cannot take this shape fixed still runs it dynamic
                    self._refused.add(shape)
            compiled = self._static.get(shape)
            if compiled is None:
                self.dynamic_calls += 1
                return self.dynamic
        return compiled

    def shapes(self) -> list[list[int]]:
        return [list(shape) for shape in self._static]


def _fixed_shapes(model: ov.Model, shape: tuple[int, ...]) -> dict[int, ov.PartialShape]:
    """The image input fixed to `shape`; each further input (a file's original sizes) to that batch, its other
    axes as declared."""
    shapes = {0: ov.PartialShape(list(shape))}
    for index, port in enumerate(model.inputs[1:], start=1):
        declared = port.get_partial_shape()
        shapes[index] = ov.PartialShape([ov.Dimension(shape[0]) if position == 0 else dim
                                         for position, dim in enumerate(declared)])
    return shapes
