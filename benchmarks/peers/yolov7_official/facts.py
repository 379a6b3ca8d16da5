"""What the official YOLOv7 benchmarks agree on: the peer's wheel, what its environment holds, its config files and
the thresholds both sides run at (the drivers in benchmarks/peers/drivers/ are given them as arguments)."""
PEER_DISTRIBUTION = "yolov7-wky-package"
PEER_VERSION = "2024.9.23.1"
PEER_REQUIREMENT = f"{PEER_DISTRIBUTION}=={PEER_VERSION}"
PEER_WHEEL = "yolov7_wky_package-2024.9.23.1-py3-none-any.whl"
PEER_WHEEL_SHA256 = "db748095ecefcce39a4ca380115b8e497a98f30e51a7ebe709cd7e5f6083d110"
PEER_LICENSE = "GPL-3.0"
# The wheel goes into its venv without its declared requirements (tensorflow-probability, onnxsim, protobuf<4.21.3,
# opencv-python ...: for exports this benchmark never runs); then what its detect and test steps import.
PEER_IMPORTS = ("scipy", "seaborn", "matplotlib", "pandas", "pillow", "pyyaml", "tqdm", "requests")
# Installed at detbench's own versions, so both sides decode, resize and convert images with the same code.
PEER_SAME_AS_DETBENCH = ("numpy", "opencv-python-headless")
PEER_CFG = {"yolov7": "cfg/deploy/yolov7.yaml", "yolov7-tiny": "cfg/deploy/yolov7-tiny.yaml"}
CONF_THRES = 0.25
IOU_THRES = 0.45
