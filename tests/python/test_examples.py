"""The README's Python quick start: shown verbatim, and it runs as it says."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "quickstart.py")


def test_readme_shows_quickstart_verbatim():
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    with open(EXAMPLE) as f:
        example = f.read()
    assert "```python\n" + example + "```" in readme


def test_quickstart_runs():
    pytest.importorskip("torch")
    out = subprocess.run([sys.executable, EXAMPLE], check=True, capture_output=True, text=True,
                         env=dict(os.environ)).stdout
    assert "kept: [0 2]" in out
    assert "pooled: (1, 4, 2, 2) grad: (1, 4, 16, 16)" in out
    assert "error: roi_align: rois[0, 0] = 3 is not a batch index of input with N = 1" in out
