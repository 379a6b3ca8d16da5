"""The official YOLOv7 test.py on a labelled set: its `test()` as its own `main()` calls it for `--task val`, with
no plots and no tracing (--no-trace).

Standalone: run by the Python of the official code's own venv (benchmarks/peers/yolov7_official/peer_setup.py
makes it with benchmarks/peers/venvs.py), never by detbench's, and imports nothing of detbench:

    <venv>/bin/python run_yolov7_test.py --weights FILE --data DATA_YAML --img-size 320 --batch-size 1
        --conf-thres 0.001 --iou-thres 0.65 --project DIR [--save-json]

test.py prints its own table as it ends; then this program prints one `RESULT <json>` line: test()'s mAP@0.5 and
mAP@0.5:0.95 at full precision and, with --save-json, the predictions json it wrote. benchmarks/peers/
yolov7_official/map_check.py and benchmarks/studies/map_and_int8_goals.py run it.
"""
import argparse
import json
import os
from pathlib import Path

# The checkpoints given here are the project's own (datasets/shapes, shared/data): the official format pickles the
# official Model, which torch's default weights-only load refuses.
os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")


def main(args: argparse.Namespace) -> None:
    import numpy

    if not hasattr(numpy, "trapz"):
        numpy.trapz = numpy.trapezoid  # the official metrics call numpy.trapz, which NumPy 2 renamed
    import python_scripts.test as official

    # test() and its data loader read the options from the module global its main() leaves there: main's defaults.
    official.opt = argparse.Namespace(device="cpu", task="val", single_cls=False, save_txt=False, save_hybrid=False,
                                      save_conf=False, save_json=args.save_json, v5_metric=False,
                                      project=args.project, name="test", exist_ok=True)
    results, _, _ = official.test(args.data, weights=[args.weights], batch_size=args.batch_size, imgsz=args.img_size,
                                  conf_thres=args.conf_thres, iou_thres=args.iou_thres, save_json=args.save_json,
                                  plots=False, trace=False)
    found = sorted((Path(args.project) / "test").glob("*_predictions.json")) if args.save_json else []
    print("RESULT " + json.dumps({"map_50": float(results[2]), "map_50_95": float(results[3]),
                                  "predictions": str(found[0]) if found else None}), flush=True)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weights", required=True, help="a checkpoint in the official format")
    parser.add_argument("--data", required=True, help="test.py's data YAML (val: the images folder, nc, names)")
    parser.add_argument("--img-size", type=int, required=True)
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--conf-thres", type=float, required=True)
    parser.add_argument("--iou-thres", type=float, required=True)
    parser.add_argument("--project", required=True, help="test.py's output folder (it writes into PROJECT/test)")
    parser.add_argument("--save-json", action="store_true", help="also write test.py's predictions json")
    return parser.parse_args()


if __name__ == "__main__":
    main(parse_args())
