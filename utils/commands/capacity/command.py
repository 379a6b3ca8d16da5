"""`python benchmark.py capacity --config C [--budget-ms MS] [--max-drop SHARE] [--minutes N] [--source PATH|URL]
[--fps F] [--images DIR] [--set K=V] [--sweep K=V1,V2]`: how many cameras of one source, at its frame rate, this
CPU serves within a p99 latency budget with at most a share of frames dropped, and which way of computing
(runtime, precision, threads, batch) serves the most. `--resume DIR` continues a stopped search."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from utils.commands.prepared_run import prepare_then_run
from utils.core.errors import UsageError


def parse_args(argv: list[str]) -> argparse.Namespace:
    from utils.commands.capacity import plan

    parser = argparse.ArgumentParser(prog="benchmark.py capacity", description=__doc__)
    parser.add_argument("--config", help="YAML run configuration (see configs/); not with --resume")
    parser.add_argument("--budget-ms", type=float, default=plan.DEFAULT_BUDGET_MS,
                        help="the p99 of the latency from a frame's arrival to its detections, in ms "
                             f"(default {plan.DEFAULT_BUDGET_MS:g})")
    parser.add_argument("--max-drop", type=float, default=plan.DEFAULT_MAX_DROP,
                        help=f"the share of frames a busy detector may drop (default {plan.DEFAULT_MAX_DROP:g})")
    parser.add_argument("--minutes", type=float,
                        help=f"the time it may take (default {plan.DEFAULT_MINUTES:g}; with --resume, more on top)")
    parser.add_argument("--source", help="the cameras' video file, folder of videos or stream URL (default: "
                                         "dataset.path, or the config's one cameras.sources entry)")
    parser.add_argument("--fps", type=float, help="each camera's frames per second to the detector (default: "
                                                  "every frame of the source, at its own rate)")
    parser.add_argument("--images", help="a folder of images each way's accuracy is judged on (default: "
                                         "dataset.path when it holds images)")
    parser.add_argument("--point-s", type=float, default=plan.DEFAULT_POINT_S,
                        help=f"each point's measured window, in seconds (default {plan.DEFAULT_POINT_S:g}; a point "
                             "that is not steady runs again twice as long)")
    parser.add_argument("--warmup-s", type=float, default=plan.DEFAULT_WARMUP_S,
                        help=f"the cameras' run before each window, in seconds (default {plan.DEFAULT_WARMUP_S:g})")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="a config key for every run; a key of the space (runtime.backend, runtime.precision, "
                             "dataset.batch_size, runtime.threads) is fixed to it")
    parser.add_argument("--sweep", dest="sweeps", action="append", default=[], metavar="KEY=V1,V2,...",
                        help="the values of one axis of the space (narrowing it), or another key to race over")
    parser.add_argument("--resume", metavar="DIR", help="continue the stopped search in this capacity directory")
    return parser.parse_args(argv)


def _request(args: argparse.Namespace):
    from utils.commands.capacity.files import CAPACITY_JSON
    from utils.commands.capacity.plan import DEFAULT_MINUTES, CapacityRequest

    if args.resume:
        state = Path(args.resume) / CAPACITY_JSON
        if args.config or args.overrides or args.sweeps:
            raise UsageError("--resume continues a search as it was started; drop --config, --set and --sweep")
        if not state.is_file():
            raise UsageError(f"--resume {args.resume}: no {CAPACITY_JSON} there; give the directory a capacity run "
                             "printed")
        data = json.loads(state.read_text())["state"]
        request = CapacityRequest.from_document(data["request"])
        spent = data["spent_s"] / 60.0
        request.minutes = spent + args.minutes if args.minutes else max(request.minutes, spent + 1.0)
        return request
    if not args.config:
        raise UsageError("capacity needs --config FILE (or --resume DIR to continue a stopped search)")
    return CapacityRequest(args.config, args.overrides, args.sweeps, args.budget_ms, args.max_drop,
                           args.minutes or DEFAULT_MINUTES, args.source, args.fps, args.images, args.point_s,
                           args.warmup_s)


def capacity_main(argv: list[str]) -> int:
    def runner():
        args = parse_args(argv)
        from utils.commands.capacity.driver import Capacity

        return Capacity(_request(args), resume=Path(args.resume) if args.resume else None)

    return prepare_then_run(runner, "interrupted before the search started; nothing was run")
