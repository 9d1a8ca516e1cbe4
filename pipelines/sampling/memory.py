"""How much memory sampling a size takes, and the largest size that fits, before sampling starts.

    needed = sampling_bytes(pipe.transformer, batch=8, shape=(256, 256), guidance=True)
    check_sampling_memory(pipe.transformer, 8, (256, 256), True, device)   # ValueError if it cannot fit

The estimate is of one denoising step, the peak of sampling: the model's weights, the sampler's
latents, and the activations of one block for every token. Attention runs through
`scaled_dot_product_attention`, whose fused kernels (flash / memory-efficient, on CPU and GPU)
never hold the tokens x tokens logits, so the activations grow linearly with the token count;
the RoPE tables are built in float64. It is an estimate meant to catch a size that cannot
fit (an out-of-memory crash, or a machine driven into swap) with a message, not a measurement.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import torch

# activations of one block per token, in multiples of the width: q, k, v, their rotated
# copies, the attention output, adaLN's modulated copies, residuals and the allocator's slack
# (32 widths), and the MLP's hidden layer before and after its activation (2 MLP widths):
# chosen above the peaks of the bundled models sampled on a CPU when this was written
_WIDTHS_PER_TOKEN = 32
_MLP_COPIES = 2
# the share of the available memory a sampling run may plan to use
HEADROOM = 0.9


def sampling_bytes(model, batch: int, shape: Sequence[int], guidance: bool, dtype: torch.dtype | None = None) -> int:
    """Estimated peak bytes of sampling `batch` samples of `shape` pixels ((h, w) or (t, h, w)) with `model`.

    guidance: classifier-free guidance runs the model on twice the batch.
    """
    config = model.config
    dtype = dtype or getattr(model, "dtype", torch.float32)
    element = torch.finfo(dtype).bits // 8
    patch = model.patchify.patch
    tokens = math.prod(max(1, s // p) for s, p in zip(shape, patch, strict=True))
    rows = batch * (2 if guidance else 1)
    width, mlp = config.hidden_size, int(config.hidden_size * config.mlp_ratio)
    activations = rows * tokens * (_WIDTHS_PER_TOKEN * width + _MLP_COPIES * mlp) * element
    head_dim = width // config.num_heads
    tables = tokens * (head_dim // 2) * 8 * 6  # float64 angles, cos, sin and their products
    latents = 6 * batch * config.in_channels * math.prod(shape) * 4  # float32 sampler state and its copies
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    return int(activations + tables + latents + weights)


def available_bytes(device: torch.device | str) -> int | None:
    """Free memory where `device` samples: the GPU's free memory, or the system's available RAM (None: unknown)."""
    device = torch.device(device)
    if device.type == "cuda" and torch.cuda.is_available():
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    if device.type != "cpu":
        return None
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def largest_fitting_shape(model, batch: int, shape: Sequence[int], guidance: bool,
                          budget: int) -> tuple[int, ...] | None:
    """The largest (h, w) (frames kept) of the aspect of `shape`, in whole patches, that fits `budget`; None if
    not even one patch does."""
    patch = model.patchify.patch
    spatial = len(shape) - 2
    low, high = 0.0, 1.0
    best = None
    for _ in range(40):  # bisect the scale of height and width
        middle = (low + high) / 2
        candidate = tuple(shape[:spatial]) + tuple(max(p, int(s * middle) // p * p) for s, p in
                                                   zip(shape[spatial:], patch[spatial:], strict=True))
        if sampling_bytes(model, batch, candidate, guidance) <= budget:
            best, low = candidate, middle
        else:
            high = middle
    return best


def check_sampling_memory(model, batch: int, shape: Sequence[int], guidance: bool, device,
                          argument: str = "size") -> None:
    """ValueError, with a size that fits, if sampling `shape` on `device` needs more than the free memory."""
    free = available_bytes(device)
    if free is None:
        return
    needed = sampling_bytes(model, batch, shape, guidance)
    budget = int(free * HEADROOM)
    if needed <= budget:
        return
    size = "x".join(map(str, shape))
    fitting = largest_fitting_shape(model, batch, shape, guidance, budget)
    if fitting is not None and fitting != tuple(shape):
        advice = (f"the largest {'x'.join(map(str, fitting))} at this aspect fits (--height {fitting[-2]} "
                  f"--width {fitting[-1]}), or sample fewer at once (--num)")
    else:
        advice = "sample fewer at once (--num) or on a device with more memory"
    raise ValueError(f"{argument}: sampling {batch} x {size} needs about {needed / 2**30:.1f} GiB, more than the "
                     f"{free / 2**30:.1f} GiB free on {torch.device(device).type}; {advice}")


__all__ = ["available_bytes", "check_sampling_memory", "largest_fitting_shape", "sampling_bytes"]
