"""`python benchmark.py match --config C --against DETECTIONS [--set K=V ...] [--tries N]`: which recipe
reproduces your own application's detections of a detector given as a file (model.file)? DETECTIONS holds them
for some of dataset.path's images, as COCO's results JSON or a CSV with detections.csv's columns. The recipes the
file's layout allows are tried in an order that finds the common ones first (candidates.py), the network run
once per preprocessing, each scored by recall and precision against yours; the one that reproduces them (or the
closest) is printed as --set flags and as a config fragment. Nothing is written."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from utils.core.errors import DetbenchError, ExitStatus, UsageError
from utils.core.interruption import signal_of, stop_signals_interrupt

DEFAULT_TRIES = 60


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="benchmark.py match", description=__doc__)
    parser.add_argument("--config", required=True, help="YAML run configuration with model.file (e.g. "
                                                        "configs/files.yaml)")
    parser.add_argument("--against", required=True, metavar="DETECTIONS",
                        help="your application's detections on some of dataset.path's images: COCO's results JSON "
                             "or a CSV with detections.csv's columns")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config key, as for a run (e.g. --set model.file=model.onnx)")
    parser.add_argument("--tries", type=int, default=DEFAULT_TRIES, metavar="N",
                        help=f"at most N preprocessings tried, each with every postprocessing (default "
                             f"{DEFAULT_TRIES}); the search stops early at one that reproduces yours exactly")
    return parser.parse_args(argv)


def match_main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        with stop_signals_interrupt():
            if args.tries < 1:
                raise UsageError(f"--tries {args.tries}: give at least 1")
            report = _match(args)
    except DetbenchError as error:
        print(f"error: match: {error}", file=sys.stderr)
        return error.status
    except KeyboardInterrupt as stop:
        print("match: interrupted; nothing was written", file=sys.stderr)
        return ExitStatus.stopped_by(signal_of(stop))
    print(report)
    return ExitStatus.OK


def _match(args: argparse.Namespace) -> str:
    from datasets.dataset_root import check_dataset_root
    from datasets.image_folder import decode_image, find_images
    from pipelines.exported.layouts.contract import COCO_IDS
    from pipelines.registry import family_for
    from pipelines.runtimes.registry import build_runtime
    from utils.commands.match.search import search
    from utils.commands.match.theirs import MatchInputError, read_theirs
    from utils.commands.match.trial import Trials
    from utils.config.schema import load_config
    from utils.core.progress import terminal_bar

    config = load_config(args.config, args.overrides)
    root = check_dataset_root(config.dataset.path)
    if config.model.file is None:
        raise UsageError(f"match tries the recipes of a detector given as a file, and {config.model.named} is "
                         "built by detbench; set model.file to the exported file your application runs")
    if config.dataset.batch_size != 1:
        raise UsageError(f"dataset.batch_size {config.dataset.batch_size}: match feeds one image at a time; set "
                         "dataset.batch_size 1 (a file that takes a fixed batch of more is exported again with 1)")
    family = family_for(config.model.network)
    network = family.load_network(config.model.network, None, config.run.seed, config.model)
    coco = COCO_IDS if len(network.class_names) == len(COCO_IDS) else None
    theirs = read_theirs(Path(args.against), find_images(root), root, len(network.class_names), coco)
    images = []
    for path in theirs.images:
        loaded = decode_image(path, config.dataset.max_pixels)
        if loaded.image is None:
            raise MatchInputError(f"--against {theirs.file} names {path}, which cannot be used: {loaded.error}")
        images.append((path, loaded.image))
    runtime = build_runtime(config.runtime.backend, precision="fp32", threads=config.runtime.threads)
    forward = runtime.prepare(network, family.example_input(config.preprocess))
    bar = terminal_bar(args.tries * len(images), "match: recipes tried", file=sys.stderr)
    try:
        trials = Trials(family, network, forward, config.preprocess, config.postprocess, images, theirs, bar.update)
        return search(trials, args.tries, root)
    finally:
        bar.close()
        runtime.close()
