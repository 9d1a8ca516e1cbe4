"""Validation samples during training: every `validation_steps` the EMA weights sample the validation classes.

    sizes = validation_sizes(config)                 # [("1x", (h, w)), ("2x", (2h, 2w)), ...]
    images = validate(model, ema, config, output, step, device)  # PNGs written; {tag: [image, ...]} for trackers

Each size is sampled through the run's pipeline (`pipeline-config/`, extrapolation `auto` beyond the
trained size) from the same seeded noise, one sample per class (the first MAX_CLASSES classes; 4
samples without classes). The files go to `validation/step-NNNNNN/` (`1x.png`, `2x.png`, ...,
`grid.png`: a row per sample, a column per size), each written atomically. The sampling leaves the
training untouched: the weights are swapped back, the global generators restored.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from einops import rearrange

from ..dit.runs import PIPELINE_CONFIG, pipeline_from_config
from ..evaluation.calibrate import target_sizes
from ..memory import check_sampling_memory
from ..paths import write_atomically
from .outputs import save_sample_grid

VALIDATION = "validation"
MAX_CLASSES = 16  # one sample per class, of at most this many classes
UNCONDITIONAL_SAMPLES = 4


def scale_name(scale: float) -> str:
    """A size's name in files and tracker tags: 1 -> "1x", 1.5 -> "1.5x"."""
    return f"{scale:g}x"


def validation_sizes(config) -> list[tuple[str, tuple[int, ...]]]:
    """(name, sample shape) of each validation size: the first bucket ((h, w) or (t, h, w)), then each of
    `validation_scales` times its height and width, rounded to whole patches (frames kept). ValueError naming
    validation_scales for a scale that rounds to the trained size or to another's, or two that share a name."""
    bucket = config.buckets[0]
    sizes = [(scale_name(1), tuple(bucket.size))]
    patch = (config.patch_size, config.patch_size)
    scaled = target_sizes((bucket.height, bucket.width), patch, config.validation_scales, "validation_scales")
    for scale, (height, width) in scaled.items():
        named = next((name for name, _ in sizes if name == scale_name(scale)), None)
        if named is not None:  # distinct sizes whose scales print alike would overwrite one file
            raise ValueError(f"validation_scales: {scale!r} would be saved as {named}.png, as another size is")
        sizes.append((scale_name(scale), (*bucket.size[:-2], height, width)))
    return sizes


def validation_labels(model) -> list[int] | None:
    """The class ids sampled (None: an unconditional model, UNCONDITIONAL_SAMPLES samples)."""
    num_classes = getattr(model.config, "num_classes", 0) or 0
    return list(range(min(num_classes, MAX_CLASSES))) if num_classes else None


def inference_steps(config) -> int:
    """validation_num_inference_steps, or the final grid's sample_steps where it is not given."""
    return config.validation_num_inference_steps or config.sample_steps


def check_validation_memory(model, config, device) -> None:
    """Before any work: the largest validation size fits in memory (ValueError naming validation_scales)."""
    if not config.validation_steps:
        return
    labels = validation_labels(model)
    count = len(labels) if labels else UNCONDITIONAL_SAMPLES
    shape = max((shape for _, shape in validation_sizes(config)), key=math.prod)
    guidance = labels is not None and config.guidance_scale != 1.0
    check_sampling_memory(model, count, shape, guidance, device, "validation_scales", steps=inference_steps(config))


def _to_uint8(samples: torch.Tensor) -> torch.Tensor:
    """Samples in [-1, 1] -> uint8 of the same shape."""
    return ((samples.float().clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8).cpu()


def tracker_images(samples: torch.Tensor) -> list[np.ndarray]:
    """Samples (n, c, h, w) in [-1, 1] -> n (h, w, c) uint8 images; videos (n, c, t, h, w) -> their frames
    left to right, (h, t*w, c)."""
    pixels = _to_uint8(samples)
    pattern = "n c t h w -> n h (t w) c" if pixels.ndim == 5 else "n c h w -> n h w c"
    return list(rearrange(pixels, pattern).numpy())


def _grid(by_size: list[torch.Tensor]) -> torch.Tensor:
    """(n * sizes, c, H, W): sample by sample, each size resized (nearest) to the largest; a video's middle frame."""
    images = [s[:, :, s.shape[2] // 2] if s.ndim == 5 else s for s in by_size]
    height, width = max(i.shape[-2] for i in images), max(i.shape[-1] for i in images)
    images = [F.interpolate(i.float(), size=(height, width), mode="nearest") for i in images]
    return rearrange(torch.stack(images), "size n c h w -> (n size) c h w")


@torch.no_grad()
def validate(model, ema, config, output: Path, step: int, device) -> dict[str, list[np.ndarray]]:
    """Sample the validation sizes with the EMA weights (the raw ones without EMA) and write
    `validation/step-NNNNNN/`; returns the images by tracker tag ("validation/1x", ...). The model's
    weights, mode and RoPE settings and the global random generators are as before on return."""
    devices = [torch.device(device).index or 0] if torch.device(device).type == "cuda" else []
    was_training = model.training
    sizes = validation_sizes(config)
    if ema is not None:
        ema.store(model.parameters())
        ema.copy_to(model.parameters())
    try:
        with torch.random.fork_rng(devices=devices):
            pipe = pipeline_from_config(output / PIPELINE_CONFIG, model)
            pipe.set_progress_bar_config(disable=True)
            labels = validation_labels(model)
            by_size = []
            for _, shape in sizes:
                frames, (height, width) = (shape[0] if len(shape) == 3 else None), shape[-2:]
                result = pipe(
                    class_labels=labels,
                    height=height,
                    width=width,
                    num_frames=frames,
                    batch_size=UNCONDITIONAL_SAMPLES,
                    num_inference_steps=inference_steps(config),
                    guidance_scale=config.guidance_scale if labels else 1.0,
                    output_type="latent",
                    generator=torch.Generator().manual_seed(config.seed),
                    extrapolation="auto",
                )
                by_size.append(result.frames if result.images is None else result.images)
    finally:
        if ema is not None:
            ema.restore(model.parameters())
        model.train(was_training)
    folder = output / VALIDATION / f"step-{step:06d}"
    images = {}
    for (name, _), samples in zip(sizes, by_size, strict=True):
        per_row = samples.shape[0] if samples.ndim == 4 else 1  # images side by side; a video per row
        write_atomically(
            folder / f"{name}.png", lambda temporary, s=samples, r=per_row: save_sample_grid(s, temporary, r)
        )
        images[f"{VALIDATION}/{name}"] = tracker_images(samples)
    grid = _grid(by_size)
    write_atomically(folder / "grid.png", lambda temporary: save_sample_grid(grid, temporary, len(by_size)))
    return images
