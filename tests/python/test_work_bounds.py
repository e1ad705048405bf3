"""Arguments that set the amount of work are bounded (issue 11): a call that
would run for hours fails at once with the library's message naming the
argument and the bound, from NumPy and from torch (this ran for ever before)."""
import numpy as np
import pytest

import visionops
from conftest import HAVE_TORCH

X = np.random.default_rng(0).random((1, 8, 8, 8), dtype=np.float32)
R = np.array([[0, 1, 1, 5, 6]], np.float32)
HUGE = np.array([[0, 0, 0, 1e9, 3]], np.float32)


def kinds():
    yield "numpy", lambda a: a
    if HAVE_TORCH:
        import torch
        yield "torch", torch.from_numpy


@pytest.mark.parametrize("kind", [k for k, _ in kinds()])
def test_sampling_ratio_bound(kind):
    conv = dict(kinds())[kind]
    x, r = conv(X.copy()), conv(R.copy())
    for fn in (visionops.roi_align, visionops.ps_roi_align):
        with pytest.raises(ValueError, match=r"sampling_ratio must be at most 128 .*got 1099511627776"):
            fn(x, r, 2, 1.0, 2**40)
        assert fn(x, r, 2, 1.0, 128).shape[0] == 1


@pytest.mark.parametrize("kind", [k for k, _ in kinds()])
def test_adaptive_grid_bound(kind):
    conv = dict(kinds())[kind]
    x, huge = conv(X.copy()), conv(HUGE.copy())
    with pytest.raises(ValueError, match=r"roi_align: rois\[0\] spans .*pass a sampling_ratio in 1\.\.128"):
        visionops.roi_align(x, huge, 2, 1.0, 0)
    # An explicit ratio keeps the same RoI cheap and legal.
    assert visionops.roi_align(x, huge, 2, 1.0, 2).shape == (1, 8, 2, 2)
