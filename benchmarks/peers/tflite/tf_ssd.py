"""A TF Object Detection API-style SSD built here with TensorFlow's own converter, and its inference as Frigate's
`cpu` detector runs such a file: the author side of the SSD comparison (compare.py runs detbench on the same files
and images). No such trained file can be had here, so the network is made here.

Runs in a venv of its own (TensorFlow; the same as blazeface_fdlite.py's):

    /work/scratch/venvs/tf/bin/pip install opencv-python-headless ai-edge-litert==2.3.0
    /work/scratch/venvs/tf/bin/python benchmarks/peers/tflite/tf_ssd.py --out /work/scratch/tflite/ssd \
        [--data ../shared/data] [--shapes 20]

The network: a small convolutional backbone (seeded random weights, each convolution scaled to a unit output spread
on the images) to feature maps of strides 16 and 32 on a
300x300 input, SSD box and class heads of 3 anchors per cell over 90 COCO classes and a background, the class
scores through a sigmoid, then TFLite_Detection_PostProcess fused by the converter from a tf.function that
declares it (`experimental_implements`, as the TF OD API's export_tflite_graph_lib_tf2 does), with the TF OD API's
box scales (10, 10, 5, 5), anchors of its grid kind, and its options. The class bias is set once so that a few
anchors per image score above Frigate's 0.4. Three files: float32 with the fast NMS (max 10, as Frigate's model),
uint8 input fully quantized on the shapes scenes after the compared ones (Frigate's kind), and float32 with the
regular NMS (class by class, max 20).

The inference (Frigate's CpuTfl.detect_raw, on LiteRT's interpreter as Frigate runs it): the image stretched to
300x300 with OpenCV's linear resize, RGB; a uint8 input takes those pixels, a float input (x / 127.5) - 1 (the TF OD
API's SSD preprocessing); rows read until a score below the cut, boxes ymin, xmin, ymax, xmax clipped to the image
(Frigate clips them to the frame) times its size.
Rows into `expected.json` at 0.4 and at 0.05, classes as COCO category ids (class k + 1).
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import cv2  # noqa: E402
import numpy as np  # noqa: E402

SIZE, CLASSES, PER_CELL = 300, 90, 3
DEFAULT_CUT, LOW_CUT = 0.4, 0.05
SCALES = {"y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0, "w_scale": 5.0}


def compared_images(data: Path, shapes: int) -> list[str]:
    photos = sorted(f"samples/{p.name}" for p in (data / "samples").glob("*.jpg"))
    scenes = sorted(f"shapes/images/{p.name}" for p in (data / "shapes" / "images").glob("*.jpg"))[:shapes]
    return photos + scenes


def anchors(grids: list[int]) -> np.ndarray:
    """(A, 4) y centre, x centre, h, w: per grid cell, 3 anchors (aspect ratios 1, 2, 0.5) of the layer's scale."""
    rows = []
    for layer, cells in enumerate(grids):
        scale = 0.2 + 0.5 * layer
        for y in range(cells):
            for x in range(cells):
                for ratio in (1.0, 2.0, 0.5):
                    rows.append(((y + 0.5) / cells, (x + 0.5) / cells, scale / np.sqrt(ratio),
                                 scale * np.sqrt(ratio)))
    return np.array(rows, dtype=np.float32)


def network(tf):
    """Image (1, 300, 300, 3) in [-1, 1] -> box encodings (1, A, 4), class logits (1, A, 91)."""
    layers = tf.keras.layers
    image = tf.keras.Input((SIZE, SIZE, 3), batch_size=1)
    x, maps = image, []
    for index, width in enumerate((16, 24, 32, 48, 64)):
        x = layers.Conv2D(width, 3, strides=2, padding="same", activation="relu", name=f"backbone_{index}")(x)
        if index >= 3:
            maps.append(x)  # 19x19 (stride 16), 10x10 (stride 32)
    boxes, logits = [], []
    for index, feature in enumerate(maps):
        box = layers.Conv2D(PER_CELL * 4, 3, padding="same", name=f"box_{index}")(feature)
        cls = layers.Conv2D(PER_CELL * (CLASSES + 1), 3, padding="same", name=f"class_{index}")(feature)
        boxes.append(layers.Reshape((-1, 4))(box))
        logits.append(layers.Reshape((-1, CLASSES + 1))(cls))
    return tf.keras.Model(image, [layers.Concatenate(axis=1)(boxes), layers.Concatenate(axis=1)(logits)]), \
        [int(m.shape[1]) for m in maps]


def implements(max_detections: int, regular: bool) -> str:
    """The signature the converter fuses into TFLite_Detection_PostProcess (the TF OD API's own words)."""
    attributes = [f'name: "TFLite_Detection_PostProcess"',
                  f'attr {{ key: "max_detections" value {{ i: {max_detections} }} }}',
                  'attr { key: "max_classes_per_detection" value { i: 1 } }',
                  f'attr {{ key: "use_regular_nms" value {{ b: {str(regular).lower()} }} }}',
                  'attr { key: "nms_score_threshold" value { f: 0.000000 } }',
                  'attr { key: "nms_iou_threshold" value { f: 0.600000 } }',
                  *(f'attr {{ key: "{key}" value {{ f: {value:f} }} }}' for key, value in SCALES.items()),
                  f'attr {{ key: "num_classes" value {{ i: {CLASSES} }} }}']
    if regular:
        attributes.append('attr { key: "detections_per_class" value { i: 10 } }')
    return " ".join(attributes)


def prepared(path: Path, uint8: bool) -> np.ndarray:
    rgb = cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB)
    pixels = cv2.resize(rgb, (SIZE, SIZE), interpolation=cv2.INTER_LINEAR)[None]
    return pixels if uint8 else (pixels.astype(np.float32) / 127.5 - 1.0)


def calibrated(tf, model, images: list[Path]) -> None:
    """Each convolution scaled, in order, to an output spread of 1 on the images (random weights otherwise fade
    to a constant, every anchor scoring alike), the box heads to 0.5 and the class heads to 2; then the class
    heads' biases shifted so that about 5 anchors per image score above 0.4."""
    batch = np.concatenate([prepared(p, False) for p in images[:8]])
    for layer in model.layers:
        if not isinstance(layer, tf.keras.layers.Conv2D):
            continue
        probe = tf.keras.Model(model.input, layer.output)
        kernel, bias = layer.get_weights()
        target = 0.5 if layer.name.startswith("box_") else 2.0 if layer.name.startswith("class_") else 1.0
        layer.set_weights([kernel * target / float(np.std(probe(batch).numpy())), bias])
    logits = np.concatenate([model(prepared(p, False))[1].numpy()[0, :, 1:].max(axis=1) for p in images])
    target = np.log(0.4 / 0.6)
    shift = target - np.quantile(logits, 1 - 5 / (len(logits) / len(images)))
    for layer in model.layers:
        if layer.name.startswith("class_"):
            kernel, bias = layer.get_weights()
            layer.set_weights([kernel, bias + shift])


def constant_forward(tf, model):
    """The network's forward with its weights as constants: a file of resource variables (what Keras 3's variables
    convert to) reads them uninitialised, and freezing them afterwards drops the postprocess function's
    `experimental_implements`."""
    weights = {layer.name: [tf.constant(w) for w in layer.get_weights()] for layer in model.layers
               if isinstance(layer, tf.keras.layers.Conv2D)}

    def conv(x, name: str, stride: int, relu: bool):
        kernel, bias = weights[name]
        y = tf.nn.conv2d(x, kernel, stride, "SAME") + bias
        return tf.nn.relu(y) if relu else y

    def forward(image):
        x, maps = image, []
        for index in range(5):
            x = conv(x, f"backbone_{index}", 2, True)
            if index >= 3:
                maps.append(x)
        boxes = [tf.reshape(conv(m, f"box_{i}", 1, False), (1, -1, 4)) for i, m in enumerate(maps)]
        logits = [tf.reshape(conv(m, f"class_{i}", 1, False), (1, -1, CLASSES + 1)) for i, m in enumerate(maps)]
        return tf.concat(boxes, axis=1), tf.concat(logits, axis=1)

    return forward


def convert(tf, model, anchor_values: np.ndarray, file: Path, max_detections: int, regular: bool,
            representative=None) -> None:
    @tf.function(experimental_implements=implements(max_detections, regular))
    def postprocess(box_encodings, class_predictions, anchors_):
        zero = tf.constant(0.0, dtype=tf.float32)
        return zero, zero, zero, zero  # TFLite_Detection_PostProcess takes its place

    forward = constant_forward(tf, model)

    @tf.function(input_signature=[tf.TensorSpec((1, SIZE, SIZE, 3), tf.float32, name="image")])
    def serve(image):
        boxes, logits = forward(image)
        return postprocess(boxes, tf.sigmoid(logits), tf.constant(anchor_values))

    holder = tf.Module()
    holder.serve = serve
    # Given a trackable object, the converter keeps the function's `experimental_implements` to fuse it.
    converter = tf.lite.TFLiteConverter.from_concrete_functions([serve.get_concrete_function()], holder)
    converter.allow_custom_ops = True
    if representative is not None:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative
        converter.inference_input_type = tf.uint8
    file.write_bytes(converter.convert())


def frigate_rows(file: Path, data: Path, chosen: list[str], cut: float) -> dict:
    from ai_edge_litert.interpreter import Interpreter  # Frigate's runtime (tf.lite.Interpreter crashed here)

    interpreter = Interpreter(model_path=str(file), num_threads=2)
    interpreter.allocate_tensors()
    source = interpreter.get_input_details()[0]
    outputs = interpreter.get_output_details()
    uint8 = source["dtype"] == np.uint8
    found = {}
    for path in chosen:
        height, width = cv2.imread(str(data / path)).shape[:2]
        interpreter.set_tensor(source["index"], prepared(data / path, uint8))
        interpreter.invoke()
        # The operator's outputs are boxes, classes, scores, count; TF2's converter names them
        # StatefulPartitionedCall:0 to :3 and lists them in another order (Frigate reads them by index, as a TF1
        # export orders them).
        by_name = {d["name"].rsplit(":", 1)[-1]: interpreter.get_tensor(d["index"]) for d in outputs}
        boxes, classes, scores, count = by_name["0"][0], by_name["1"][0], by_name["2"][0], int(by_name["3"][0])
        rows = []
        for i in range(count):
            if scores[i] < cut:
                break
            ymin, xmin, ymax, xmax = np.clip(boxes[i], 0.0, 1.0)  # Frigate clips boxes to the frame
            rows.append([int(classes[i]) + 1, round(float(scores[i]), 5), round(float(xmin * width), 2),
                         round(float(ymin * height), 2), round(float(xmax * width), 2),
                         round(float(ymax * height), 2)])
        found[path] = rows
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[4] / "shared" / "data")
    parser.add_argument("--shapes", type=int, default=20)
    args = parser.parse_args()
    out, data = args.out.resolve(), args.data.resolve()
    out.mkdir(parents=True, exist_ok=True)
    import tensorflow as tf

    tf.keras.utils.set_random_seed(0)
    model, grids = network(tf)
    chosen = compared_images(data, args.shapes)
    calibrated(tf, model, [data / p for p in chosen])
    anchor_values = anchors(grids)
    later = sorted((data / "shapes" / "images").glob("*.jpg"))[args.shapes:args.shapes + 100]

    def representative():
        for path in later:
            yield [prepared(path, False)]

    files = {"ssd_fast_float32.tflite": (10, False, None), "ssd_fast_uint8.tflite": (10, False, representative),
             "ssd_regular_float32.tflite": (20, True, None)}
    expected = {}
    for name, (max_detections, regular, calibration) in files.items():
        convert(tf, model, anchor_values, out / name, max_detections, regular, calibration)
        expected[name] = {"file": str(out / name), "class_ids": "coco",
                          "how": "Frigate's CpuTfl.detect_raw on LiteRT's interpreter: stretched to 300x300 "
                                 "(OpenCV linear), RGB; rows until a score below the cut",
                          "default_predictions": {"conf": DEFAULT_CUT,
                                                  "images": frigate_rows(out / name, data, chosen, DEFAULT_CUT)},
                          "low_predictions": {"conf": LOW_CUT,
                                              "images": frigate_rows(out / name, data, chosen, LOW_CUT)}}
        found = sum(len(rows) for rows in expected[name]["default_predictions"]["images"].values())
        print(f"EXPORTED {name}: {found} boxes at {DEFAULT_CUT}", flush=True)
    (out / "expected.json").write_text(json.dumps(expected, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
