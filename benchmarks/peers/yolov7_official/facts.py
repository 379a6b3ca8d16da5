"""What both programs of the parity benchmark agree on: the peer's wheel, its config files and the thresholds.

Standard library only, and nothing of detbench: the peer program (peer.py) imports this module beside it while
the official code's own `models` and `utils` packages are on its path.
"""
PEER_DISTRIBUTION = "yolov7-wky-package"
PEER_VERSION = "2024.9.23.1"
PEER_REQUIREMENT = f"{PEER_DISTRIBUTION}=={PEER_VERSION}"
PEER_WHEEL = "yolov7_wky_package-2024.9.23.1-py3-none-any.whl"
PEER_WHEEL_SHA256 = "db748095ecefcce39a4ca380115b8e497a98f30e51a7ebe709cd7e5f6083d110"
PEER_LICENSE = "GPL-3.0"
# (module the official code imports, distribution that provides it) for what detbench's venv may lack.
# requests' own dependencies are listed because the install is --no-deps: a plain --target install would pull
# a second numpy, pandas and matplotlib into the peer's path, ahead of the venv's.
PEER_EXTRA_MODULES = (
    ("scipy", "scipy"), ("seaborn", "seaborn"), ("requests", "requests"), ("urllib3", "urllib3"),
    ("idna", "idna"), ("certifi", "certifi"), ("charset_normalizer", "charset-normalizer"),
)
PEER_CFG = {"yolov7": "cfg/deploy/yolov7.yaml", "yolov7-tiny": "cfg/deploy/yolov7-tiny.yaml"}
CONF_THRES = 0.25
IOU_THRES = 0.45
