"""A small torchvision Faster R-CNN (ResNet-18 FPN, random weights) and a
context manager that swaps visionops' ops into it, as a user replacing
torchvision.ops with visionops does: MultiScaleRoIAlign as the box RoI pool,
batched_nms and box_iou wherever torchvision's detection code calls them
(through the module torchvision.ops.boxes, which rpn.py and roi_heads.py
import as box_ops). Used by the tests of the PyTorch workflows (scripting,
torch.export, ONNX, autocast)."""
import contextlib

import torch
import torchvision
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.backbone_utils import resnet_fpn_backbone

import visionops

IMAGE_SIZE = 160


def make_fasterrcnn(num_classes=5, seed=0, **kwargs):
    """Faster R-CNN with a ResNet-18 FPN backbone, random weights, for
    IMAGE_SIZE images; eval mode. Seeded: two calls give the same model."""
    torch.manual_seed(seed)
    backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=5)
    options = dict(min_size=IMAGE_SIZE, max_size=IMAGE_SIZE, rpn_pre_nms_top_n_test=200,
                   rpn_post_nms_top_n_test=100, box_detections_per_img=50,
                   box_score_thresh=0.0)
    options.update(kwargs)
    model = FasterRCNN(backbone, num_classes=num_classes, **options)
    return model.eval()


def images(n=2, seed=0, size=IMAGE_SIZE):
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(3, size, size, generator=g) for _ in range(n)]


def targets(n=2, seed=0, size=IMAGE_SIZE, boxes_per_image=3, num_classes=5):
    """Training targets: random valid boxes and labels per image."""
    g = torch.Generator().manual_seed(seed + 1000)
    out = []
    for _ in range(n):
        xy = torch.rand(boxes_per_image, 2, generator=g) * size * 0.6
        wh = torch.rand(boxes_per_image, 2, generator=g) * size * 0.3 + 8
        out.append({"boxes": torch.cat([xy, xy + wh], dim=1),
                    "labels": torch.randint(1, num_classes, (boxes_per_image,), generator=g)})
    return out


_BOX_OPS = ("batched_nms", "box_iou")


@contextlib.contextmanager
def visionops_ops(model):
    """Within the block, `model` (a torchvision Faster R-CNN) runs on
    visionops' ops: its box_roi_pool is a visionops.MultiScaleRoIAlign with
    the same settings, and torchvision.ops.boxes' batched_nms and box_iou
    (which the RPN and RoI heads call) are visionops'. Everything is put
    back on exit."""
    boxes_module = torchvision.ops.boxes
    saved = {name: getattr(boxes_module, name) for name in _BOX_OPS}
    old_pool = model.roi_heads.box_roi_pool
    saved_similarity = (model.rpn.box_similarity, model.roi_heads.box_similarity)
    model.roi_heads.box_roi_pool = visionops.MultiScaleRoIAlign(
        old_pool.featmap_names, old_pool.output_size, old_pool.sampling_ratio,
        canonical_scale=old_pool.canonical_scale if hasattr(old_pool, "canonical_scale") else 224,
        canonical_level=old_pool.canonical_level if hasattr(old_pool, "canonical_level") else 4)
    try:
        for name in _BOX_OPS:
            setattr(boxes_module, name, getattr(visionops, name))
        model.rpn.box_similarity = visionops.box_iou
        model.roi_heads.box_similarity = visionops.box_iou
        yield model
    finally:
        for name, fn in saved.items():
            setattr(boxes_module, name, fn)
        model.roi_heads.box_roi_pool = old_pool
        model.rpn.box_similarity, model.roi_heads.box_similarity = saved_similarity


def same_detections(a, b, atol=1e-4):
    """Two models' outputs (lists of dicts of boxes, scores, labels) agree."""
    assert len(a) == len(b)
    for da, db in zip(a, b):
        assert da["labels"].tolist() == db["labels"].tolist()
        torch.testing.assert_close(da["boxes"], db["boxes"], atol=atol, rtol=1e-4)
        torch.testing.assert_close(da["scores"], db["scores"], atol=atol, rtol=1e-4)
