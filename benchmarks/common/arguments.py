"""Command-line options that mean the same in every in-process overhead measurement."""
from __future__ import annotations

import argparse


def model_arguments(parser: argparse.ArgumentParser, arch: str, img_size: int, rounds: int) -> None:
    """--arch, --img-size and --batch: the model measured and its input; --rounds: the interleaved rounds."""
    parser.add_argument("--arch", default=arch)
    parser.add_argument("--img-size", type=int, default=img_size)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=rounds)
