"""What fits in memory, checked before any work: a sampling call, a training step, a schedule, an epoch's order.

    check_sampling_memory(pipe.transformer, 8, (256, 256), True, device, steps=20)  # ValueError: what fits
    check_steps(10**9, "--steps")                           # a scheduler's per-step arrays
    check_shuffle(10**11, 16, "dataset_size")               # an epoch's order of the items
    check_training_memory(model, batch_size, (32, 32), device)  # a training step: the batch that fits

The memory a process may use is the smallest of the system's available RAM, `ulimit -v` less what
the process has mapped, and the cgroup's limit less its usage (a GPU: its free memory); a request
may plan on HEADROOM of it. Each refusal names the flag and the largest value that fits. The
sampling estimate is of one denoising step (weights, latents, one block's activations for every
token: `scaled_dot_product_attention` never holds the tokens x tokens logits). The bounds on what an
input file may hold are in `limits`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

# the share of the available memory a request may plan to use
HEADROOM = 0.9
# activations of one block per token, in multiples of the width: q, k, v, their rotated copies, the
# attention output, adaLN's modulated copies, residuals and the allocator's slack (32 widths), and the
# MLP's hidden layer before and after its activation (2 MLP widths): above the bundled models' peaks
_WIDTHS_PER_TOKEN = 32
_MLP_COPIES = 2
# a scheduler's arrays per inference step (timesteps, sigmas and their copies; diffusers' take 32 to 40)
STEP_BYTES = 64
# an epoch's order: per item (the permutation and its slices), and per batch (a tensor view each)
SHUFFLE_ITEM_BYTES, SHUFFLE_BATCH_BYTES = 24, 800


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def _read_int(path: str) -> int | None:
    try:
        text = Path(path).read_text().split()[0]
    except (OSError, IndexError):
        return None
    return int(text) if text.isdigit() else None


def _process_limits() -> list[int]:
    """What `ulimit -v` and the cgroup still allow this process (bytes), where they are set."""
    limits = []
    try:
        import resource  # POSIX: absent on Windows

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        mapped = _read_int("/proc/self/statm")  # the first field: the process's mapped pages
        if soft != resource.RLIM_INFINITY and mapped is not None:
            limits.append(soft - mapped * os.sysconf("SC_PAGE_SIZE"))
    except (ImportError, ValueError, OSError):
        pass
    for limit_file, usage_file in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
    ):
        limit, usage = _read_int(limit_file), _read_int(usage_file)
        if limit is not None and usage is not None and limit < 1 << 60:  # "max" or a huge number: no limit
            limits.append(limit - usage)
    return limits


def available_bytes(device: torch.device | str = "cpu") -> int | None:
    """Memory a request on `device` may still allocate: a GPU's free memory, or the smallest of the
    available RAM, `ulimit -v` less what is mapped, and the cgroup's room (None: unknown)."""
    device = torch.device(device)
    if device.type == "cuda" and torch.cuda.is_available():
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    if device.type != "cpu":
        return None
    ram = None
    meminfo = Path("/proc/meminfo")
    if meminfo.is_file():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                ram = int(line.split()[1]) * 1024
    if ram is None:
        try:
            ram = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            pass
    known = [n for n in (ram, *_process_limits()) if n is not None]
    return max(0, min(known)) if known else None


def check_fits(needed: int, device, what: str, advice: str = "") -> None:
    """ValueError "`what` needs about N GiB, more than the M GiB free on cpu; `advice`" unless `needed`
    fits HEADROOM of the available memory (an unknown amount passes)."""
    free = available_bytes(device)
    if free is None or needed <= free * HEADROOM:
        return
    raise ValueError(
        f"{what} needs about {_gib(needed)}, more than the {_gib(free)} free on "
        f"{torch.device(device).type}{'; ' + advice if advice else ''}"
    )


def largest_fitting(count: int, cost: Callable[[int], int], budget: int) -> int:
    """The largest n <= count with cost(n) <= budget (cost increasing in n); 0 if not even 1 fits."""
    low, high = 0, count
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if cost(middle) <= budget else (low, middle - 1)
    return low


def _check_count(count: int, cost: Callable[[int], int], device, what: str, flag: str) -> None:
    free = available_bytes(device)
    if free is None or cost(count) <= free * HEADROOM:
        return
    fits = largest_fitting(count, cost, int(free * HEADROOM))
    check_fits(cost(count), device, what, f"at most {flag} {fits} fits" if fits else "not even 1 fits")


def steps_bytes(steps: int) -> int:
    """Bytes of a scheduler's arrays for `steps` inference steps."""
    return steps * STEP_BYTES


def check_steps(steps: int, flag: str = "--steps") -> None:
    """ValueError, with the most steps that fit, if a scheduler's arrays (in RAM) for `steps` do not fit."""
    _check_count(steps, steps_bytes, "cpu", f"{flag} {steps}: the sampler's schedule", flag)


def shuffle_bytes(num_items: int, batch_size: int) -> int:
    """Bytes of an epoch's order of `num_items` items cut into batches (`buckets.BucketBatchSampler`)."""
    return num_items * SHUFFLE_ITEM_BYTES + num_items // max(1, batch_size) * SHUFFLE_BATCH_BYTES


def check_shuffle(num_items: int, batch_size: int, flag: str = "dataset_size") -> None:
    """ValueError, with the most items that fit, if an epoch's order of `num_items` does not fit in memory."""
    _check_count(
        num_items,
        lambda n: shuffle_bytes(n, batch_size),
        "cpu",
        f"{flag} {num_items}: an epoch's order of the items",
        flag,
    )


def sampling_bytes(
    model, batch: int, shape: Sequence[int], guidance: bool, dtype: torch.dtype | None = None, steps: int = 0
) -> int:
    """Estimated peak bytes of sampling `batch` samples of `shape` pixels ((h, w) or (t, h, w)) with `model`
    in `steps` steps. guidance: classifier-free guidance runs the model on twice the batch."""
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
    return int(activations + tables + latents + weights + steps_bytes(steps))


def training_bytes(model, batch: int, shape: Sequence[int]) -> int:
    """Estimated peak bytes of one training step of `batch` samples of `shape` pixels: every block's
    activations kept for the backward pass, the weights with their gradients, Adam's two moments and the
    EMA, and the batch with its noise and target."""
    config = model.config
    patch = model.patchify.patch
    tokens = math.prod(max(1, s // p) for s, p in zip(shape, patch, strict=True))
    width, mlp = config.hidden_size, int(config.hidden_size * config.mlp_ratio)
    activations = batch * tokens * (_WIDTHS_PER_TOKEN * width + _MLP_COPIES * mlp) * 4 * config.depth
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    data = 3 * batch * config.in_channels * math.prod(shape) * 4
    return int(activations + 5 * weights + data)


def check_training_memory(model, batch: int, shape: Sequence[int], device) -> None:
    """ValueError, with the largest batch that fits, if a training step of `batch` x `shape` does not fit."""
    size = "x".join(map(str, shape))
    _check_count(
        batch,
        lambda n: training_bytes(model, n, shape),
        device,
        f"batch_size {batch} at {size}: a training step",
        "--batch-size",
    )


def largest_fitting_shape(
    model, batch: int, shape: Sequence[int], guidance: bool, budget: int, steps: int = 0
) -> tuple[int, ...] | None:
    """The largest (h, w) (frames kept) of the aspect of `shape`, in whole patches, that fits `budget`;
    None if not even one patch does."""
    patch = model.patchify.patch
    spatial = len(shape) - 2
    low, high = 0.0, 1.0
    best = None
    for _ in range(40):  # bisect the scale of height and width
        middle = (low + high) / 2
        candidate = tuple(shape[:spatial]) + tuple(
            max(p, int(s * middle) // p * p) for s, p in zip(shape[spatial:], patch[spatial:], strict=True)
        )
        if sampling_bytes(model, batch, candidate, guidance, steps=steps) <= budget:
            best, low = candidate, middle
        else:
            high = middle
    return best


def check_sampling_memory(
    model,
    batch: int,
    shape: Sequence[int],
    guidance: bool,
    device,
    argument: str = "size",
    steps: int = 0,
    per_batch: int = 1,
) -> None:
    """ValueError, with a size and a --num that fit, if sampling `batch` x `shape` in `steps` steps on
    `device` needs more than the free memory. per_batch: samples per --num (the rows of a grid)."""
    free = available_bytes(device)
    if free is None:
        return
    needed = sampling_bytes(model, batch, shape, guidance, steps=steps)
    budget = int(free * HEADROOM)
    if needed <= budget:
        return
    size = "x".join(map(str, shape))
    advice = []
    fewer = largest_fitting(batch, lambda n: sampling_bytes(model, n, shape, guidance, steps=steps), budget)
    if fewer // per_batch >= 1:
        advice.append(f"at most --num {fewer // per_batch} fits at this size")
    fitting = largest_fitting_shape(model, batch, shape, guidance, budget, steps)
    if fitting is not None and fitting != tuple(shape):
        advice.append(
            f"the largest {'x'.join(map(str, fitting))} at this aspect fits (--height {fitting[-2]} "
            f"--width {fitting[-1]})"
        )
    if steps_bytes(steps) > budget:
        advice.append(f"at most --steps {largest_fitting(steps, steps_bytes, budget)} fit")
    advice = "; or ".join(advice) or "sample fewer at once (--num) or on a device with more memory"
    raise ValueError(
        f"{argument}: sampling {batch} x {size} in {steps} steps needs about {_gib(needed)}, more than "
        f"the {_gib(free)} free on {torch.device(device).type}; {advice}"
    )


__all__ = [
    "HEADROOM",
    "available_bytes",
    "check_fits",
    "check_sampling_memory",
    "check_shuffle",
    "check_steps",
    "check_training_memory",
    "largest_fitting",
    "largest_fitting_shape",
    "sampling_bytes",
    "shuffle_bytes",
    "steps_bytes",
    "training_bytes",
]
