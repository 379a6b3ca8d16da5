"""YOLOv7 / YOLOv7-tiny networks: building, fusing and safe weight loading."""
from models.checkpoint import CheckpointError, WeightsInfo, load_weights
from models.fuse import fuse_model, is_fused
from models.yolo import Detect, Model, ModelDefinitionError, build_model

__all__ = ["CheckpointError", "Detect", "Model", "ModelDefinitionError", "WeightsInfo", "build_model",
           "fuse_model", "is_fused", "load_weights"]
