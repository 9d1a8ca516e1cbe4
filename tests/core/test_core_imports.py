"""The core imports torch and einops only (Triton where installed): nothing from the model stack."""

import subprocess
import sys

CHECK = """
import sys
import axialrope, axialrope.fused, axialrope.kernels.compiling
import axialrope.kernels.backends, axialrope.kernels.triton_norm_rope
heavy = sorted(name for name in ("diffusers", "transformers", "accelerate", "torchvision") if name in sys.modules)
print(",".join(heavy))
"""


def test_the_core_pulls_in_no_model_or_pipeline_library():
    result = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "", f"axialrope imported {result.stdout.strip()}"
