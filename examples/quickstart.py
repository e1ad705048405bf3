"""Python quick start: torchvision.ops-style calls on NumPy and PyTorch."""
import numpy as np
import torch

import visionops

boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30]], dtype=np.float32)
scores = np.array([0.9, 0.8, 0.7], dtype=np.float32)
print("kept:", visionops.nms(boxes, scores, 0.5))  # NumPy in, NumPy out

# PyTorch tensors go through torch.ops.visionops.*: autograd works.
features = torch.rand(1, 4, 16, 16, requires_grad=True)
rois = torch.tensor([[0, 2.0, 2.0, 12.0, 12.0]])  # (image index, x1, y1, x2, y2)
pooled = visionops.roi_align(features, rois, output_size=(2, 2), spatial_scale=1.0,
                             sampling_ratio=2, aligned=True)
pooled.sum().backward()
print("pooled:", tuple(pooled.shape), "grad:", tuple(features.grad.shape))

# Bad input raises a Python exception carrying the library's message.
try:
    visionops.roi_align(features, torch.tensor([[3, 0.0, 0.0, 4.0, 4.0]]), output_size=2)
except ValueError as e:
    print("error:", e)
