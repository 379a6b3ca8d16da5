"""What the dense family states about itself (pipelines/dense/facts.py): its architectures with their builders'
defaults under the shared names, the joined outputs kept in float under int8, SSD300's smallest input, and a forward
timed whole (so every runtime may run it). Each row against torchvision's builder: torchvision_common/test_facts.py."""
from pipelines.dense import facts as dense_facts
from pipelines.settings import ForwardTiming


def test_every_architecture_deploys_at_the_shared_cut_and_evaluates_at_its_builders():
    assert dense_facts.NAME == "dense" and dense_facts.FORWARD_TIMING == ForwardTiming.WHOLE
    assert all(dense_facts.accepts(arch) for arch in dense_facts.ARCHS) and not dense_facts.accepts("yolov7")
    retina = dense_facts.defaults("retinanet_resnet50_fpn")
    assert retina.postprocess == {"conf_thres": 0.5, "iou_thres": 0.5, "max_det": 300, "topk_candidates": 1000}
    assert retina.evaluation.conf_thres == 0.05 and retina.keep_float == ("JoinedOutputs",)
    ssdlite = dense_facts.defaults("ssdlite320_mobilenet_v3_large")
    assert ssdlite.preprocess == {"img_size": 320, "mean": [0.5] * 3, "std": [0.5] * 3, "max_size": 320}
    assert ssdlite.evaluation.conf_thres == 0.001


def test_ssd300_takes_no_input_under_its_smallest_and_a_fixed_square_no_max_size():
    assert dense_facts.smallest_input("ssd300_vgg16") == 268 and dense_facts.smallest_input("fcos_resnet50_fpn") == 32
    assert dense_facts.BUILDERS["ssd300_vgg16"].fixed_size and not dense_facts.BUILDERS["fcos_resnet50_fpn"].fixed_size
    assert set(dense_facts.Postprocess.model_fields) == {"topk_candidates"}
