"""detbench: where every millisecond, joule and megabyte of a CPU detection pipeline goes.

    python benchmark.py --config configs/samples.yaml [--set dotted.key=value ...]
"""
from __future__ import annotations

import argparse
import os
import sys

# Set before torch loads: hides the CUDA build's harmless profiler ERROR line.
os.environ.setdefault("KINETO_LOG_LEVEL", "5")

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help="YAML run configuration (see configs/)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config key, value parsed as YAML; repeatable "
                             "(e.g. --set dataset.batch_size=4 --set model.arch=yolov7-tiny)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from utils.config import ConfigError, load_config

    try:
        config = load_config(args.config, args.overrides)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE

    from datasets.image_folder import DatasetError
    from models import CheckpointError, ModelDefinitionError
    from utils.console_report import format_summary
    from utils.harness import Benchmark
    from utils.run_directory import RunDirectoryExists

    benchmark = Benchmark(config)
    try:
        benchmark.prepare()
    except (DatasetError, CheckpointError, ModelDefinitionError, RunDirectoryExists) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted before the run started; nothing was written", file=sys.stderr)
        return EXIT_INTERRUPTED
    summary = benchmark.execute()
    print(format_summary(summary, benchmark.run_dir.path))
    return EXIT_INTERRUPTED if summary["status"] == "interrupted" else 0


if __name__ == "__main__":
    sys.exit(main())
